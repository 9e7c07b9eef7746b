// Bitonic sort stages that stay inside blocks of B elements, in workgroup memory.
// Rows of P (a power of two) sort keys (NK u32 words, compared lexicographically,
// then the u32 position word, which makes the sort stable) lie one after the
// other; workgroup g handles elements [g * B, (g + 1) * B), which is part of one
// row (P > B) or several whole rows (P <= B).  For every k in KSTART..KEND
// (powers of two) it runs the compare-exchange steps j = JINIT, JINIT/2, ..., 1;
// the direction comes from bit k of the element's position in its row (k = P,
// the last merge, is ascending).  A full local sort is KSTART=2, KEND=min(B, P),
// JINIT=k/2; the tail of a global merge step is KSTART=KEND=k, JINIT=B/2.
// Filled in by wjax/_src/prims/sort.py.
{{HEADER}}
{{SHARED}}

@compute @workgroup_size({{T}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * {{NX}}u;
  if (g >= {{GROUPS}}u) { return; }
  let base = g * {{B}}u;
  for (var q = lid; q < {{B}}u; q = q + {{T}}u) {
{{LOAD}}
  }
  workgroupBarrier();
  for (var k = {{KSTART}}u; k <= {{KEND}}u; k = k * 2u) {
    var j = {{JINIT}};
    loop {
      if (j == 0u) { break; }
      for (var t = lid; t < {{HALF}}u; t = t + {{T}}u) {
        let i = (t / j) * 2u * j + (t % j);
        let l = i + j;
        let up = ((base + i) & k & {{PM1}}u) == 0u;
{{CE}}
      }
      workgroupBarrier();
      j = j / 2u;
    }
  }
  for (var q = lid; q < {{B}}u; q = q + {{T}}u) {
{{STORE}}
  }
}
