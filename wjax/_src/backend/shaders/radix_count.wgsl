// LSD radix sort (GPU form), one pass's count: workgroup g counts the digits of tile g of
// the rows (KT = WG x E consecutive elements of one row), reading the tile coalesced (element
// e * WG + t by thread t), and writes the sixteen counts digit-major, [row][digit][tile],
// for radix_scan.wgsl.  Each thread keeps sixteen 8-bit counters in a vec4<u32> and adds the
// nonzero ones to the workgroup's.  Filled in by wjax/_src/prims/sort.py (_TileRadixSort).
{{HEADER}}
var<workgroup> tot: array<atomic<u32>, {{DIGITS}}>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * {{NX}}u;
  if (g >= {{GROUPS}}u) { return; }
  let row = g / {{NT}}u;
  let tile = g % {{NT}}u;
  if (lid < {{DIGITS}}u) { atomicStore(&tot[lid], 0u); }
  workgroupBarrier();
  let tb = tile * {{KT}}u;
  let cnt = min({{KT}}u, {{N}}u - tb);
  let kbase = row * {{N}}u + tb;
  var h = vec4<u32>(0u);
  for (var e = 0u; e < {{E}}u; e = e + 1u) {
    let q = e * {{WG}}u + lid;
    if (q < cnt) {
      let d = ({{KIN}}[kbase + q] >> {{SHIFT}}u) & {{MASK}}u;
      h = h + {{ONEHOT}};
    }
  }
{{ADD}}
  workgroupBarrier();
  if (lid < {{DIGITS}}u) {
    {{SUMS}}[row * {{M}}u + lid * {{NT}}u + tile] = atomicLoad(&tot[lid]);
  }
}
