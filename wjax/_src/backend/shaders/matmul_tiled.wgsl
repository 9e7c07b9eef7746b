// C[b] = A[b] (M x K) * B[b] (K x N), f32: the GPU kernel.  A workgroup of TY x TX threads
// computes a BM x BN tile of C, each thread a TM x TN block held in vec4 registers; the
// contraction walks BK-deep slabs of A and B staged through workgroup memory (As: k-major
// columns of A as vec4 of 4 rows, Bs: rows of B as vec4 of 4 columns), the next slab's
// global loads issued before the current slab's products (register double buffering).  A
// thread's rows are the vec4 row groups ty, ty + TY, ...; its columns the vec4 column groups
// tx, tx + TX, ...: neighbouring threads read neighbouring vec4s of workgroup memory.
// Operands may be stored rows-first ([B, M, K] / [B, N, K]) or k-first ([B, K, M] / [B, K, N]),
// their rows any stride apart and their batches at any offsets (abase, bbase: a (b, s, h, d)
// tensor's heads read in place), read as vec4 along their contiguous axis where it, the
// stride and the offsets are multiples of 4; an operand computed by fused producers (an MLP
// layer's relu(h + b), a convolution's patches: implicit GEMM) or laid out otherwise is read
// element by element through its reader function (READERS).
// The contraction may be split S ways (split-K): split s walks [s KC, (s + 1) KC) and stores
// its partial product apart (a second kernel sums them); and within the workgroup KG ways
// (``MMConfig.kg``, the lines at GROUP): KG x WG threads, group grp walking
// [ks + grp KCG, ...) through slabs of its own (As[ga + ..], Bs[gb + ..]) in a loop of the
// same length for every group (its barriers in uniform control flow), the groups'
// accumulators then summed through the slabs' memory by group 0, which alone stores.  The
// loads, products and stores are unrolled by wjax/_src/prims/dot.py (``_tiled_src``); the
// contraction loop is matmul_tiled_loop.wgsl, or matmul_tiled_db.wgsl (workgroup memory
// twice over: one barrier a slab).
{{HEADER}}
{{READERS}}var<workgroup> As: array<vec4<f32>, {{AS_ALL}}>;
var<workgroup> Bs: array<vec4<f32>, {{BS_ALL}}>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) {{LID}}: u32) {
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
{{GROUP}}  let tx = lid % {{TX}}u;
  let ty = lid / {{TX}}u;
  let abase = {{ABASE}};
  let bbase = {{BBASE}};
{{DECL}}
{{LOAD}}
{{KLOOP}}
{{STORE}}
}
