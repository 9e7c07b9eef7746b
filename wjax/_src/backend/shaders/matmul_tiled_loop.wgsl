// The contraction loop of shaders/matmul_tiled.wgsl: stage the slab in registers into
// workgroup memory, load the next slab's registers, multiply out the staged one (its BK steps
// written out, kk a constant in each: an H200 ran 4096^2 products 13% faster so).
  for (var k0 = ks; k0 < {{KEND}}; k0 = k0 + {{BK}}u) {
{{STAGE}}
    workgroupBarrier();
    let k1 = k0{{GOFF}} + {{BK}}u;
{{LOAD_NEXT}}
{{FMA}}
    workgroupBarrier();
  }
