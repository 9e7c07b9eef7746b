// LSD radix sort (GPU form), one pass's scatter: workgroup g moves tile g of the rows (KT =
// WG x E consecutive elements of one row) to its places in the sorted row.
//   1. Thread t takes the tile's elements t * E .. t * E + E - 1 (in order: the sort is
//      stable), their digits and its sixteen counts (16-bit fields of two vec4s, lo and hi).
//   2. A prefix sum of the counts over the threads (workgroup memory, word-major) gives,
//      with the tile's digit starts, where each of the thread's digits starts in the tile;
//      each element's tile position goes into a permutation (the upper half of sh).
//   3. The workgroup writes the tile out in that order, element j by thread j % WG: the
//      elements of one digit go to consecutive places of the sorted row (the row's elements
//      of smaller digits, TOT, plus the digit's elements in earlier tiles, from
//      radix_scan.wgsl, plus j less the digit's start in the tile), so
//      neighbouring threads write neighbouring words.
// Filled in by wjax/_src/prims/sort.py (_TileRadixSort).
{{HEADER}}
var<workgroup> sh: array<u32, {{SH}}>;

// field d of the 16-bit counters (digit d: word d / 4 of lo for even d, of hi for odd d;
// its low half for d % 4 < 2)
fn wj_rx_field(lo: vec4<u32>, hi: vec4<u32>, d: u32) -> u32 {
  let w = select(vec4<u32>(0u), select(lo, hi, (d & 1u) == 1u),
                 vec4<u32>(d >> 2u) == vec4<u32>(0u, 1u, 2u, 3u));
  return ((w.x | w.y | w.z | w.w) >> ((d & 2u) * 8u)) & 0xffffu;
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * {{NX}}u;
  if (g >= {{GROUPS}}u) { return; }
  let row = g / {{NT}}u;
  let tile = g % {{NT}}u;
  let tb = tile * {{KT}}u;
  let cnt = min({{KT}}u, {{N}}u - tb);
  let kbase = row * {{N}}u + tb;
  var dig = 0u;
  var h = vec4<u32>(0u);
  for (var e = 0u; e < {{E}}u; e = e + 1u) {
    let q = lid * {{E}}u + e;
    if (q < cnt) {
      let d = ({{KIN}}[kbase + q] >> {{SHIFT}}u) & {{MASK}}u;
      dig = dig | (d << (4u * e));
      h = h + {{ONEHOT}};
    }
  }
  let lo = h & vec4<u32>(0x00ff00ffu);
  let hi = (h >> vec4<u32>(8u)) & vec4<u32>(0x00ff00ffu);
  for (var w = 0u; w < 4u; w = w + 1u) {
    sh[w * {{WG}}u + lid] = lo[w];
    sh[(w + 4u) * {{WG}}u + lid] = hi[w];
  }
  for (var o = 1u; o < {{WG}}u; o = o * 2u) {
    workgroupBarrier();
    var a = vec4<u32>(0u);
    var b = vec4<u32>(0u);
    if (lid >= o) {
      for (var w = 0u; w < 4u; w = w + 1u) {
        a[w] = sh[w * {{WG}}u + lid - o];
        b[w] = sh[(w + 4u) * {{WG}}u + lid - o];
      }
    }
    workgroupBarrier();
    for (var w = 0u; w < 4u; w = w + 1u) {
      sh[w * {{WG}}u + lid] = sh[w * {{WG}}u + lid] + a[w];
      sh[(w + 4u) * {{WG}}u + lid] = sh[(w + 4u) * {{WG}}u + lid] + b[w];
    }
  }
  workgroupBarrier();
  var ilo = vec4<u32>(0u);      // inclusive sums of this thread's counts
  var ihi = vec4<u32>(0u);
  var tlo = vec4<u32>(0u);      // the tile's counts
  var thi = vec4<u32>(0u);
  for (var w = 0u; w < 4u; w = w + 1u) {
    ilo[w] = sh[w * {{WG}}u + lid];
    ihi[w] = sh[(w + 4u) * {{WG}}u + lid];
    tlo[w] = sh[w * {{WG}}u + {{WG}}u - 1u];
    thi[w] = sh[(w + 4u) * {{WG}}u + {{WG}}u - 1u];
  }
{{STARTS}}
  var olo = slo + ilo - lo;     // where this thread's next element of each digit goes
  var ohi = shi + ihi - hi;
  var gbase = 0u;               // digit lid's start in the row less its start in the tile
  if (lid < {{DIGITS}}u) {
    var ds = 0u;                // the row's elements of smaller digits
    for (var d = 0u; d < lid; d = d + 1u) { ds = ds + {{TOT}}[row * {{DIGITS}}u + d]; }
    gbase = {{SUMS}}[row * {{M}}u + lid * {{NT}}u + tile] + ds - wj_rx_field(slo, shi, lid);
  }
  workgroupBarrier();
  for (var e = 0u; e < {{E}}u; e = e + 1u) {
    let q = lid * {{E}}u + e;
    if (q < cnt) {
      let d = (dig >> (4u * e)) & 15u;
      sh[{{KT}}u + wj_rx_field(olo, ohi, d)] = q | (d << 16u);
      let inc = select(vec4<u32>(0u), vec4<u32>(1u << ((d & 2u) * 8u)),
                       vec4<u32>(d >> 2u) == vec4<u32>(0u, 1u, 2u, 3u));
      let odd = (d & 1u) == 1u;
      olo = olo + select(inc, vec4<u32>(0u), odd);
      ohi = ohi + select(vec4<u32>(0u), inc, odd);
    }
  }
  if (lid < {{DIGITS}}u) { sh[lid] = gbase; }
  workgroupBarrier();
  for (var e = 0u; e < {{E}}u; e = e + 1u) {
    let j = e * {{WG}}u + lid;
    if (j < cnt) {
      let p = sh[{{KT}}u + j];
      let sp = p & 0xffffu;
      let to = row * {{N}}u + sh[p >> 16u] + j;
      let at = kbase + sp;{{MOVES}}
    }
  }
}
