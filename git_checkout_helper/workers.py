"""Running helper processes: git's ``parallel-checkout.c`` coordinator side.

``setup_workers`` / ``gather_results_from_workers`` / ``finish_workers``: spawn
every helper first, then hand each one contiguous chunk of the items (git's
split: ``nr / n`` each, the first ``nr % n`` one more), each chunk ending with
a flush, then poll all helper stdouts at once and take results as they come.
Contiguous chunks in index order keep a directory's files in one helper
(directory locks in the kernel) and delta bases in one helper's cache.

Anything unexpected from a helper (a result out of order, a short record, a
death) marks that helper's unanswered items as not written; the caller
decides what that means for the index. Helpers never outlive this function:
on any exception (Ctrl-C included) they are terminated and reaped.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from .pktline import FLUSH, FLUSH_PKT, PktLineError, PktParser, pkt_line
from .wire import (
    PcItem,
    PcItemResult,
    RequestLayout,
    StatLayout,
    WireError,
    decode_result,
)

__all__ = ["HelperPool", "split_batches"]



class _Helper:
    __slots__ = ("index", "proc", "start", "end", "next_id", "parser", "done", "error", "child_id", "t0")

    def __init__(self, index, proc, start, end, child_id, t0):
        self.index = index
        self.proc = proc
        self.start = start
        self.end = end
        self.next_id = start
        self.parser = PktParser()
        self.done = False
        self.error: str | None = None
        self.child_id = child_id
        self.t0 = t0


def split_batches(nr: int, num_workers: int) -> list[tuple[int, int]]:
    """git's split: contiguous [start, end) runs, the first ``nr % n`` one longer."""
    base, extra = divmod(nr, num_workers)
    out = []
    start = 0
    for i in range(num_workers):
        size = base + (1 if i < extra else 0)
        out.append((start, start + size))
        start += size
    return out


class ForkedHelper:
    """A helper process forked from the coordinator, with ``Popen``'s interface.

    An exec'd Python helper spends ~0.1 s of CPU on interpreter start-up and
    imports before its first item; the coordinator has already imported all
    of it, so a fork starts a helper in about a millisecond. The child gets
    a clean slate first (pipes on 0/1, every other descriptor closed, the
    helper's environment and directory) and then runs the helper's ordinary
    entry point, exactly as an exec'd one would; it never returns into the
    coordinator's code (``os._exit``).
    """

    def __init__(self, entry: Callable[[list[str]], int], args: list[str], cwd: str,
                 env: dict[str, str] | None) -> None:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            code = 128
            try:
                os.dup2(r_in, 0)
                os.dup2(w_out, 1)
                for name in os.listdir("/proc/self/fd"):
                    fd = int(name)
                    if fd > 2:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                os.chdir(cwd)
                if env is not None:
                    os.environ.clear()
                    os.environ.update(env)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = entry(args)
            except BaseException:  # noqa: BLE001 - nothing may escape into the parent's code
                pass
            finally:
                try:
                    sys.stderr.flush()
                except BaseException:  # noqa: BLE001
                    pass
                os._exit(code if isinstance(code, int) else 128)
        os.close(r_in)
        os.close(w_out)
        self.pid = pid
        self.stdin = os.fdopen(w_in, "wb", buffering=0)
        self.stdout = os.fdopen(r_out, "rb", buffering=0)
        self.returncode: int | None = None

    def _status(self, status: int) -> int:
        self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            while True:
                try:
                    _, status = os.waitpid(self.pid, 0)
                    break
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
            self._status(status)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


class HelperPool:
    """Helpers started ahead of their work.

    git starts its workers only when the queue is complete; a Python helper
    needs ~0.1 s to start, so the coordinator starts them as soon as it knows
    roughly how much there is to write and lets their start-up overlap its
    own removals, mkdirs and item encoding. Helpers that turn out not to be
    needed get an empty input and exit.
    """

    def __init__(self, argv: list[str], n: int, *, cwd: str, env: dict[str, str] | None, trace=None,
                 trace_argv: list[str] | None = None,
                 fork_entry: Callable[[list[str]], int] | None = None) -> None:
        """Start ``n`` helpers: ``argv`` exec'd, or, with ``fork_entry``, forked
        children running ``fork_entry(argv)`` (see :class:`ForkedHelper`).
        ``trace_argv`` is what trace2's ``child_start`` shows (git shows
        ``git checkout--worker``; ours is ``git checkout--helper``)."""
        self.argv = argv
        self.trace = trace
        self.helpers: list[_Helper] = []
        try:
            for i in range(n):
                cid = trace.child_start(trace_argv or argv) if trace is not None else -1
                if fork_entry is not None:
                    proc = ForkedHelper(fork_entry, argv, cwd, env)
                else:
                    proc = subprocess.Popen(
                        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, env=env,
                        bufsize=0, close_fds=True,
                    )
                self.helpers.append(_Helper(i, proc, 0, 0, cid, time.monotonic()))
        except BaseException:
            self.close(error=lambda m: None, abort=True)
            raise

    def __len__(self) -> int:
        return len(self.helpers)

    def run(
        self,
        items: Sequence[PcItem],
        *,
        layout: RequestLayout,
        stat_layout: StatLayout,
        on_result: Callable[[PcItemResult], None],
        error: Callable[[str], None] = lambda m: None,
    ) -> list[PcItemResult | None]:
        """Write ``items`` with (up to) every helper; results indexed by item id.

        Item ids must be 0..len(items)-1 in order. A slot left None was never
        answered (its helper died or misbehaved); ``error`` has been told why.
        """
        nr = len(items)
        results: list[PcItemResult | None] = [None] * nr
        used = self.helpers[: max(1, min(nr, len(self.helpers)))]
        sel = selectors.DefaultSelector()
        aborted = True
        try:
            for h, (start, end) in zip(used, split_batches(nr, len(used)), strict=True):
                h.start, h.end, h.next_id = start, end, start
            for h in self.helpers[len(used) :]:
                h.done = True  # nothing for it: an empty input ends it
                self._close_input(h)
            for h in used:
                batch = b"".join([pkt_line(items[j].encode(layout)) for j in range(h.start, h.end)])
                try:
                    h.proc.stdin.write(batch + FLUSH_PKT)
                except (BrokenPipeError, OSError) as e:
                    h.error = f"checkout helper {h.index} closed its input early ({e.strerror or e})"
                self._close_input(h)
                os.set_blocking(h.proc.stdout.fileno(), False)
                sel.register(h.proc.stdout.fileno(), selectors.EVENT_READ, h)
            _gather(sel, used, results, stat_layout, on_result)
            aborted = False
        finally:
            sel.close()
            self.close(error, abort=aborted)
        return results

    @staticmethod
    def _close_input(h: _Helper) -> None:
        try:
            h.proc.stdin.close()
        except OSError:
            pass

    def close(self, error: Callable[[str], None] = lambda m: None, abort: bool = True) -> None:
        """Reap every helper (terminating them first when ``abort``); idempotent."""
        helpers, self.helpers = self.helpers, []
        if abort:
            for h in helpers:
                if h.proc.poll() is None:
                    h.proc.send_signal(signal.SIGTERM)
        for h in helpers:
            self._close_input(h)
            if h.proc.stdout:
                h.proc.stdout.close()
            rc = h.proc.wait()
            if self.trace is not None:
                self.trace.child_exit(h.child_id, h.proc.pid, rc, time.monotonic() - h.t0)
            if abort:
                continue
            if rc < 0 and not (h.error and rc == -signal.SIGTERM):
                # (a SIGTERM after an error is ours: _drop stopped the helper)
                error(f"checkout helper {h.index} died of signal {-rc}")
            elif rc != 0 and h.error is None and not h.done:
                h.error = f"checkout helper {h.index} exited with status {rc}"
            if h.error:
                error(h.error)


def _gather(sel, helpers, results, stat_layout, on_result) -> None:
    active = len(helpers)
    while active:
        for key, _ in sel.select():
            h: _Helper = key.data
            try:
                data = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            if data:
                try:
                    pkts = h.parser.feed(data)
                except PktLineError as e:
                    _drop(sel, key.fd, h, f"checkout helper {h.index}: {e}")
                    active -= 1
                    continue
                for pkt in pkts:
                    if h.done or h.error:
                        break
                    if pkt == FLUSH:
                        if h.next_id != h.end:
                            h.error = (
                                f"checkout helper {h.index} finished with "
                                f"{h.end - h.next_id} items unanswered"
                            )
                        h.done = True
                        continue
                    if isinstance(pkt, int):
                        h.error = f"checkout helper {h.index} sent an unexpected special packet"
                        continue
                    try:
                        res = decode_result(pkt, stat_layout)
                    except WireError as e:
                        h.error = f"checkout helper {h.index}: {e}"
                        continue
                    if h.next_id >= h.end:
                        h.error = f"received result from supposedly finished checkout helper {h.index}"
                        continue
                    if res.id != h.next_id:
                        h.error = (
                            f"unexpected item id from checkout helper {h.index} "
                            f"(got {res.id}, exp {h.next_id})"
                        )
                        continue
                    h.next_id += 1
                    results[res.id] = res
                    on_result(res)
                if h.error:
                    _drop(sel, key.fd, h, None)
                    active -= 1
            else:  # EOF
                if not h.done and h.error is None:
                    h.error = (
                        f"checkout helper {h.index} ended its output before answering "
                        f"{h.end - h.next_id} items"
                    )
                _drop(sel, key.fd, h, None)
                active -= 1


def _drop(sel, fd, h: _Helper, err: str | None) -> None:
    if err and not h.error:
        h.error = err
    sel.unregister(fd)
    if h.error and h.proc.poll() is None:
        h.proc.send_signal(signal.SIGTERM)
