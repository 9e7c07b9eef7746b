// Batched matmul C[b, m, n] = sum_k A(b, m, k) * B(b, k, n), register-blocked:
// each thread owns an RM x RN block of C and streams A and B straight from
// global memory (fastest on lavapipe, see DESIGN.md).  rdA/rdB are generated
// from the operands' layouts (and any fused producers) by wjax/_src/prims/dot.py.
{{HEADER}}

fn rdA(b: u32, m: u32, k: u32) -> {{ACC}} {
{{READ_A}}
}

fn rdB(b: u32, k: u32, n: u32) -> {{ACC}} {
{{READ_B}}
}

@compute @workgroup_size({{WX}}, {{WY}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let tiles_n = ({{N}}u + {{TN}}u - 1u) / {{TN}}u;
  let tiles_m = ({{M}}u + {{TM}}u - 1u) / {{TM}}u;
  let g = wid.x + wid.y * {{NX}}u;
  if (g >= tiles_n * tiles_m * {{B}}u) { return; }
  let b = g / (tiles_n * tiles_m);
  let t = g % (tiles_n * tiles_m);
  let m0 = (t / tiles_n) * {{TM}}u + lid.y * {{RM}}u;
  let n0 = (t % tiles_n) * {{TN}}u + lid.x * {{RN}}u;
  var acc: array<array<{{ACC}}, {{RN}}>, {{RM}}>;
  for (var k = 0u; k < {{K}}u; k = k + 1u) {
    var a: array<{{ACC}}, {{RM}}>;
    var bb: array<{{ACC}}, {{RN}}>;
    for (var i = 0u; i < {{RM}}u; i = i + 1u) { a[i] = rdA(b, min(m0 + i, {{M}}u - 1u), k); }
    for (var j = 0u; j < {{RN}}u; j = j + 1u) { bb[j] = rdB(b, k, min(n0 + j, {{N}}u - 1u)); }
    for (var i = 0u; i < {{RM}}u; i = i + 1u) {
      for (var j = 0u; j < {{RN}}u; j = j + 1u) { acc[i][j] = acc[i][j] + {{MUL}}; }
    }
  }
  for (var i = 0u; i < {{RM}}u; i = i + 1u) {
    for (var j = 0u; j < {{RN}}u; j = j + 1u) {
      let m = m0 + i;
      let n = n0 + j;
      if (m < {{M}}u && n < {{N}}u) {
        let o = (b * {{M}}u + m) * {{N}}u + n;
        let v = acc[i][j];
{{WRITE}}
      }
    }
  }
}
