r"""``start_async`` / ``finish_async`` (run-command.c): a function run in a
forked child, its result read back through a pipe.

What the coordinator hands a second CPU while it works on: the preload's
``lstat``\ s (:mod:`preload`), the target tree read ahead
(:mod:`treeahead`). git runs such work in threads; our per-entry work is
Python, which threads would run one at a time, so it is a forked process
(as a preload worker always was here), whose result is bytes.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from .workers import STOP_SIGNALS, close_other_fds, fork_child
from .wrapper import write_in_full

__all__ = ["end_async", "finish_async", "read_part", "start_async", "stop_async"]


def start_async(compute: Callable[[], bytes | list[bytes]]) -> tuple[int, int]:
    """Run ``compute`` in a forked child and send its bytes back: (child's
    pid, the pipe's read end), for :func:`finish_async` (or
    :func:`read_part` and :func:`end_async`), or :func:`stop_async`.

    The child only reads: its stdout and stderr go to ``/dev/null`` (what it
    would say, the coordinator says if it does the work again), every other
    descriptor is closed (:func:`workers.close_other_fds`), the stopping
    signals kill it, and it ends with ``os._exit``, having run
    nothing of the coordinator's but ``compute``. Each part of the result
    (``compute`` may return a list of them) goes with its length first, so
    that it is read into one buffer of that size, and a reader may make
    its objects of one part before it reads the next; an exception in
    ``compute`` is an exit status of 1, nothing sent."""
    r, w = os.pipe()
    pid = fork_child(dict.fromkeys(STOP_SIGNALS, signal.SIG_DFL))
    if pid == 0:
        code = 1
        try:
            close_other_fds(keep=w)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            data = compute()
            for part in (data,) if isinstance(data, bytes | bytearray) else data:
                write_in_full(w, len(part).to_bytes(8, "little"))
                write_in_full(w, part)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def finish_async(pid: int, fd: int) -> bytearray | None:
    """What the child of :func:`start_async` sent (one part), once it has
    exited (reaped, ``fd`` closed); None when it failed or stopped short.
    An interrupted read stops the child, as :func:`stop_async` does."""
    try:
        data = read_part(fd)
    except BaseException:
        stop_async(pid, fd)
        raise
    return data if end_async(pid, fd) else None


def end_async(pid: int, fd: int) -> bool:
    """Close ``fd`` and reap the child of :func:`start_async` whose parts
    were read: whether it exited with success (else what was read of it
    must not be used)."""
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return status == 0


def stop_async(pid: int, fd: int) -> None:
    """Kill and reap the child of :func:`start_async` (one that an
    interrupted :func:`finish_async` reaped already is left alone)."""
    os.close(fd)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def read_part(fd: int) -> bytearray | None:
    """A part the child sent: its length (8 bytes), then that many bytes
    read into one buffer of that size (no list of pieces beside their
    join); None when the writer stopped short."""
    head = os.read(fd, 8)  # (written in one write of less than PIPE_BUF: whole, or not at all)
    if len(head) != 8:
        return None
    size = int.from_bytes(head, "little")
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            return None
        got += n
    return buf
