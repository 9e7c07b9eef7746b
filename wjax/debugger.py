"""``jax.debug.breakpoint``: an interactive debugger at a point of a traced program.

At trace time the user's stack frames are captured (wjax's own frames, and those of files
registered with ``jax._src.traceback_util.register_exclusion``, filtered out); each frame's
local variables that are arrays travel as operands of a debug callback, so when the program
runs -- under ``jit``, ``vmap`` (once per example), ``grad`` -- the debugger sees their
values.  The debugger is a text prompt, ``(jdb)``, reading standard input: ``p``/``pp``
evaluate an expression in the current frame, ``u``/``d`` move between frames, ``l`` lists
the source, ``w`` prints the stack, ``c`` continues, ``q`` exits.
"""
from __future__ import annotations

import cmd
import inspect
import os
import pprint
import sys
import threading
import traceback
from typing import Any

from ._src.api.callbacks import debug_callback, pure_callback
from ._src.core import tree_util
from ._src.core.ir import ShapeDtypeStruct
from ._src.core.tracing import Tracer
from .numpy import asarray
from ._src import traceback_util

__all__ = ["DebuggerFrame", "breakpoint"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()


class DebuggerFrame:
    """One captured stack frame: its file, line, source, and local variables."""

    def __init__(self, filename: str, locals: dict, source: list[str], lineno: int,
                 offset: int | None):
        self.filename, self.locals, self.source = filename, locals, source
        self.lineno, self.offset = lineno, offset
        self.globals: dict = {}

    @classmethod
    def capture(cls, info: inspect.FrameInfo) -> "DebuggerFrame":
        try:
            lines, start = inspect.getsourcelines(info.frame)
            source = "".join(lines).split("\n")
            offset = info.lineno - max(start, 1)
            if offset >= len(source):
                source, offset = [], None
        except (OSError, TypeError):
            source, offset = [], None
        return cls(info.filename, dict(info.frame.f_locals), source, info.lineno, offset)


def _is_value(x) -> bool:
    return isinstance(x, Tracer) or hasattr(x, "aval")


class _Captured:
    """Frames with their array-valued locals taken out as flat operands."""

    def __init__(self, frames: list[DebuggerFrame]):
        self.frames, self.slots, self.values = frames, [], []
        for k, f in enumerate(frames):
            for name, v in f.locals.items():
                try:
                    leaves, tree = tree_util.tree_flatten(v)
                except Exception:          # noqa: BLE001 - an odd object: shown as it is
                    continue
                if leaves and all(_is_value(x) for x in leaves):
                    self.slots.append((k, name, tree, len(leaves)))
                    self.values.extend(leaves)
                elif any(isinstance(x, Tracer) for x in leaves):
                    f.locals[name] = "<cant_flatten>"

    def rebuild(self, values) -> list[DebuggerFrame]:
        frames = [DebuggerFrame(f.filename, dict(f.locals), f.source, f.lineno, f.offset)
                  for f in self.frames]
        it = iter(values)
        for k, name, tree, n in self.slots:
            frames[k].locals[name] = tree_util.tree_unflatten(tree, [next(it) for _ in range(n)])
        return frames


class CliDebugger(cmd.Cmd):
    """The text debugger: ``(jdb)`` commands over the captured frames (innermost first)."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames, self.frame_index = frames, 0
        self.intro = "Entering jdb:"

    def _eval(self, expr: str):
        f = self.frames[self.frame_index]
        return eval(expr, {}, {**f.globals, **f.locals})

    def _error(self):
        etype, value = sys.exc_info()[:2]
        msg = traceback.format_exception_only(etype, value)[-1].strip()
        print("***", msg, file=self.stdout)

    def _show(self, expr: str, fmt) -> None:
        try:
            print(fmt(self._eval(expr)), file=self.stdout)
        except Exception:                  # noqa: BLE001 - reported at the prompt
            self._error()

    def default(self, line):
        self._show(line, repr)

    def do_p(self, arg):
        """p expression: evaluates and prints an expression in the current frame."""
        self._show(arg, repr)

    def do_pp(self, arg):
        """pp expression: evaluates and pretty-prints an expression."""
        self._show(arg, pprint.pformat)

    def _context(self, num_lines: int = 2) -> None:
        f = self.frames[self.frame_index]
        out = [f"> {f.filename}({f.lineno})"]
        if f.offset is not None:
            for i, line in enumerate(f.source):
                if f.offset - 1 - num_lines <= i <= f.offset + num_lines:
                    out.append(("->  " if i == f.offset else "    ") + line)
        print("\n".join(out), file=self.stdout)

    def do_up(self, arg):
        """u(p): moves to the caller's frame."""
        if self.frame_index == len(self.frames) - 1:
            print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self._context()
    do_u = do_up

    def do_down(self, arg):
        """d(own): moves to the callee's frame."""
        if self.frame_index == 0:
            print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self._context()
    do_d = do_down

    def do_list(self, arg):
        """l(ist): the source around the current line."""
        self._context(num_lines=5)
    do_l = do_list

    def do_where(self, arg):
        """w(here): the stack, most recent frame last ('bt' too)."""
        out = ["Traceback:"]
        for f in self.frames[::-1]:
            out.append(f'  File "{f.filename}", line {f.lineno}')
            out.append("    <no source>" if f.offset is None
                       else "    " + f.source[f.offset].strip())
        print("\n".join(out), file=self.stdout)
    do_w = do_bt = do_where

    def do_continue(self, arg):
        """c(ont(inue)): resumes the program."""
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg):
        """q(uit): exits the program."""
        sys.exit(0)
    do_q = do_EOF = do_exit = do_quit

    def run(self) -> None:
        while True:
            try:
                self.cmdloop()
                break
            except KeyboardInterrupt:
                print("--KeyboardInterrupt--", file=self.stdout)


def _user_frame(info: inspect.FrameInfo) -> bool:
    if info.filename.startswith("<frozen "):     # runpy, importlib: not the user's
        return False
    name = os.path.abspath(info.filename)
    return not name.startswith(_PACKAGE_DIR) and traceback_util.include_filename(name)


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any) -> Any:
    """Enters the debugger when the program reaches this point, with the values of the
    array variables of the calling frames.  With ``token``, returns it (a value the rest of
    the program can depend on, to order the breakpoint)."""
    infos = inspect.stack()[1:]
    if filter_frames:
        infos = [i for i in infos if _user_frame(i)]
    frames = [DebuggerFrame.capture(i) for i in infos]
    if num_frames is not None:
        frames = frames[:num_frames]
    captured = _Captured(frames)

    def enter(*values):
        with _lock:
            CliDebugger(captured.rebuild([asarray(v) for v in values])).run()

    if token is None:
        debug_callback(enter, *captured.values, ordered=ordered)
        return None
    leaves, tree = tree_util.tree_flatten(token)

    def enter_then_pass(*values):
        enter(*values[len(leaves):])
        return list(values[:len(leaves)])
    shapes = [ShapeDtypeStruct.like(x) for x in leaves]
    out = pure_callback(enter_then_pass, shapes, *leaves, *captured.values)
    return tree_util.tree_unflatten(tree, list(out))
