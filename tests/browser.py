"""A headless Chromium for tests: pages served from a directory by a loopback HTTP server, the
browser driven over the DevTools protocol on a pipe (no WebSocket library needed).

``Browser(root)`` starts both; ``run_module(path)`` opens ``harness.html`` (written into
``root``), which imports the JS module at ``path`` (relative to ``root``), awaits its default
export and POSTs what it resolves to -- or the error it throws -- back to the server as JSON
(typed arrays as base64 bytes with their type).  ``navigate``, ``evaluate`` and ``screenshot``
drive ordinary pages.  Every wait has a timeout; ``close`` kills the browser.

Chromium runs WebGPU headless on SwiftShader (its CPU Vulkan) with the flags in ``FLAGS``.
"""
from __future__ import annotations

import base64
import functools
import http.server
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

import numpy as np

FLAGS = ["--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan",
         "--use-vulkan=native", "--disable-gpu-sandbox", "--enable-unsafe-swiftshader",
         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
         "--hide-scrollbars", "--mute-audio", "--window-size=800,600"]

_TYPED = {"Float32Array": np.float32, "Float64Array": np.float64, "Int32Array": np.int32,
          "Uint32Array": np.uint32, "Int16Array": np.int16, "Uint16Array": np.uint16,
          "Int8Array": np.int8, "Uint8Array": np.uint8}

HARNESS_JS = r"""
function encode(v) {
  if (ArrayBuffer.isView(v)) {
    const b = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    let s = "";
    for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode(...b.subarray(i, i + 8192));
    return {__typed: v.constructor.name, b64: btoa(s)};
  }
  if (Array.isArray(v)) return v.map(encode);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encode(x)]));
  if (typeof v === "number" && !Number.isFinite(v)) return {__number: String(v)};
  return v;
}
const post = body => fetch("/result/" + TOKEN, {method: "POST", body: JSON.stringify(body)});
try {
  const mod = await import(MODULE);
  post({ok: true, value: encode(await mod.default())});
} catch (e) {
  post({ok: false, error: String(e && e.message || e), stack: String(e && e.stack)});
}
"""


def find_chromium() -> str | None:
    """The Chromium (or Chrome) binary: ``$WJAX_CHROMIUM`` or the usual names on PATH."""
    explicit = os.environ.get("WJAX_CHROMIUM")
    if explicit:
        return explicit if os.path.exists(explicit) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def decode(v):
    """The JSON a page posted, typed arrays back as NumPy arrays."""
    if isinstance(v, dict):
        if "__typed" in v:
            return np.frombuffer(base64.b64decode(v["b64"]), _TYPED[v["__typed"]]).copy()
        if "__number" in v:
            return float(v["__number"])
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


class PageError(Exception):
    """The page's module threw: its message."""


class _Handler(http.server.SimpleHTTPRequestHandler):
    results: dict = None

    def log_message(self, *args):
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        token = self.path.rsplit("/", 1)[-1]
        self.send_response(204)
        self.end_headers()
        self.results.setdefault(token, queue.Queue()).put(json.loads(body))


class Browser:
    def __init__(self, root, binary: str | None = None, timeout: float = 60.0):
        self.root, self.timeout = str(root), timeout
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise FileNotFoundError("no chromium found")
        self._results: dict = {}
        handler = type("Handler", (_Handler,), {"results": self._results})
        self._server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=self.root))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.origin = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._profile = tempfile.mkdtemp(prefix="wjax-chromium-")
        self.log: list = []               # console messages and exceptions of the pages
        self._start()

    # ------------------------------------------------------------------ DevTools protocol
    def _start(self):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds():          # the protocol pipe: Chromium reads fd 3 and writes fd 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self._proc = subprocess.Popen(
            [self.binary, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile}",
             "about:blank"], preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._ids = itertools.count(1)
        self._replies: dict = {}
        self._cv = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target,
                                  flatten=True)["sessionId"]
        self.call("Runtime.enable", session=True)
        self.call("Page.enable", session=True)

    def _reader(self):
        buf = b""
        with os.fdopen(self._from_chrome, "rb", buffering=0) as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk:
                    break
                buf += chunk
                while b"\0" in buf:
                    raw, buf = buf.split(b"\0", 1)
                    self._message(json.loads(raw))
        with self._cv:
            self._cv.notify_all()

    def _message(self, msg):
        if "id" in msg:
            with self._cv:
                self._replies[msg["id"]] = msg
                self._cv.notify_all()
        elif msg.get("method") == "Runtime.consoleAPICalled":
            args = msg["params"]["args"]
            self.log.append(" ".join(str(a.get("value", a.get("description", "")))
                                     for a in args))
        elif msg.get("method") == "Runtime.exceptionThrown":
            d = msg["params"]["exceptionDetails"]
            self.log.append("exception: " + d.get("exception", {}).get(
                "description", d.get("text", "")))

    def call(self, method, session=False, timeout=None, **params):
        """Sends one protocol command and waits for its reply (RuntimeError on an error)."""
        i = next(self._ids)
        msg = {"id": i, "method": method, "params": params}
        if session:
            msg["sessionId"] = self._session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cv:
            while i not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self._proc.poll() is not None:
                    raise TimeoutError(f"chromium did not answer {method} "
                                       f"(exit code {self._proc.poll()})")
                self._cv.wait(min(left, 0.5))
            reply = self._replies.pop(i)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    # ------------------------------------------------------------------ pages
    def navigate(self, path: str) -> None:
        self.call("Page.navigate", session=True, url=f"{self.origin}/{path.lstrip('/')}")

    def evaluate(self, expression: str, timeout=None):
        """The value of ``expression`` in the page (awaited when a promise)."""
        r = self.call("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                      awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise PageError(r["exceptionDetails"].get("exception", {}).get("description"))
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout=None):
        """Polls ``expression`` until it is truthy; returns its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            v = self.evaluate(expression)
            if v:
                return v
            time.sleep(0.1)
        raise TimeoutError(f"the page never made {expression!r} true; its log: {self.log}")

    def screenshot(self, clip: dict | None = None) -> bytes:
        """The page's viewport (or ``clip``: x, y, width, height, scale) as PNG bytes."""
        params = {"format": "png"}
        if clip is not None:
            params["clip"] = clip
        return base64.b64decode(self.call("Page.captureScreenshot", session=True,
                                          **params)["data"])

    def run_module(self, module: str, timeout=None):
        """Runs the default export of the JS module ``module`` (a path under ``root``) in a
        fresh page; returns what it resolved to (decoded), or raises ``PageError``."""
        token = f"t{next(self._ids)}"
        page = f"harness-{token}.html"
        with open(os.path.join(self.root, page), "w") as f:
            f.write('<!doctype html><meta charset="utf-8"><script type="module">\n'
                    f"const TOKEN = {json.dumps(token)}, MODULE = "
                    f"{json.dumps('/' + module.lstrip('/'))};\n{HARNESS_JS}</script>\n")
        self.log.clear()
        self.navigate(page)
        q = self._results.setdefault(token, queue.Queue())
        try:
            msg = q.get(timeout=timeout or self.timeout)
        except queue.Empty:
            raise TimeoutError(f"{module} posted no result in time; the page's log: "
                               f"{self.log}") from None
        if not msg["ok"]:
            raise PageError(msg["error"])
        return decode(msg["value"])

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._to_chrome,):
            try:
                os.close(fd)
            except OSError:
                pass
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._profile, ignore_errors=True)


def png_pixels(data: bytes) -> np.ndarray:
    """An 8-bit, non-interlaced PNG (what Chromium writes) as an (h, w, channels) array."""
    import struct
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and color in (2, 6), (depth, color, interlace)
            ch = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], [0] * stride
    for y in range(h):
        f = raw[y * (stride + 1)]
        cur = list(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 2:
            cur = [(v + p) & 255 for v, p in zip(cur, prev)]
        elif f in (1, 3, 4):
            for x in range(stride):
                a = cur[x - ch] if x >= ch else 0
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + prev[x]) >> 1
                else:
                    b, c = prev[x], (prev[x - ch] if x >= ch else 0)
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[x] = (cur[x] + p) & 255
        rows.append(cur)
        prev = cur
    return np.array(rows, np.uint8).reshape(h, w, ch)


def png_bytes(pixels: np.ndarray) -> bytes:
    """An (h, w, 3 or 4) uint8 array as a PNG (no filtering; zlib level 9)."""
    import struct
    import zlib
    h, w, ch = pixels.shape
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6 if ch == 4 else 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
