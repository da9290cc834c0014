"""EWAH compressed bitmaps as git stores them in the index (``ewah/``).

The split index (``link``: delete and replace bitmaps), the untracked cache
and the fsmonitor extension store bitmaps in git's EWAH layout
(``ewah_io.c`` ``ewah_serialize_to`` / ``ewah_read_mmap``): a 32-bit bit
count, a 32-bit count of 64-bit words, the words (big-endian), and the
32-bit position of the last run-length word. A run-length word (RLW) holds
the run bit (bit 0), the running length (bits 1-32: that many words all of
the run bit) and the number of literal words that follow it (bits 33-63).

:class:`EwahBuilder` sets bits in increasing order exactly as
``ewah_bitmap.c`` ``ewah_set`` does, so a bitmap we write is byte for byte
the one git would write for the same positions.
"""

from __future__ import annotations

import struct

__all__ = ["EwahBuilder", "EwahError", "ewah_bits", "ewah_read", "ewah_serialize"]

_BITS = 64
_WORD = (1 << 64) - 1
_RUNNING_BITS = 32
_LITERAL_BITS = 64 - 1 - _RUNNING_BITS
_LARGEST_RUNNING = (1 << _RUNNING_BITS) - 1
_LARGEST_LITERAL = (1 << _LITERAL_BITS) - 1


class EwahError(ValueError):
    """A corrupt bitmap (``ewah_read_mmap``'s words)."""


def _run_bit(w: int) -> int:
    return w & 1


def _running_len(w: int) -> int:
    return (w >> 1) & _LARGEST_RUNNING


def _literal_words(w: int) -> int:
    return w >> (1 + _RUNNING_BITS)


def _set_run_bit(w: int, b: int) -> int:
    return (w | 1) if b else (w & ~1 & _WORD)


def _set_running_len(w: int, n: int) -> int:
    return (w & ~(_LARGEST_RUNNING << 1) & _WORD) | (n << 1)


def _set_literal_words(w: int, n: int) -> int:
    return (w & ((1 << (_RUNNING_BITS + 1)) - 1)) | (n << (_RUNNING_BITS + 1))


def ewah_read(data: bytes | memoryview, offset: int = 0) -> tuple[int, list[int], int, int]:
    """``ewah_read_mmap``: (bit size, words, rlw position, bytes consumed)."""
    end = len(data)
    if end - offset < 4:
        raise EwahError("corrupt ewah bitmap: eof before bit size")
    bit_size = struct.unpack_from(">I", data, offset)[0]
    if end - offset < 8:
        raise EwahError("corrupt ewah bitmap: eof before length")
    n = struct.unpack_from(">I", data, offset + 4)[0]
    if end - offset - 8 < n * 8:
        raise EwahError(f"corrupt ewah bitmap: eof in data ({n * 8 - (end - offset - 8)} bytes short)")
    words = list(struct.unpack_from(f">{n}Q", data, offset + 8))
    pos = offset + 8 + n * 8
    if end - pos < 4:
        raise EwahError("corrupt ewah bitmap: eof before rlw")
    rlw = struct.unpack_from(">I", data, pos)[0]
    return bit_size, words, rlw, pos + 4 - offset


def ewah_bits(words: list[int]) -> list[int]:
    """``ewah_each_bit``: the positions set, in increasing order."""
    out: list[int] = []
    pos = 0
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        run = _running_len(w) * _BITS
        if _run_bit(w):
            out.extend(range(pos, pos + run))
        pos += run
        i += 1
        for _ in range(_literal_words(w)):
            if i >= n:
                raise EwahError("corrupt ewah bitmap: literal words past the end")
            lit = words[i]
            while lit:
                low = lit & -lit
                out.append(pos + low.bit_length() - 1)
                lit ^= low
            pos += _BITS
            i += 1
    return out


class EwahBuilder:
    """``ewah_new`` + ``ewah_set`` for increasing positions."""

    def __init__(self) -> None:
        self.buffer = [0]
        self.rlw = 0
        self.bit_size = 0

    # -- ewah_bitmap.c helpers, same names --------------------------------
    def _push(self, value: int) -> None:
        self.buffer.append(value)

    def _push_rlw(self, value: int) -> None:
        self.buffer.append(value)
        self.rlw = len(self.buffer) - 1

    def _add_empty_words(self, v: int, number: int) -> None:
        b = self.buffer
        w = b[self.rlw]
        if _run_bit(w) != v and _running_len(w) + _literal_words(w) == 0:
            b[self.rlw] = _set_run_bit(w, v)
        elif _literal_words(w) != 0 or _run_bit(w) != v:
            self._push_rlw(0)
            if v:
                b[self.rlw] = _set_run_bit(b[self.rlw], v)
        runlen = _running_len(b[self.rlw])
        can_add = min(number, _LARGEST_RUNNING - runlen)
        b[self.rlw] = _set_running_len(b[self.rlw], runlen + can_add)
        number -= can_add
        while number >= _LARGEST_RUNNING:
            self._push_rlw(0)
            if v:
                b[self.rlw] = _set_run_bit(b[self.rlw], v)
            b[self.rlw] = _set_running_len(b[self.rlw], _LARGEST_RUNNING)
            number -= _LARGEST_RUNNING
        if number > 0:
            self._push_rlw(0)
            if v:
                b[self.rlw] = _set_run_bit(b[self.rlw], v)
            b[self.rlw] = _set_running_len(b[self.rlw], number)

    def _add_literal(self, data: int) -> None:
        b = self.buffer
        cur = _literal_words(b[self.rlw])
        if cur >= _LARGEST_LITERAL:
            self._push_rlw(0)
            b[self.rlw] = _set_literal_words(b[self.rlw], 1)
            self._push(data)
            return
        b[self.rlw] = _set_literal_words(b[self.rlw], cur + 1)
        self._push(data)

    def _add_empty_word(self, v: int) -> None:
        b = self.buffer
        w = b[self.rlw]
        no_literal = _literal_words(w) == 0
        run_len = _running_len(w)
        if no_literal and run_len == 0:
            w = b[self.rlw] = _set_run_bit(w, v)
        if no_literal and _run_bit(w) == v and run_len < _LARGEST_RUNNING:
            b[self.rlw] = _set_running_len(w, run_len + 1)
            return
        self._push_rlw(0)
        b[self.rlw] = _set_running_len(_set_run_bit(0, v), 1)

    def set(self, i: int) -> None:
        """``ewah_set``: ``i`` must not be below a position already set."""
        if i < self.bit_size:
            raise ValueError("ewah positions must be set in increasing order")
        dist = (i + 1 + _BITS - 1) // _BITS - (self.bit_size + _BITS - 1) // _BITS
        self.bit_size = i + 1
        bit = 1 << (i % _BITS)
        b = self.buffer
        if dist > 0:
            if dist > 1:
                self._add_empty_words(0, dist - 1)
            self._add_literal(bit)
            return
        if _literal_words(b[self.rlw]) == 0:
            b[self.rlw] = _set_running_len(b[self.rlw], _running_len(b[self.rlw]) - 1)
            self._add_literal(bit)
            return
        b[-1] |= bit
        if b[-1] == _WORD:
            b.pop()
            b[self.rlw] = _set_literal_words(b[self.rlw], _literal_words(b[self.rlw]) - 1)
            self._add_empty_word(1)

    def serialize(self) -> bytes:
        """``ewah_serialize_strbuf``."""
        n = len(self.buffer)
        return struct.pack(f">II{n}QI", self.bit_size & 0xFFFFFFFF, n, *self.buffer, self.rlw)


def ewah_serialize(positions) -> bytes:
    """The bytes git writes for a bitmap with ``positions`` set (increasing)."""
    b = EwahBuilder()
    for p in positions:
        b.set(p)
    return b.serialize()
