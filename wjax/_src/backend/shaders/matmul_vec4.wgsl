// C[b] = A[b] (M x K) * B[b] (K x N, rows of vec4s), f32, N % 4 == 0 (or padded): A's rows
// or its contraction contiguous, the other at a stride, B's rows at a stride, the batches
// of both at any offsets (abase, bbase: a (b, s, h, d) tensor's heads read in place).
// Each thread owns an RM x (4*V) block of C held in RM*V vec4 registers and streams
// A (scalars) and B (vec4 rows) straight from global memory: on CPU adapters this
// register blocking beats workgroup-memory tiles (DESIGN.md).  The register block is
// unrolled by wjax/_src/prims/dot.py.
{{HEADER}}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let tiles_n = ({{N4}}u + {{V}}u - 1u) / {{V}}u;          // in vec4 columns
  let tiles_m = ({{M}}u + {{RM}}u - 1u) / {{RM}}u;
  let t = (wid.x + wid.y * {{NX}}u) * {{WG}}u + lid;
  if (t >= tiles_n * tiles_m * {{BS}}u) { return; }
  // bb = split * B + batch: a long contraction is cut into chunks of KC (lavapipe stops an
  // invocation after 65535 loop iterations), each chunk's partial product stored apart
  let bb = t / (tiles_n * tiles_m);
  let b = bb % {{B}}u;
  let ks = (bb / {{B}}u) * {{KC}}u;
  let ke = min(ks + {{KC}}u, {{K}}u);
  let r = t % (tiles_n * tiles_m);
  let m0 = (r / tiles_n) * {{RM}}u;
  let n0 = (r % tiles_n) * {{V}}u;                           // vec4 column index
  let abase = {{ABASE}};                                    // in elements
  let bbase = {{BBASE}};                                    // in vec4s
{{DECL}}
  for (var k = ks; k < ke; k = k + 1u) {
{{LOAD_B}}
{{FMA}}
  }
{{STORE}}
}
