// wjax-web.js: runs a program exported by wjax (`jax.export`, `Exported.to_web`) on WebGPU
// in a browser.  A plain ES module: no build step, no dependencies.
//
//   import { loadProgram } from "./wjax-web.js";
//   const prog = await loadProgram("./program.wjax");      // a URL, ArrayBuffer or bytes
//   const out = await prog.run({ x: new Float32Array(784) });   // or [x] in flat order
//   out["result"]                                            // a Float32Array
//
// The design, in the order of this file (docs/export.md is the reference):
//  1. parse():    the serialized program -- a 64-byte prefix (magic, version, sizes, SHA-256),
//                 a JSON header and the constant blobs (wjax/_src/export/serialization.py).
//  2. loadProgram(): an adapter and a device that meet the header's `requirements`.
//  3. Program:    one compute pipeline per WGSL kernel (explicit bind group layouts), the
//                 buffers (constants uploaded once, temps by slot, outputs fresh per run), and
//                 run(), which interprets the recorded operations exactly as `replay` in
//                 wjax/_src/backend/recorder.py does: dispatch, copy, loop / break_if_zero
//                 (a readback per test), switch (a readback of the branch index).
//  4. Values:     host values <-> the bytes of a buffer (the "storage" dtype: bool and small
//                 integers as 32-bit integers, bfloat16 as float32, float16 as 16 bits,
//                 complex64 as interleaved float32 pairs).
//
// Outputs come back as typed arrays in their dtype's natural JS type: float32 -> Float32Array,
// float16 and bfloat16 -> Float32Array (exact), int32/int16/int8 -> Int32Array/Int16Array/
// Int8Array, uint32/uint16/uint8 -> Uint32Array/Uint16Array/Uint8Array, bool -> Uint8Array of
// 0/1, complex64 -> Float32Array of interleaved (re, im) pairs (2 numbers per element).
// With run(inputs, {device: true}) they stay on the GPU as DeviceArray handles, which later
// runs (of this or another program on the same device) take as inputs with no copy.

export const FORMAT_VERSION = 1;
export const CALLING_CONVENTION_VERSION = 1;
const MAGIC = "WJAXEXP\0";
const PREFIX = 64;
const U = globalThis.GPUBufferUsage ?? {MAP_READ: 1, COPY_SRC: 4, COPY_DST: 8, UNIFORM: 64,
                                        STORAGE: 128, INDIRECT: 256};
const USAGE = U.STORAGE | U.UNIFORM | U.COPY_SRC | U.COPY_DST | U.INDIRECT;
const BREAK = Symbol("break");      // what a fired break_if_zero returns up to its loop

// ----------------------------------------------------------------------------- 1. parsing

/** The header (JSON) and constant blobs (Uint8Arrays) of a serialized program; an Error
 *  naming what is wrong with bytes that are not one (another file, a newer format, damage). */
export async function parse(bytes, {verify = true} = {}) {
  bytes = toBytes(bytes);
  const text = (a, b) => new TextDecoder().decode(bytes.subarray(a, b));
  if (bytes.length < PREFIX || text(0, 8) !== MAGIC)
    throw new Error("wjax-web: this file is not a wjax exported program (no 'WJAXEXP' " +
                    "header; did the server send an error page?)");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (version !== FORMAT_VERSION)
    throw new Error(`wjax-web: the program has serialization format version ${version}; ` +
                    `this wjax-web.js reads version ${FORMAT_VERSION} (export it again, or ` +
                    "use the wjax-web.js of the wjax that exported it)");
  const h = view.getUint32(12, true), b = Number(view.getBigUint64(16, true));
  if (bytes.length !== PREFIX + h + b)
    throw new Error(`wjax-web: the program is truncated or damaged (${bytes.length} bytes ` +
                    `where its header says ${PREFIX + h + b})`);
  if (verify && globalThis.crypto?.subtle) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes.subarray(PREFIX)));
    if (!digest.every((x, i) => x === bytes[32 + i]))
      throw new Error("wjax-web: the program is damaged (its SHA-256 checksum does not match)");
  }
  const header = JSON.parse(text(PREFIX, PREFIX + h));
  if (header.format !== "wjax.export")
    throw new Error(`wjax-web: unknown program format ${JSON.stringify(header.format)}`);
  const cc = header.calling_convention_version;
  if (cc !== CALLING_CONVENTION_VERSION)
    throw new Error(`wjax-web: the program has calling convention version ${cc}; this ` +
                    `wjax-web.js runs version ${CALLING_CONVENTION_VERSION}`);
  const base = PREFIX + h;
  const blobs = header.blobs.map(e => bytes.subarray(base + e.offset, base + e.offset + e.nbytes));
  return {header, blobs};
}

function toBytes(x) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  throw new TypeError("wjax-web: expected a URL, an ArrayBuffer or a Uint8Array");
}

async function fetchBytes(source) {
  if (typeof source !== "string" && !(source instanceof URL)) return toBytes(source);
  const resp = await fetch(source);
  if (!resp.ok) throw new Error(`wjax-web: could not fetch ${source}: HTTP ${resp.status}`);
  return new Uint8Array(await resp.arrayBuffer());
}

// ----------------------------------------------------------------------------- 2. device

// The WebGPU specification's default limits: a program asks for more only where it needs more.
const DEFAULT_LIMITS = {
  maxStorageBuffersPerShaderStage: 8, maxUniformBuffersPerShaderStage: 12,
  maxStorageBufferBindingSize: 134217728, maxUniformBufferBindingSize: 65536,
  maxBufferSize: 268435456, maxComputeWorkgroupsPerDimension: 65535,
  maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256,
};

/** What `requestDevice` must ask for to run a program with these requirements on `adapter`
 *  (or an Error naming each missing feature or limit, with the values). */
export function checkRequirements(req, adapter) {
  const missing = [], requiredFeatures = [], requiredLimits = {};
  for (const f of req.features ?? []) {
    if (adapter.features.has(f)) requiredFeatures.push(f);
    else missing.push(`the feature '${f}'` + (f === "shader-f16" ? " (float16 arithmetic)" : ""));
  }
  for (const [k, need] of Object.entries(req.limits ?? {})) {
    const have = adapter.limits[k];
    if (have === undefined) continue;
    if (need > have) missing.push(`${k} >= ${need} (this adapter has ${have})`);
    else if (need > (DEFAULT_LIMITS[k] ?? 0)) requiredLimits[k] = need;
  }
  if (missing.length)
    throw new Error("wjax-web: this GPU cannot run the program: it needs " +
                    missing.join(", and ") + ".");
  return {requiredFeatures, requiredLimits};
}

/** Loads a program: `source` is its URL (or an ArrayBuffer / Uint8Array of its bytes).
 *  options: `device` (a GPUDevice to share with other programs; it must meet the program's
 *  requirements), `adapterOptions` (for requestAdapter), `verify` (check the SHA-256,
 *  default true). */
export async function loadProgram(source, options = {}) {
  const {header, blobs} = await parse(await fetchBytes(source), options);
  let device = options.device;
  if (device) {
    checkRequirements(header.requirements, device);
  } else {
    const gpu = globalThis.navigator?.gpu;
    if (!gpu)
      throw new Error("WebGPU is not available in this browser (navigator.gpu is missing): " +
                      "use a recent Chrome, Edge or Safari, or Firefox with WebGPU enabled, " +
                      "and serve the page over https or from localhost");
    const adapter = await gpu.requestAdapter(options.adapterOptions);
    if (!adapter)
      throw new Error("WebGPU is not available in this browser: requestAdapter() found no " +
                      "GPU adapter (is hardware acceleration turned off?)");
    device = await adapter.requestDevice(checkRequirements(header.requirements, adapter));
  }
  const prog = new Program(header, blobs, device);
  await prog._compile();
  return prog;
}

// ----------------------------------------------------------------------------- 3. program

const BINDING = /@group\(0\)\s*@binding\((\d+)\)\s*var<(storage|uniform)(?:,\s*(read_write|read))?>/g;

function describe(aval, name) {
  const size = aval.shape.reduce((a, b) => a * b, 1);
  return {name, shape: aval.shape, dtype: aval.dtype, storage: aval.storage, size,
          nbytes: size * STORAGE[aval.storage].BYTES_PER_ELEMENT * (aval.storage === "complex64" ? 2 : 1)};
}

export class Program {
  constructor(header, blobs, device) {
    this.header = header;
    this.name = header.fun_name;
    this.device = device;
    this.requirements = header.requirements;
    this.inputs = header.in_avals.map((a, i) => describe(a, header.in_names[i]));
    this.outputs = header.out_avals.map((a, i) => describe(a, header.out_names[i]));
    this._p = header.program;
    this._blobs = blobs;
    this._queue = Promise.resolve();    // runs one at a time: they share the temps
  }

  async _compile() {
    const dev = this.device, p = this._p;
    dev.pushErrorScope("validation");
    this._pipelines = await Promise.all(p.kernels.map(async (code, k) => {
      const entries = [...code.matchAll(BINDING)].map(m => ({
        binding: Number(m[1]), visibility: GPUShaderStage.COMPUTE,
        buffer: {type: m[2] === "uniform" ? "uniform"
                       : m[3] === "read_write" ? "storage" : "read-only-storage"}}));
      const bgl = dev.createBindGroupLayout({entries});
      const layout = dev.createPipelineLayout({bindGroupLayouts: [bgl]});
      const module = dev.createShaderModule({code});
      try {
        return {pipeline: await dev.createComputePipelineAsync(
                    {layout, compute: {module, entryPoint: "main"}}), bgl};
      } catch (e) {
        const info = await module.getCompilationInfo();
        const msgs = info.messages.map(m => `${m.type} at ${m.lineNum}:${m.linePos}: ${m.message}`);
        throw new Error(`wjax-web: kernel ${k} of ${this.name} failed to compile: ` +
                        (msgs.join("\n") || e.message));
      }
    }));
    // buffers that live as long as the program: constants and the temps' slots
    this._slots = p.slots.map(s => dev.createBuffer({size: s.size, usage: USAGE}));
    this._consts = new Map();
    for (const [id, blob] of p.consts) {
      const buf = dev.createBuffer({size: p.buffers[id].size, usage: USAGE, mappedAtCreation: true});
      new Uint8Array(buf.getMappedRange()).set(this._blobs[blob]);
      buf.unmap();
      this._consts.set(id, buf);
    }
    this._inputBufs = this.inputs.map(() => null);   // reused upload buffers, one per input
    this._bindGroups = new WeakMap();                // dispatch op -> its last bind group
    await throwIfError(dev, `loading ${this.name}`);
  }

  /** Runs the program on `inputs`: an object keyed by input name (`prog.inputs[i].name`) or
   *  an array in flat order, of typed arrays, arrays, numbers or DeviceArrays.  Resolves to
   *  an object keyed by output name (`prog.outputs[i].name`): typed arrays, or DeviceArrays
   *  when `{device: true}`. */
  run(inputs = [], {device = false} = {}) {
    const go = () => this._run(inputs, device);
    const result = this._queue.then(go, go);
    this._queue = result.catch(() => {});
    return result;
  }

  async _run(inputs, keep) {
    const dev = this.device, p = this._p;
    const env = new Array(p.buffers.length);
    checkNames(inputs, this.inputs);
    this.inputs.forEach((d, i) => { env[p.inputs[i]] = this._inputBuffer(i, pick(inputs, d, i)); });
    const outs = [];
    p.buffers.forEach((b, i) => {
      if (b.kind === "const") env[i] = this._consts.get(i);
      else if (b.kind === "temp") env[i] = this._slots[b.slot];
      else if (b.kind === "output") outs.push(env[i] = dev.createBuffer({size: b.size, usage: USAGE}));
    });
    dev.pushErrorScope("validation");
    dev.pushErrorScope("out-of-memory");
    const ex = new Executor(this, env);
    try {
      await ex.ops(p.ops);
    } finally {
      ex.submit();
      await throwIfError(dev, `running ${this.name}`, 2);
    }
    const handles = p.outputs.map((id, i) => new DeviceArray(env[id], this.outputs[i], dev));
    const values = keep ? handles : await readAll(dev, handles, true);
    return Object.fromEntries(this.outputs.map((d, i) => [d.name, values[i]]));
  }

  /** The GPU buffer holding input `i` for this run: a DeviceArray's own buffer, or the
   *  input's upload buffer with `value` written into it. */
  _inputBuffer(i, value) {
    const d = this.inputs[i];
    if (value instanceof DeviceArray) {
      if (value.device !== this.device)
        throw new Error(`wjax-web: input '${d.name}' is a DeviceArray of another GPUDevice ` +
                        "(load both programs with the same `device` option)");
      if (value.dtype !== d.dtype || value.shape.join() !== d.shape.join())
        throw new Error(`wjax-web: input '${d.name}' expects ${d.dtype}[${d.shape}] and got a ` +
                        `DeviceArray of ${value.dtype}[${value.shape}]`);
      if (!value.buffer) throw new Error(`wjax-web: input '${d.name}' was destroyed`);
      return value.buffer;
    }
    const data = toStorage(value, d);
    let buf = this._inputBufs[i];
    if (!buf) buf = this._inputBufs[i] = this.device.createBuffer(
        {size: this._p.buffers[this._p.inputs[i]].size, usage: USAGE});
    writePadded(this.device, buf, data);
    return buf;
  }

  /** A host value for input `name` (or index) filled with `value`: the typed array `run`
   *  takes for it (ones(), zeros()). */
  full(name, value) {
    const d = typeof name === "number" ? this.inputs[name] : this.inputs.find(x => x.name === name);
    if (!d) throw new Error(`wjax-web: ${this.name} has no input ${JSON.stringify(name)}; its ` +
                            `inputs are ${this.inputs.map(x => x.name).join(", ")}`);
    const a = new (HOST[d.dtype])(d.size * (d.dtype === "complex64" ? 2 : 1));
    if (d.dtype === "complex64") for (let j = 0; j < a.length; j += 2) a[j] = value;
    else a.fill(value);
    return a;
  }
  ones(name) { return this.full(name, 1); }
  zeros(name) { return this.full(name, 0); }

  /** Frees the program's GPU buffers (not the device: it may be shared). */
  destroy() {
    for (const b of [...this._slots, ...this._consts.values(), ...this._inputBufs]) b?.destroy();
  }
}

function checkNames(inputs, descs) {
  if (Array.isArray(inputs)) {
    if (inputs.length !== descs.length)
      throw new Error(`wjax-web: expected ${descs.length} inputs (${descs.map(d => d.name)}) ` +
                      `and got an array of ${inputs.length}`);
  } else if (inputs && typeof inputs === "object") {
    const extra = Object.keys(inputs).filter(k => !descs.some(d => d.name === k));
    if (extra.length)
      throw new Error(`wjax-web: unknown input ${extra.map(k => `'${k}'`).join(", ")}; the ` +
                      `inputs are ${descs.map(d => `'${d.name}'`).join(", ")}`);
  } else {
    throw new TypeError("wjax-web: run() takes an object keyed by input name or an array");
  }
}

function pick(inputs, d, i) {
  const v = Array.isArray(inputs) ? inputs[i] : inputs?.[d.name];
  if (v === undefined)
    throw new Error(`wjax-web: missing input '${d.name}' (${d.dtype}[${d.shape}]); pass an ` +
                    "object keyed by the input names or an array in their order");
  return v;
}

async function throwIfError(dev, what, scopes = 1) {
  for (let s = 0; s < scopes; s++) {
    const err = await dev.popErrorScope();
    if (err) throw new Error(`wjax-web: WebGPU error while ${what}: ${err.message}`);
  }
}

/** Interprets recorded operations into command encoders; submits before each readback. */
class Executor {
  constructor(prog, env) {
    this.prog = prog; this.dev = prog.device; this.env = env;
    this.enc = null; this.pass = null;
  }
  encoder() { return this.enc ??= this.dev.createCommandEncoder(); }
  endPass() { this.pass?.end(); this.pass = null; }
  submit() {
    this.endPass();
    if (this.enc) this.dev.queue.submit([this.enc.finish()]);
    this.enc = null;
  }

  /** Runs `ops`; returns BREAK when a break_if_zero fired (for the enclosing loop). */
  async ops(ops) {
    const env = this.env;
    for (const op of ops) {
      switch (op.op) {
        case "dispatch": {
          this.pass ??= this.encoder().beginComputePass();
          this.pass.setPipeline(this.prog._pipelines[op.kernel].pipeline);
          this.pass.setBindGroup(0, this.bindGroup(op));
          if (op.indirect) this.pass.dispatchWorkgroupsIndirect(env[op.indirect[0]], op.indirect[1]);
          else this.pass.dispatchWorkgroups(...op.grid);
          break;
        }
        case "copy":
          if (op.nbytes) {
            this.endPass();
            this.encoder().copyBufferToBuffer(env[op.src], op.src_offset, env[op.dst],
                                              op.dst_offset, op.nbytes);
          }
          break;
        case "loop":
          while (await this.ops(op.body) !== BREAK) { /* the next pass */ }
          break;
        case "break_if_zero":
          if ((await this.readWord(env[op.buffer], op.offset)) === 0) return BREAK;
          break;
        case "switch": {
          const i = (await this.readWord(env[op.index], 0)) | 0;     // as an int32
          const n = op.branches.length;
          if (await this.ops(op.branches[Math.min(Math.max(i, 0), n - 1)]) === BREAK) return BREAK;
          break;
        }
        default:
          throw new Error(`wjax-web: unknown recorded operation ${JSON.stringify(op.op)}`);
      }
    }
  }

  bindGroup(op) {
    const bufs = op.buffers.map(i => this.env[i]);
    const cached = this.prog._bindGroups.get(op);
    if (cached && cached.bufs.every((b, i) => b === bufs[i])) return cached.bg;
    const entries = bufs.map((buffer, i) => {
      const r = op.ranges?.[i];
      return {binding: i, resource: r ? {buffer, offset: r[0], size: r[1]} : {buffer}};
    });
    const bg = this.dev.createBindGroup(
        {layout: this.prog._pipelines[op.kernel].bgl, entries});
    this.prog._bindGroups.set(op, {bufs, bg});
    return bg;
  }

  /** The u32 at `offset` in `buf`, once all work so far is done (a submit and a map). */
  async readWord(buf, offset) {
    const staging = this.dev.createBuffer({size: 4, usage: U.MAP_READ | U.COPY_DST});
    this.endPass();
    this.encoder().copyBufferToBuffer(buf, offset, staging, 0, 4);
    this.submit();
    await staging.mapAsync(GPUMapMode.READ);
    const word = new Uint32Array(staging.getMappedRange())[0];
    staging.destroy();
    return word;
  }
}

/** A value left on the GPU by run(..., {device: true}): pass it back as an input (no copy),
 *  `await read()` it to the host, `destroy()` it when done (each run makes fresh outputs). */
export class DeviceArray {
  constructor(buffer, desc, device) {
    this.buffer = buffer; this.device = device;
    this.name = desc.name; this.shape = desc.shape; this.dtype = desc.dtype;
    this.storage = desc.storage; this.size = desc.size; this.nbytes = desc.nbytes;
  }
  async read() { return (await readAll(this.device, [this], false))[0]; }
  destroy() { this.buffer?.destroy(); this.buffer = null; }
}

/** The host values of DeviceArrays: one submit, the maps in parallel. */
async function readAll(dev, arrays, destroy) {
  const enc = dev.createCommandEncoder();
  const staging = arrays.map(a => {
    const n = Math.max(4, Math.ceil(a.nbytes / 4) * 4);
    const s = dev.createBuffer({size: n, usage: U.MAP_READ | U.COPY_DST});
    if (!a.buffer) throw new Error(`wjax-web: '${a.name}' was destroyed`);
    enc.copyBufferToBuffer(a.buffer, 0, s, 0, n);
    return s;
  });
  dev.queue.submit([enc.finish()]);
  return Promise.all(staging.map(async (s, i) => {
    await s.mapAsync(GPUMapMode.READ);
    const value = fromStorage(s.getMappedRange().slice(0), arrays[i]);
    s.destroy();
    if (destroy) arrays[i].destroy();
    return value;
  }));
}

// ----------------------------------------------------------------------------- 4. values

const STORAGE = {float32: Float32Array, int32: Int32Array, uint32: Uint32Array,
                 float16: Uint16Array, complex64: Float32Array};
const HOST = {float32: Float32Array, float16: Float32Array, bfloat16: Float32Array,
              complex64: Float32Array, int32: Int32Array, int16: Int16Array, int8: Int8Array,
              uint32: Uint32Array, uint16: Uint16Array, uint8: Uint8Array, bool: Uint8Array};
// each dtype's value -> its storage element (numbers wrap or round as a cast to the dtype does)
const TO_STORAGE = {
  float32: Number, complex64: Number, float16: x => halfBits(Number(x)), bfloat16: roundBf16,
  int32: x => Number(x) | 0, int16: x => (Number(x) << 16) >> 16, int8: x => (Number(x) << 24) >> 24,
  uint32: x => Number(x) >>> 0, uint16: x => Number(x) & 0xffff, uint8: x => Number(x) & 0xff,
  bool: x => (x ? 1 : 0),
};

/** `value` (a typed array, a possibly nested array, a number or boolean) as the storage
 *  elements of input `d`, with its size checked. */
function toStorage(value, d) {
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    value = [value];
  else if (Array.isArray(value)) value = value.flat(Infinity);
  else if (!ArrayBuffer.isView(value))
    throw new TypeError(`wjax-web: input '${d.name}' must be a typed array, an array or a ` +
                        `number, not ${Object.prototype.toString.call(value)}`);
  const want = d.size * (d.dtype === "complex64" ? 2 : 1);
  if (value.length !== want)
    throw new Error(`wjax-web: input '${d.name}' expects ${d.dtype}[${d.shape}] (${want} ` +
                    `numbers${d.dtype === "complex64" ? ", (re, im) pairs" : ""}) and got ` +
                    `${value.length}`);
  const Storage = STORAGE[d.storage];
  const convert = TO_STORAGE[d.dtype];
  if (!Storage || !convert) throw new Error(`wjax-web: unsupported dtype ${d.dtype}`);
  if (value instanceof Storage && d.dtype === d.storage && d.dtype !== "float16") return value;
  const out = new Storage(value.length);
  for (let j = 0; j < value.length; j++) out[j] = convert(value[j]);
  return out;
}

/** Storage bytes of `d` -> its host typed array (see the top of this file). */
function fromStorage(bytes, d) {
  const n = d.size * (d.dtype === "complex64" ? 2 : 1);
  const stored = new STORAGE[d.storage](bytes, 0, n);
  if (d.dtype === "float16") return Float32Array.from(stored, halfToFloat);
  const Host = HOST[d.dtype];
  return stored instanceof Host ? stored : Host.from(stored);
}

function writePadded(device, buf, data) {
  let bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length % 4) { const p = new Uint8Array(Math.ceil(bytes.length / 4) * 4); p.set(bytes); bytes = p; }
  if (bytes.length) device.queue.writeBuffer(buf, 0, bytes);
}

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

/** The float16 bits nearest to `x` (ties to even; overflow to infinity). */
export function halfBits(x) {
  f32[0] = x;
  const b = u32[0], sign = (b >>> 16) & 0x8000, exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 112;                          // the float16 exponent field
  if (e >= 0x1f) return sign | 0x7c00;
  let shift = 13, h;
  if (e <= 0) {                                 // subnormal (or zero)
    if (e < -10) return sign;
    mant |= 0x800000; shift = 14 - e; h = 0;
  } else {
    h = e << 10;
  }
  h += mant >>> shift;
  const rem = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
  if (rem > half || (rem === half && (h & 1))) h += 1;   // may carry into the exponent: right
  return sign | h;
}

export function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** `x` rounded to bfloat16 (to nearest even), as the float32 a bfloat16 buffer holds. */
function roundBf16(x) {
  f32[0] = Number(x);
  if (Number.isNaN(f32[0])) return NaN;
  const b = u32[0];
  u32[0] = (b + 0x7fff + ((b >>> 16) & 1)) & 0xffff0000;
  return f32[0];
}
