// Reduction of a [M, N] iteration space (M outputs, N reduced elements each) in
// `parts` slices.  Workgroup g handles output g / PARTS, slice g % PARTS; each
// of its WG threads folds its share of the slice sequentially (contiguous
// chunks on CPU adapters, strided on GPUs), then the workgroup folds the WG
// partial states as a tree in workgroup memory.  Placeholders in {{...}} are
// filled by wjax/_src/prims/reduce.py.
{{HEADER}}
var<workgroup> sv: array<{{STATE}}, {{WG}}>;
{{EXTRA_SHARED}}

fn combine(a: {{STATE}}, b: {{STATE}}) -> {{STATE}} {
{{COMBINE}}
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * {{NX}}u;
  if (g >= {{GROUPS}}u) { return; }
  let o = g / {{PARTS}}u;
  let part = g % {{PARTS}}u;
  let lo = part * {{SLICE}}u;
  let hi = min(lo + {{SLICE}}u, {{N}}u);
  var acc: {{STATE}} = {{IDENTITY}};
  {{LOOP}}
  sv[lid] = acc;
  workgroupBarrier();
  for (var s = {{WG}}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { sv[lid] = combine(sv[lid], sv[lid + s]); }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let res = sv[0];
{{WRITE}}
  }
}
