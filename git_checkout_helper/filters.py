"""Smudge filters (``filter.<driver>.smudge`` and ``.process``), for the
coordinator and, when a driver opts in, for the helpers.

Mirrors ``convert.c``: :func:`smudge_to_worktree` is
``convert_to_working_tree_ca_internal`` (ident, eol, encoding, then the
driver), :meth:`FilterRunner.smudge` is ``apply_filter`` for
``CAP_SMUDGE``; one-shot commands follow ``apply_single_file_filter`` and a
``process`` filter ``apply_multi_file_filter`` with ``sub-process.c``'s
handshake. The messages are git's, word for word, so a failing filter says
the same under both.

Failures, as git (``t0021-conversion.sh``):

* a filter that fails (non-zero exit, ``status=error``/``abort``, a broken
  protocol) leaves the content unfiltered; a one-shot's output is discarded
  whole, never written in part;
* with ``filter.<driver>.required`` that is fatal for the path:
  :class:`SmudgeFailed` carries git's ``<path>: smudge filter <driver>
  failed``; the caller writes nothing for it;
* ``status=abort`` switches smudging off for that filter process (in a
  helper: for that helper's instance only, the others go on), a protocol
  error stops the process (it is started again for the next path);
* a filter's own stderr is passed through, as git does.

``ref=``, ``treeish=`` and ``blob=`` are sent as git's checkout metadata
(switch and clone: the branch and commit; every path: its blob); the
helpers learn the first two from ``--filter-ref``/``--filter-treeish``.

Opt-in parallelism (``filter.<driver>.parallel = true``, not a git
setting): git writes every filtered file in its coordinator, one by one,
because it cannot know whether a filter tolerates running concurrently.
A driver marked parallel is run inside the helpers instead: a one-shot
command per file, and a ``process`` filter once per helper process (a
:class:`FilterRunner` belongs to one process and is never handed to another;
it starts a filter lazily on its first path and shuts it down at the end,
closing its input as git's ``subprocess_exit_handler`` does).

``delay`` is refused: the capability is not offered in the handshake (git
offers ``clean``, ``smudge`` and ``delay``). A delayed path is written after
all others, through ``list_available_blobs`` polling; inside a helper that
would need a second round trip with the coordinator for every delayed path,
and a helper's files are already written concurrently, which is what
``delay`` buys a sequential git. A filter that answers ``status=delayed``
anyway has broken the protocol (git says the same when it did not send
``can-delay=1``).
"""

from __future__ import annotations

import os
import signal
from _thread import allocate_lock  # threading.Lock itself, without threading's 1 ms of import
from collections.abc import Callable

from .convert import convert_to_working_tree
from .pktline import FLUSH, LARGE_PACKET_DATA_MAX, PktLineError, PktReader, pkt_line
from .wrapper import write_in_full

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    import subprocess

__all__ = ["FilterRunner", "SmudgeFailed", "expand_filter_command", "smudge_to_worktree"]


class SmudgeFailed(Exception):
    """A required smudge filter failed: ``<path>: smudge filter <name> failed``."""


def _say_error(msg: str) -> None:
    os.write(2, f"error: {msg}\n".encode("utf-8", "surrogateescape"))


def _sq_quote(path: bytes) -> bytes:
    """``sq_quote_buf``: '...' with each ' as '\\'' (and ! as '\\!')."""
    return b"'" + path.replace(b"'", b"'\\''").replace(b"!", b"'\\!'") + b"'"


def expand_filter_command(cmd: bytes, path: bytes) -> bytes:
    """``filter_buffer_or_fd``'s expansion: ``%f`` is the quoted path, ``%%``
    a percent sign; any other ``%`` stays as it is."""
    out = bytearray()
    i = 0
    n = len(cmd)
    while i < n:
        j = cmd.find(b"%", i)
        if j == -1:
            out += cmd[i:]
            break
        out += cmd[i:j]
        nxt = cmd[j + 1 : j + 2]
        if nxt == b"%":
            out += b"%"
            i = j + 2
        elif nxt == b"f":
            out += _sq_quote(path)
            i = j + 2
        else:
            out += b"%"
            i = j + 1
    return bytes(out)


class _ProtocolBroken(Exception):
    """The long-running filter broke the protocol (EOF, bad pkt-line, EPIPE)."""


class LongRunningFilter:
    """One ``process`` filter instance: ``struct cmd2process``.

    Used by one thread at a time (the lock), in one process only.
    """

    OFFERED = (b"clean", b"smudge")  # no "delay": see the module docstring

    def __init__(self, cmd: bytes, cwd: str | None, say: Callable[[str], None]) -> None:
        self.cmd = cmd
        self.cwd = cwd
        self.say = say
        self.caps: set[bytes] = set()
        self.proc: subprocess.Popen | None = None
        self.reader: PktReader | None = None
        self.lock = allocate_lock()

    @property
    def name(self) -> str:
        return self.cmd.decode("utf-8", "replace")

    def _write(self, data: bytes) -> None:
        try:
            write_in_full(self.proc.stdin.fileno(), data)
        except OSError as e:
            raise _ProtocolBroken(str(e)) from None

    def _read_pkt(self) -> bytes | None:
        """One packet's payload, None for a flush; anything else breaks the filter."""
        try:
            pkt = self.reader.read_pkt()
        except PktLineError as e:
            raise _ProtocolBroken(str(e)) from None
        if pkt is None:
            raise _ProtocolBroken("end of file")
        if isinstance(pkt, int):
            if pkt == FLUSH:
                return None
            raise _ProtocolBroken(f"unexpected special packet {pkt}")
        return pkt

    def _read_line(self) -> bytes | None:
        """``packet_read_line``: a line without its newline, None for a flush."""
        pkt = self._read_pkt()
        if pkt is None:
            return None
        return pkt[:-1] if pkt.endswith(b"\n") else pkt

    def _read_status(self, status: bytes) -> bytes:
        """``subprocess_read_status``: the last ``status=`` line up to a flush wins."""
        while True:
            line = self._read_line()
            if line is None:
                return status
            if line.startswith(b"status="):
                status = line[7:]

    def start(self) -> bool:
        """``subprocess_start`` + ``start_multi_file_filter_fn``; False on failure
        (reported; the next path tries again, as git does)."""
        import subprocess  # only when a filter runs: 4 ms of every start-up otherwise

        try:
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", os.fsdecode(self.cmd)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                cwd=self.cwd, bufsize=0, close_fds=True,
            )
        except OSError:
            self.say(f"cannot fork to run subprocess '{self.name}'")
            return False
        self.reader = PktReader(self.proc.stdout.fileno())
        why = None
        stage = "Could not write client identification"
        try:
            self._write(pkt_line(b"git-filter-client\n") + pkt_line(b"version=2\n") + b"0000")
            stage = f"could not read greeting from subprocess '{self.name}'"
            line = self._read_line()
            if line != b"git-filter-server":
                why = f"Unexpected line '{_show(line)}', expected git-filter-server"
            else:
                stage = f"could not read version from subprocess '{self.name}'"
                line = self._read_line()
                if line is None or not line.startswith(b"version="):
                    why = f"Unexpected line '{_show(line)}', expected version"
                else:
                    stage = f"could not read version flush from subprocess '{self.name}'"
                    after = self._read_line()
                    if after is not None:
                        why = f"Unexpected line '{_show(after)}', expected flush"
                    elif line[8:] != b"2":
                        why = f"Version {_show(line[8:])} not supported"
            if why is None:
                stage = "Could not write requested capability"
                self._write(b"".join(pkt_line(b"capability=" + c + b"\n") for c in self.OFFERED) + b"0000")
                stage = f"could not read capabilities from subprocess '{self.name}'"
                while True:
                    line = self._read_line()
                    if line is None:
                        break
                    if not line.startswith(b"capability="):
                        continue
                    cap = line[11:]
                    if cap not in self.OFFERED:
                        # git dies here; one path's failure is enough for us.
                        why = f"subprocess '{self.name}' requested unsupported capability '{_show(cap)}'"
                        break
                    self.caps.add(cap)
        except _ProtocolBroken:
            why = stage  # handshake_version / handshake_capabilities' messages
        if why is not None:
            self.say(why)
            self.say(f"initialization for subprocess '{self.name}' failed")
            self.stop()
            return False
        return True

    def smudge(self, path: bytes, data: bytes, blob_hex: bytes | None, ref: bytes | None = None,
               treeish: bytes | None = None) -> tuple[bytes | None, bool]:
        """``apply_multi_file_filter`` for ``CAP_SMUDGE``: (content or None, and
        whether the process must be dropped). ``ref``, ``treeish`` and
        ``blob`` are git's ``checkout_metadata``."""
        if b"smudge" not in self.caps:
            return None, False
        status = b""
        try:
            if len(path) > LARGE_PACKET_DATA_MAX - len(b"pathname=\n"):
                self.say("path name too long for external filter")
                raise _ProtocolBroken("path name too long")  # git: err, then handle_filter_error
            head = pkt_line(b"command=smudge\n") + pkt_line(b"pathname=" + path + b"\n")
            if ref:
                head += pkt_line(b"ref=" + ref + b"\n")
            if treeish:
                head += pkt_line(b"treeish=" + treeish + b"\n")
            if blob_hex:
                head += pkt_line(b"blob=" + blob_hex + b"\n")
            # Request, content and flush in one write for a small blob; a
            # large one goes in slices of 16 pkt-lines (~1 MiB).
            step = LARGE_PACKET_DATA_MAX
            if len(data) <= step * 16:
                self._write(b"".join([head, b"0000", *(pkt_line(data[j : j + step])
                                                        for j in range(0, len(data), step)), b"0000"]))
            else:
                self._write(head + b"0000")
                for i in range(0, len(data), step * 16):
                    self._write(b"".join(pkt_line(data[j : j + step])
                                         for j in range(i, min(len(data), i + step * 16), step)))
                self._write(b"0000")
            status = self._read_status(b"")
            if status == b"success":
                out = []
                while (pkt := self._read_pkt()) is not None:
                    out.append(pkt)
                status = self._read_status(status)
                if status == b"success":
                    return b"".join(out), False
        except _ProtocolBroken:
            pass
        # handle_filter_error
        if status == b"error":
            return None, False
        if status == b"abort":
            self.caps.discard(b"smudge")
            return None, False
        self.say(f"external filter '{self.name}' failed")
        return None, True

    def stop(self) -> None:
        """``subprocess_stop``: SIGTERM and reap (a broken filter); git's
        ``finish_command`` then says how it died."""
        if self.proc is not None:
            proc, self.proc = self.proc, None
            try:
                proc.terminate()
            except OSError:
                pass
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            _whine(self.name, proc.wait(), self.say)

    def close(self) -> None:
        """``subprocess_exit_handler``: close its pipes, wait for its own exit."""
        if self.proc is not None:
            proc, self.proc = self.proc, None
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            proc.wait()


def _whine(argv0: str, rc: int, say: Callable[[str], None]) -> None:
    """``wait_or_whine``: a child killed by a signal is named (not for
    SIGINT, SIGQUIT or SIGPIPE, as git)."""
    if rc < 0 and -rc not in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE):
        say(f"{argv0} died of signal {-rc}")


def _show(line: bytes | None) -> str:
    return "<flush packet>" if line is None else line.decode("utf-8", "replace")


class FilterRunner:
    """The filters of one process: ``apply_filter`` and git's ``subprocess_map``.

    ``say`` prints an ``error:`` line that does not fail the checkout (git's
    ``error()`` in convert.c; the checkout goes on with unfiltered content).
    ``ref`` and ``treeish`` are what git's ``init_checkout_metadata`` gives a
    process filter for the whole checkout (the branch's full name, the
    commit's hex id), None when git sends none.
    """

    def __init__(self, cwd: str | None, say: Callable[[str], None] = _say_error, ref: bytes | None = None,
                 treeish: bytes | None = None) -> None:
        self.cwd = cwd
        self.say = say
        self.ref = ref
        self.treeish = treeish
        self._procs: dict[bytes, LongRunningFilter] = {}
        self._lock = allocate_lock()
        self._pid = os.getpid()

    def smudge(self, drv, path: bytes, data: bytes, blob_hex: bytes | None = None) -> bytes | None:
        """``apply_filter(..., CAP_SMUDGE)``: the filtered content, or None when
        the driver did not filter it (absent command, failure: reported)."""
        if drv.smudge and not drv.process:
            return self._one_shot(drv.smudge, path, data)
        if drv.process:
            return self._process(drv.process, path, data, blob_hex)
        return None

    def _one_shot(self, cmd: bytes, path: bytes, data: bytes) -> bytes | None:
        """``apply_single_file_filter``: run through the shell, feed the whole
        input (a filter that stops reading early is fine), keep the whole
        output, and use it only if the command succeeded."""
        full = expand_filter_command(cmd, path)
        shown = cmd.decode("utf-8", "replace")
        import subprocess  # (see start)

        try:
            proc = subprocess.Popen(["/bin/sh", "-c", os.fsdecode(full)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, cwd=self.cwd, close_fds=True)
        except OSError:
            self.say(f"cannot fork to run external filter '{shown}'")
            return None
        try:
            out, _ = proc.communicate(data)
        except BaseException:
            # Interrupted (^C, SIGTERM turned into an exception): the filter
            # goes too, or it would outlive us holding our stderr open.
            proc.kill()
            proc.wait()
            raise
        rc = proc.returncode
        _whine(os.fsdecode(full), rc, self.say)
        if rc != 0:
            status = 128 - rc if rc < 0 else rc  # finish_command: 128 + signal
            self.say(f"external filter '{shown}' failed {status}")
            self.say(f"external filter '{shown}' failed")
            return None
        return out

    def _process(self, cmd: bytes, path: bytes, data: bytes, blob_hex: bytes | None) -> bytes | None:
        if os.getpid() != self._pid:  # a forked copy: never share the parent's filters
            self._procs = {}
            self._pid = os.getpid()
        with self._lock:
            entry = self._procs.get(cmd)
            if entry is None:
                entry = LongRunningFilter(cmd, self.cwd, self.say)
                if not entry.start():
                    return None
                self._procs[cmd] = entry
        with entry.lock:
            out, drop = entry.smudge(path, data, blob_hex, self.ref, self.treeish)
            if drop:
                entry.stop()
                with self._lock:
                    if self._procs.get(cmd) is entry:
                        del self._procs[cmd]
        return out

    def close(self, terminate: bool = False) -> None:
        """Shut every filter process down at the end of the checkout or of the
        helper: end of input, then wait (``terminate``: SIGTERM first, for a
        helper that is being killed)."""
        with self._lock:
            procs, self._procs = list(self._procs.values()), {}
        if os.getpid() != self._pid:
            return
        for p in procs:
            if terminate:
                p.stop()
            else:
                p.close()


def smudge_to_worktree(runner: FilterRunner, drv, ca, data: bytes, oid_hex: bytes, path: bytes, eol,
                       on_error=None) -> bytes:
    """``convert_to_working_tree_ca_internal``: ident, eol, encoding (``ca``,
    as :func:`convert.convert_to_working_tree` takes it), then the driver's
    smudge. Raises :class:`SmudgeFailed` when a required driver did
    not filter (git dies there); otherwise a failed filter leaves the
    converted content as it is."""
    data = convert_to_working_tree(ca, data, oid_hex, path, eol, on_error)
    if drv is None:
        return data
    out = runner.smudge(drv, path, data, oid_hex)
    if out is None:
        if drv.required:
            raise SmudgeFailed(f"{path.decode('utf-8', 'replace')}: smudge filter "
                               f"{drv.name.decode('utf-8', 'replace')} failed")
        return data
    return out
