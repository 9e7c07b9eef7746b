// LSD radix sort, one pass's scan: the per-(digit, superblock) counts of each row (M of
// them, digit-major: [digit][superblock]) become their exclusive prefix sums, in place,
// so each entry is where that digit's elements of that superblock start in the sorted
// row.  One workgroup per row: each thread sums a contiguous slice, thread 0 scans the
// slice totals, each thread rewrites its slice.  Filled in by wjax/_src/prims/sort.py.
{{HEADER}}
var<workgroup> part: array<u32, {{T}}>;

@compute @workgroup_size({{T}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * {{NX}}u;
  if (row >= {{ROWS}}u) { return; }
  let base = row * {{M}}u;
  let lo = min(lid * {{PER}}u, {{M}}u);
  let hi = min(lo + {{PER}}u, {{M}}u);
  var s = 0u;
  for (var j = lo; j < hi; j = j + 1u) { s = s + {{BUF}}[base + j]; }
  part[lid] = s;
  workgroupBarrier();
  if (lid == 0u) {
    var acc = 0u;
    for (var t = 0u; t < {{T}}u; t = t + 1u) { let v = part[t]; part[t] = acc; acc = acc + v; }
  }
  workgroupBarrier();
  var acc = part[lid];
  for (var j = lo; j < hi; j = j + 1u) {
    let v = {{BUF}}[base + j];
    {{BUF}}[base + j] = acc;
    acc = acc + v;
  }
}
