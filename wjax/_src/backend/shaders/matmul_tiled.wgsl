// C[b] = A[b] (M x K) * B[b] (K x N), f32, row-major: the classic GPU kernel.  A 16x16
// workgroup computes a 64x64 tile of C, each thread a 4x4 block in registers; the K loop
// walks 16-deep slabs of A and B staged through workgroup memory (each thread loads 4+4
// elements per slab, zero-filled outside the matrices).  Chosen on GPU adapters, where
// workgroup memory is fast; CPU adapters use matmul_vec4.wgsl (see wjax/_src/prims/dot.py).
{{HEADER}}
var<workgroup> As: array<array<f32, 16>, 64>;
var<workgroup> Bs: array<array<f32, 64>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let tiles_n = ({{N}}u + 63u) / 64u;
  let tiles_m = ({{M}}u + 63u) / 64u;
  let g = wid.x + wid.y * {{NX}}u;
  if (g >= tiles_n * tiles_m * {{B}}u) { return; }   // uniform per workgroup: barriers stay safe
  let b = g / (tiles_n * tiles_m);
  let r = g % (tiles_n * tiles_m);
  let tm = (r / tiles_n) * 64u;
  let tn = (r % tiles_n) * 64u;
  let abase = b * {{M}}u * {{K}}u;
  let bbase = b * {{K}}u * {{N}}u;
  var acc: array<array<f32, 4>, 4>;
  for (var k0 = 0u; k0 < {{K}}u; k0 = k0 + 16u) {
    for (var q = 0u; q < 4u; q = q + 1u) {
      let e = li * 4u + q;            // 0..1023
      let ar = e / 16u;               // A slab: 64 rows x 16
      let ac = e % 16u;
      let am = tm + ar;
      let ak = k0 + ac;
      As[ar][ac] = select(0.0, {{A_NAME}}[abase + min(am, {{M}}u - 1u) * {{K}}u + min(ak, {{K}}u - 1u)],
                          am < {{M}}u && ak < {{K}}u);
      let br = e / 64u;               // B slab: 16 rows x 64
      let bc = e % 64u;
      let bk = k0 + br;
      let bn = tn + bc;
      Bs[br][bc] = select(0.0, {{B_NAME}}[bbase + min(bk, {{K}}u - 1u) * {{N}}u + min(bn, {{N}}u - 1u)],
                          bk < {{K}}u && bn < {{N}}u);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      var a: array<f32, 4>;
      var bv: array<f32, 4>;
      for (var i = 0u; i < 4u; i = i + 1u) { a[i] = As[lid.y * 4u + i][kk]; }
      for (var j = 0u; j < 4u; j = j + 1u) { bv[j] = Bs[kk][lid.x * 4u + j]; }
      for (var i = 0u; i < 4u; i = i + 1u) {
        for (var j = 0u; j < 4u; j = j + 1u) { acc[i][j] = fma(a[i], bv[j], acc[i][j]); }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i = i + 1u) {
    for (var j = 0u; j < 4u; j = j + 1u) {
      let m = tm + lid.y * 4u + i;
      let n = tn + lid.x * 4u + j;
      if (m < {{M}}u && n < {{N}}u) {
        let o = (b * {{M}}u + m) * {{N}}u + n;
        let val = acc[i][j];
        {{C_NAME}}[o] = val;
{{EPILOGUE}}
      }
    }
  }
}
