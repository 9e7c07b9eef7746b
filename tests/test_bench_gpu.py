"""bench/bench_gpu.py, the GPU table's script: it runs (small sizes, one workload) and writes
its rows, and a row whose rate is past the adapter's measured peak is flagged -- an H200 run
whose waits returned before the work printed selu at "7.7 TB/s" on a 4.8 TB/s card, and
nothing said so."""
from __future__ import annotations

import json
import sys

from checks import load_script

import wjax


def _bench():
    return load_script("bench/bench_gpu.py", "bench_gpu")


def test_runs_and_writes_its_rows(tmp_path, monkeypatch):
    bg = _bench()
    out = tmp_path / "rows.json"
    monkeypatch.setattr(sys, "argv", ["bench_gpu.py", "--small", "--only", "call",
                                      "--json", str(out)])
    bg.main()
    got = json.loads(out.read_text())
    names = [r["name"] for r in got["rows"]]
    assert got["short"] == "wjax" and got["small"] is True
    assert "jit call of x+1 on 5 elements + block_until_ready" in names
    assert all(r["seconds"] is not None and r["seconds"] > 0 for r in got["rows"])


def test_rates_past_the_measured_peak_are_flagged():
    bg = _bench()
    b = bg.Bench(wjax, small=False)          # full sizes: the check is on
    peak = b.peak()
    assert peak["gbps"] > 0 and peak["gflops"] > 0
    b.row("too fast", 1.0, nbytes=2 * peak["gbps"] * 1e9)
    b.row("fine", 1.0, nbytes=0.5 * peak["gbps"] * 1e9)
    b.row("too many flops", 1.0, flops=2 * peak["gflops"] * 1e9)
    notes = {r["name"]: r["note"] for r in b.rows}
    assert notes["too fast"].startswith("IMPLAUSIBLE") and notes["fine"] == ""
    assert notes["too many flops"].startswith("IMPLAUSIBLE")
    assert bg.Bench(wjax, small=True).peak() is None      # CPU sizes: no check
