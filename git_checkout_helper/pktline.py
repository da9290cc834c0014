"""pkt-line framing, as git's ``pkt-line.c`` defines it.

A pkt-line is four lowercase hex digits giving the whole length (the four
digits included), then that many bytes less four of payload. ``0000`` is a
flush, ``0001`` a delimiter and ``0002`` a response end; 3 is never valid, and
no payload may exceed ``LARGE_PACKET_DATA_MAX``.

Writing is ``packet_write``: unlike dulwich's ``pkt_line`` (which this once
re-exported), a payload over ``LARGE_PACKET_DATA_MAX`` is refused, as git dies
on it, rather than given a five-digit header. Reading is our own: dulwich's
``Protocol.read_pkt_line`` issues two ``read()`` calls per pkt-line and folds
delim into flush, while a helper that reads a 5,000-item batch wants one
``os.read`` per 64 KiB and a strict view of what came in.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = [
    "DELIM",
    "FLUSH",
    "FLUSH_PKT",
    "LARGE_PACKET_DATA_MAX",
    "LARGE_PACKET_MAX",
    "RESPONSE_END",
    "PktLineError",
    "PktParser",
    "PktReader",
    "next_packet",
    "pkt_line",
]

#: git's LARGE_PACKET_MAX: the longest pkt-line, header included.
LARGE_PACKET_MAX = 65520
#: git's LARGE_PACKET_DATA_MAX: the longest payload.
LARGE_PACKET_DATA_MAX = LARGE_PACKET_MAX - 4

FLUSH_PKT = b"0000"

# Sentinels returned by PktReader.read_pkt for the special packets.
FLUSH = 0
DELIM = 1
RESPONSE_END = 2

# git writes lowercase but reads either case (packet_length uses hexval).
_HEX = frozenset(b"0123456789abcdefABCDEF")
_READ_SIZE = 1 << 16


class PktLineError(Exception):
    """A malformed pkt-line stream; the message is a one-line description."""


def pkt_line(data: bytes | None) -> bytes:
    """``packet_write``: four lowercase hex digits counting themselves, then
    ``data``; ``None`` gives a flush. Over 65516 bytes is an error, as in git."""
    if data is None:
        return FLUSH_PKT
    n = len(data)
    if n > LARGE_PACKET_DATA_MAX:
        raise PktLineError(f"packet write failed - data exceeds max packet size ({n} > {LARGE_PACKET_DATA_MAX})")
    return b"%04x" % (n + 4) + data


def packet_length(head: bytes) -> int:
    """``packet_length``: the length a 4-byte header announces, checked.

    0, 1 and 2 are the special packets; 3 and anything over
    ``LARGE_PACKET_MAX`` are errors, as are non-hex digits.
    """
    size = _LENGTHS.get(head)
    if size is not None:
        return size
    if not _HEX.issuperset(head):
        raise PktLineError(f"protocol error: bad line length character: {head.decode('latin-1')!r}")
    size = int(head, 16)
    if size == 3:
        raise PktLineError("protocol error: bad line length 3")
    if size > LARGE_PACKET_MAX:
        raise PktLineError(f"protocol error: bad line length {size}")
    if len(_LENGTHS) < _LENGTHS_KEPT:
        _LENGTHS[head] = size
    return size


#: Headers :func:`packet_length` has accepted, with their lengths: a helper
#: reads thousands of items whose headers take a few hundred values, and one
#: dictionary probe costs a seventh of the checks (0.1 µs against 0.7).
#: The first ``_LENGTHS_KEPT`` only, whatever a peer sends.
_LENGTHS: dict[bytes, int] = {}
_LENGTHS_KEPT = 4096


def next_packet(buf: bytes, pos: int) -> tuple[bytes | int, int] | None:
    """The packet at ``pos`` in ``buf`` and the position after it (payload
    ``bytes`` or a special packet's int), or None when it is not all there."""
    if len(buf) - pos < 4:
        return None
    size = packet_length(buf[pos : pos + 4])
    if size < 4:
        return size, pos + 4
    if len(buf) - pos < size:
        return None
    return buf[pos + 4 : pos + size], pos + size


class PktReader:
    """Buffered pkt-line reader over a file descriptor.

    Mirrors ``packet_read_with_status``, but reads ahead in 64 KiB blocks, so a
    batch of thousands of small items costs a handful of system calls.
    ``read_pkt`` returns the payload as ``bytes``, or one of ``FLUSH``,
    ``DELIM``, ``RESPONSE_END``; end of input is ``None``.
    """

    __slots__ = ("_fd", "_buf", "_pos", "_eof")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buf = b""
        self._pos = 0
        self._eof = False

    def _fill(self, need: int) -> bool:
        """Make ``need`` bytes available from ``_pos``; False at end of input."""
        buf = self._buf[self._pos :]
        self._pos = 0
        chunks = [buf]
        have = len(buf)
        while have < need and not self._eof:
            try:
                data = os.read(self._fd, max(_READ_SIZE, need - have))
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
            if not data:
                self._eof = True
                break
            chunks.append(data)
            have += len(data)
        self._buf = b"".join(chunks) if len(chunks) > 1 else buf
        return have >= need

    def read_pkt(self) -> bytes | int | None:
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            if not self._fill(4):
                if len(self._buf) - self._pos:
                    raise PktLineError("protocol error: end of input inside a pkt-line header")
                return None
            buf, pos = self._buf, self._pos
        size = packet_length(buf[pos : pos + 4])
        if size < 4:
            self._pos = pos + 4
            return size  # FLUSH, DELIM or RESPONSE_END
        end = pos + size
        if end > len(buf):
            if not self._fill(size):
                raise PktLineError(
                    f"protocol error: end of input inside a pkt-line of length {size}"
                )
            buf, pos = self._buf, 0
            end = size
        self._pos = end
        return buf[pos + 4 : end]

    def read_until_flush(self, convert: Callable[[bytes], object]) -> tuple[list, int | None]:
        """``convert`` of each payload up to the next special packet or the
        end of input, and what ended them: ``FLUSH`` (consumed), another
        special packet (consumed), or None at the end of input
        (``packet_read`` in a loop, the packets sliced straight from the
        buffer: a helper's batches are thousands of them). Each payload is
        converted as it is read, so that what ``convert`` raises comes
        before a framing error further on, as in git's worker."""
        out: list = []
        append = out.append
        while True:
            buf, pos = self._buf, self._pos
            n = len(buf)
            while n - pos >= 4:
                size = packet_length(buf[pos : pos + 4])
                if size < 4:
                    self._pos = pos + 4
                    return out, size
                end = pos + size
                if end > n:
                    break
                self._pos = end
                append(convert(buf[pos + 4 : end]))
                pos = end
            self._pos = pos
            got = self.read_pkt()  # the packet the buffer ends inside, or the end of input
            if got is None:
                return out, None
            if type(got) is int:
                return out, got
            append(convert(got))

    def at_eof(self) -> bool:
        """True when no byte is left to read (reads ahead if needed)."""
        if len(self._buf) - self._pos:
            return False
        return not self._fill(1)


class PktParser:
    """Incremental pkt-line parser for non-blocking reads (the coordinator).

    ``feed`` takes whatever ``os.read`` returned and gives back the complete
    packets in it: payload ``bytes`` or the ``FLUSH``/``DELIM``/``RESPONSE_END``
    ints. A partial packet waits for the next feed.
    """

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes | int]:
        buf = self.take(data)
        out: list[bytes | int] = []
        pos = 0
        while (got := next_packet(buf, pos)) is not None:
            pkt, pos = got
            out.append(pkt)
        self.keep(buf, pos)
        return out

    def take(self, data: bytes) -> bytes:
        """What was left incomplete, followed by ``data``: the bytes to parse
        now (with :func:`next_packet`); :meth:`keep` gives back the rest."""
        buf = self._buf + data if self._buf else data
        self._buf = b""
        return buf

    def keep(self, buf: bytes, pos: int) -> None:
        """``buf`` from ``pos`` on waits for the next input."""
        self._buf = buf[pos:]

    @property
    def pending(self) -> int:
        """Bytes of an incomplete packet waiting for more input."""
        return len(self._buf)
