// lax.cond / lax.switch picked on the device: reads the branch index, clamps it to
// [0, LAST] like lax.switch, and writes the indirect dispatch arguments of every kernel
// (slot s) of every branch: the table's workgroup counts for the chosen branch's
// kernels, zero workgroups for the others.  tab[4s..4s+3] = (gx, gy, gz, branch).
@group(0) @binding(0) var<storage, read> idx: array<i32>;
@group(0) @binding(1) var<storage, read> tab: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let s = gid.x;
  if (s >= {{SLOTS}}u) { return; }
  let on = tab[4u * s + 3u] == u32(clamp(idx[0], 0, {{LAST}}));
  for (var k = 0u; k < 3u; k = k + 1u) {
    args[3u * s + k] = select(0u, tab[4u * s + k], on);
  }
}
