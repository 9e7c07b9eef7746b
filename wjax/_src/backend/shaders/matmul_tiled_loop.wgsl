// The contraction loop of shaders/matmul_tiled.wgsl: stage the slab in registers into
// workgroup memory, load the next slab's registers, multiply out the staged one.
  for (var k0 = ks; k0 < {{KEND}}; k0 = k0 + {{BK}}u) {
{{STAGE}}
    workgroupBarrier();
    let k1 = k0{{GOFF}} + {{BK}}u;
{{LOAD_NEXT}}
    for (var kk = 0u; kk < {{BK}}u; kk = kk + 1u) {
{{FMA}}
    }
    workgroupBarrier();
  }
