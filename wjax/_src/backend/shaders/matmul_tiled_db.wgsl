// The contraction loop of shaders/matmul_tiled.wgsl with its workgroup memory twice over
// (double buffering): slab k is multiplied out of one half while slab k + 1, loaded into registers
// before, is staged into the other, so a slab costs one barrier instead of two.  A half is
// written only after the barrier that ends the products reading it (the previous slab's).
// Chosen by the autotuner where it measures faster (prims/dot.py, ``MMConfig.db``).
  let na = 0u;
  let nb = 0u;
{{STAGE}}
  workgroupBarrier();
  var cur = 0u;
  for (var k0 = ks; k0 < {{KEND}}; k0 = k0 + {{BK}}u) {
    let k1 = k0{{GOFF}} + {{BK}}u;
{{LOAD_NEXT}}
    let oa = cur * {{AS}}u;
    let ob = cur * {{BS}}u;
{{FMA}}
    {
      let na = (1u - cur) * {{AS}}u;
      let nb = (1u - cur) * {{BS}}u;
{{STAGE}}
    }
    workgroupBarrier();
    cur = 1u - cur;
  }
