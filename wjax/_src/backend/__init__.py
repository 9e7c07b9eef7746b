"""The WebGPU backend: lowering (lower.py), WGSL emission (wgsl.py), device runtime
(runtime.py) and plan execution (execute.py)."""
