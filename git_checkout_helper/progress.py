"""``progress.c``: "Updating files:  45% (2190/4847)" on stderr.

Throttled like git (a redraw at most every ``PROGRESS_INTERVAL`` seconds or when
the percentage changes), ended with ", done.". git starts the meter only
after a delay; callers that want it shown from the start (tests,
``--progress``) pass ``delay=0``.
"""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ["Progress"]

PROGRESS_INTERVAL = 1.0


class Progress:
    def __init__(self, title: str, total: int, out: TextIO, delay: float = 2.0) -> None:
        self.title = title
        self.total = total
        self.out = out
        self.count = 0
        self._start = time.monotonic()
        self._delay = delay
        self._shown = False
        self._last_pct = -1
        self._last_time = 0.0

    def _line(self) -> str:
        if self.total:
            pct = self.count * 100 // self.total
            return f"{self.title}: {pct:3d}% ({self.count}/{self.total})"
        return f"{self.title}: {self.count}"

    def display(self, count: int) -> None:
        self.count = count
        now = time.monotonic()
        if not self._shown and now - self._start < self._delay:
            return
        pct = count * 100 // self.total if self.total else count
        if pct == self._last_pct and now - self._last_time < PROGRESS_INTERVAL:
            return
        self._shown = True
        self._last_pct = pct
        self._last_time = now
        self.out.write(self._line() + "\r")
        self.out.flush()

    def add(self, n: int = 1) -> None:
        self.display(self.count + n)

    def stop(self) -> None:
        if self._shown or self._delay <= 0:
            self.out.write(self._line() + ", done.\n")
            self.out.flush()
