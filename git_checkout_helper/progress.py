"""``progress.c``: "Updating files:  45% (2190/4847)" on stderr, as git draws it.

git's meter is driven by a one-second interval timer (``SIGALRM`` setting
``progress_update``); here a tick is each whole second of ``clock()`` since
the start, which callers (tests) may replace with a fake clock:

* ``start_delayed_progress``: ``delay`` ticks must pass before the first
  line (``GIT_PROGRESS_DELAY``, default 2; an explicit ``--progress`` does
  not change it). As in git, the tick that ends the countdown stays pending,
  so the first line comes at the next update after it.
* then a redraw when the percentage changes or a tick has passed;
* a line that gets shorter is padded with spaces; a line wider than the
  terminal (``columns``) is split after the title, once;
* nothing is drawn while the process is in the background of its terminal
  (``is_foreground_fd``), except the last line;
* ``stop_progress``: ", done." only when the meter was shown (a fast
  checkout prints nothing, as git's).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["Progress", "default_delay"]

PROGRESS_INTERVAL = 1.0
DEFAULT_DELAY = 2


def default_delay(value: str | None) -> int:
    """``get_default_delay``: ``GIT_PROGRESS_DELAY`` (whole seconds), else 2."""
    if value is None or not value.strip():
        return DEFAULT_DELAY
    try:
        return max(0, int(value.strip()))
    except ValueError:
        return DEFAULT_DELAY


def _is_foreground(out: TextIO) -> bool:
    try:
        fd = out.fileno()
        tpgrp = os.tcgetpgrp(fd)
    except (AttributeError, OSError, ValueError):
        return True  # not a terminal: tcgetpgrp fails, git draws
    return tpgrp == os.getpgid(0)


class Progress:
    def __init__(self, title: str, total: int, out: TextIO, delay: float = DEFAULT_DELAY,
                 clock: Callable[[], float] = time.monotonic, columns: int | None = None) -> None:
        self.title = title
        self.total = total
        self.out = out
        self.count = 0
        self._clock = clock
        self._start = clock()
        self._ticks = 0  # timer ticks seen
        self._update = False  # progress_update
        self._delay = int(delay)
        self._last_value = -1
        self._last_pct = -1
        self._counters = ""
        self._split = False
        self._columns = columns

    def _tick(self) -> None:
        ticks = int((self._clock() - self._start) // PROGRESS_INTERVAL)
        if ticks > self._ticks:
            self._ticks = ticks
            self._update = True

    def _display(self, n: int, done: str | None) -> None:
        if done is None:
            self._tick()
        if self._delay:
            if not self._update:
                return
            self._delay -= 1
            if self._delay:
                return
        self._last_value = n
        show = False
        if self.total:
            pct = n * 100 // self.total
            if pct != self._last_pct or self._update:
                self._last_pct = pct
                last_len = len(self._counters)
                self._counters = f"{pct:3d}% ({n}/{self.total})"
                show = True
        elif self._update:
            last_len = len(self._counters)
            self._counters = f"{n}"
            show = True
        if not show:
            return
        if done is not None or _is_foreground(self.out):
            eol = done if done is not None else "\r"
            clear = last_len - len(self._counters) + 1 if len(self._counters) < last_len else 0
            cols = self._columns or _term_columns()
            line_len = len(self.title) + len(self._counters) + 2
            if self._split:
                self.out.write(f"  {self._counters}{' ' * clear}{eol}")
            elif done is None and cols < line_len:
                clear = cols - len(self.title) - 1 if len(self.title) + 1 < cols else 0
                self.out.write(f"{self.title}:{' ' * clear}\n  {self._counters}{eol}")
                self._split = True
            else:
                self.out.write(f"{self.title}: {self._counters}{' ' * clear}{eol}")
            self.out.flush()
        self._update = False

    def display(self, count: int) -> None:
        self.count = count
        self._display(count, None)

    def add(self, n: int = 1) -> None:
        self.display(self.count + n)

    @property
    def shown(self) -> bool:
        return self._last_value != -1

    def stop(self, msg: str = "done") -> None:
        """``stop_progress``: the last line, ", done.", if the meter started."""
        if self._last_value != -1:
            self._update = True
            self._display(self._last_value, f", {msg}.\n")


def _term_columns() -> int:
    """``term_columns`` without $COLUMNS (the caller passes ``columns`` for
    it): the terminal's width, else 80."""
    try:
        return os.get_terminal_size(2).columns or 80
    except OSError:
        return 80
