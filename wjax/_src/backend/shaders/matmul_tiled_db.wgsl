// The tiled matmul of shaders/matmul_tiled.wgsl with its workgroup memory twice over (double
// buffering): slab k is multiplied out of one half while slab k + 1, loaded into registers
// before, is staged into the other, so a slab costs one barrier instead of two.  A half is
// written only after the barrier that ends the products reading it (the previous slab's).
// Chosen by the autotuner where it measures faster (prims/dot.py, ``MMConfig.db``).
{{HEADER}}
var<workgroup> As: array<vec4<f32>, {{AS2}}>;
var<workgroup> Bs: array<vec4<f32>, {{BS2}}>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let tiles_n = ({{N}}u + {{BN}}u - 1u) / {{BN}}u;
  let tiles_m = ({{M}}u + {{BM}}u - 1u) / {{BM}}u;
  let g = wid.x + wid.y * {{NX}}u;
  if (g >= tiles_n * tiles_m * {{BSPLIT}}u) { return; }   // uniform per workgroup: barriers stay safe
  let bb = g / (tiles_n * tiles_m);              // split * B + batch
  let b = bb % {{B}}u;
  let ks = (bb / {{B}}u) * {{KC}}u;
  let ke = min(ks + {{KC}}u, {{K}}u);
  let r = g % (tiles_n * tiles_m);
  let tm = (r / tiles_n) * {{BM}}u;
  let tn = (r % tiles_n) * {{BN}}u;
  let tx = lid % {{TX}}u;
  let ty = lid / {{TX}}u;
  let abase = b * {{M}}u * {{K}}u;
  let bbase = b * {{K}}u * {{N}}u;
{{DECL}}
{{LOAD}}
  let na = 0u;
  let nb = 0u;
{{STAGE}}
  workgroupBarrier();
  var cur = 0u;
  for (var k0 = ks; k0 < ke; k0 = k0 + {{BK}}u) {
    let k1 = k0 + {{BK}}u;
{{LOAD_NEXT}}
    let oa = cur * {{AS}}u;
    let ob = cur * {{BS}}u;
    for (var kk = 0u; kk < {{BK}}u; kk = kk + 1u) {
{{FMA}}
    }
    {
      let na = (1u - cur) * {{AS}}u;
      let nb = (1u - cur) * {{BS}}u;
{{STAGE}}
    }
    workgroupBarrier();
    cur = 1u - cur;
  }
{{STORE}}
}
