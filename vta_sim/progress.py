"""Progress of long runs, one mechanism for every command: a bar redrawn in place on a terminal,
plain lines when the output is a file or a pipe (one line per finished stage, so a log holds no
carriage returns or escape sequences), nothing when quiet.

`Progress(stream).stage(name)` returns a callback `(done, total, text)`; a stage is finished
when `done == total`.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

#: A stage's callback: (done, total, text).
Callback = Callable[[int, int, str], None]

BAR_WIDTH = 24
MODES = ("auto", "bar", "lines", "quiet")


class Progress:
    """`mode`: "auto" (a bar on a terminal, else lines), "bar", "lines" or "quiet"."""

    def __init__(self, stream: TextIO | None = None, mode: str = "auto"):
        if mode not in MODES:
            raise ValueError(f"progress mode {mode!r}; accepted: {', '.join(MODES)}")
        self.stream = sys.stderr if stream is None else stream
        if mode == "auto":
            mode = "bar" if getattr(self.stream, "isatty", lambda: False)() else "lines"
        self.mode = mode

    def stage(self, name: str) -> Callback:
        def show(done: int, total: int, text: str = "") -> None:
            if self.mode == "quiet":
                return
            finished = done >= total
            if self.mode == "lines":
                if finished:
                    self.stream.write(f"{name}: {done}/{total} done{': ' + text if text else ''}\n")
                    self.stream.flush()
                return
            filled = BAR_WIDTH * done // max(total, 1)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            self.stream.write(f"\r\033[K{name} [{bar}] {done}/{total} {text}")
            if finished:
                self.stream.write("\n")
            self.stream.flush()
        return show
