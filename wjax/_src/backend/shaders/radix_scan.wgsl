// LSD radix sort, one pass's scan: segments of M per-(digit, block) counts become their
// exclusive prefix sums, in place.  A segment is a row's counts, digit-major ([digit]
// [block]: each entry becomes where that digit's elements of that block start in the
// sorted row), or one digit's counts of a row (each entry becomes where the block's
// elements of that digit start among the row's, and TOTAL keeps the digit's count).  One
// workgroup per segment: each thread sums a contiguous slice, thread 0 scans the slice
// totals, each thread rewrites its slice.  Filled in by wjax/_src/prims/sort.py.
{{HEADER}}
var<workgroup> part: array<u32, {{T}}>;

@compute @workgroup_size({{T}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * {{NX}}u;
  if (row >= {{ROWS}}u) { return; }
  let base = row * {{M}}u;
  let lo = min(lid * {{PER}}u, {{M}}u);
  let hi = min(lo + {{PER}}u, {{M}}u);
  var s = 0u;
  for (var j = lo; j < hi; j = j + 1u) { s = s + {{BUF}}[base + j]; }
  part[lid] = s;
  workgroupBarrier();
  if (lid == 0u) {
    var acc = 0u;
    for (var t = 0u; t < {{T}}u; t = t + 1u) { let v = part[t]; part[t] = acc; acc = acc + v; }{{TOTAL}}
  }
  workgroupBarrier();
  var acc = part[lid];
  for (var j = lo; j < hi; j = j + 1u) {
    let v = {{BUF}}[base + j];
    {{BUF}}[base + j] = acc;
    acc = acc + v;
  }
}
