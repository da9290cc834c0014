"""Content conversion for the working tree, as git's ``convert.c`` does it.

``convert_to_working_tree`` mirrors ``convert_to_working_tree_ca`` for what a
checkout worker is sent: ident, then end-of-line, then working-tree-encoding
(filters never reach a worker). The statistics of ``gather_stats`` are taken
with ``bytes.count`` and ``bytes.translate`` instead of a byte loop, so the
conversion runs at C speed, and an item that asks for no conversion never
calls into this module's slow paths at all (see :func:`needs_conversion`).
"""

from __future__ import annotations

import codecs

from .wire import ConvertCrlfAction as A

__all__ = [
    "EolConfig",
    "convert_to_working_tree",
    "gather_stats",
    "needs_conversion",
]

_AUTO = frozenset((A.CRLF_AUTO, A.CRLF_AUTO_INPUT, A.CRLF_AUTO_CRLF))

# Bytes gather_stats counts as non-printable: controls other than BS, HT, ESC,
# FF, CR, LF; and DEL. NUL is among them (and also counted on its own).
_NONPRINTABLE = bytes(c for c in range(32) if c not in (8, 9, 10, 12, 13, 27)) + b"\x7f"


class EolConfig:
    """``core.autocrlf`` and ``core.eol`` as the worker reads them (config.c).

    ``autocrlf`` is ``"true"``, ``"false"`` or ``"input"``; ``eol`` is
    ``"lf"``, ``"crlf"``, ``"native"`` or ``None`` (unset). Native is LF here.
    """

    __slots__ = ("autocrlf", "eol")

    def __init__(self, autocrlf: str = "false", eol: str | None = None) -> None:
        self.autocrlf = autocrlf
        self.eol = eol

    def text_eol_is_crlf(self) -> bool:
        """``text_eol_is_crlf``: what TEXT and AUTO resolve to."""
        if self.autocrlf == "true":
            return True
        if self.autocrlf == "input":
            return False
        return self.eol == "crlf"


def output_eol_is_crlf(crlf_action: int, eol: EolConfig) -> bool:
    """``output_eol(crlf_action) == EOL_CRLF``."""
    if crlf_action in (A.CRLF_TEXT_CRLF, A.CRLF_UNDEFINED, A.CRLF_AUTO_CRLF):
        return True
    if crlf_action in (A.CRLF_TEXT, A.CRLF_AUTO):
        return eol.text_eol_is_crlf()
    return False  # BINARY, TEXT_INPUT, AUTO_INPUT


def needs_conversion(crlf_action: int, ident: int, encoding: bytes | None, eol: EolConfig) -> bool:
    """Whether any step could change the content; False means write it as is."""
    return bool(ident or encoding) or output_eol_is_crlf(crlf_action, eol)


class TextStat:
    __slots__ = ("nul", "lonecr", "lonelf", "crlf", "printable", "nonprintable")


def gather_stats(buf: bytes) -> TextStat:
    """``gather_stats``, counted with C-speed bytes methods."""
    s = TextStat()
    size = len(buf)
    crlf = buf.count(b"\r\n")
    cr = buf.count(b"\r")
    lf = buf.count(b"\n")
    nonprintable = size - len(buf.translate(None, _NONPRINTABLE))
    if size and buf[-1] == 0x1A:  # a final Ctrl-Z (EOF) is not counted
        nonprintable -= 1
    s.crlf = crlf
    s.lonecr = cr - crlf
    s.lonelf = lf - crlf
    s.nul = buf.count(b"\0")
    s.nonprintable = nonprintable
    # Every byte is one of: CR, LF, non-printable, printable (a final Ctrl-Z
    # is neither of the last two).
    s.printable = size - cr - lf - (size - len(buf.translate(None, _NONPRINTABLE)))
    return s


def convert_is_binary(s: TextStat) -> bool:
    """``convert_is_binary``: lone CR, NUL, or more than 1/128 non-printable."""
    return bool(s.lonecr or s.nul or (s.printable >> 7) < s.nonprintable)


def will_convert_lf_to_crlf(s: TextStat, crlf_action: int) -> bool:
    """``will_convert_lf_to_crlf`` (output is already known to be CRLF)."""
    if not s.lonelf:
        return False
    if crlf_action in _AUTO and (s.lonecr or s.crlf or convert_is_binary(s)):
        return False
    return True


def crlf_to_worktree(src: bytes, crlf_action: int, eol: EolConfig) -> bytes:
    """``crlf_to_worktree``: turn lone LFs into CRLF when the action asks."""
    if not src or not output_eol_is_crlf(crlf_action, eol):
        return src
    if not will_convert_lf_to_crlf(gather_stats(src), crlf_action):
        return src
    # Every CRLF back to LF, then every LF to CRLF: lone CRs are untouched and
    # only lone LFs change, as in git's memchr loop.
    return src.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def count_ident(src: bytes) -> int:
    """``count_ident``: the number of ``$Id$`` / ``$Id: ...$`` keywords."""
    cnt = 0
    size = len(src)
    i = src.find(b"$")
    while i != -1:
        j = i + 1
        if size - j < 3:
            break
        if src[j : j + 2] != b"Id":
            i = src.find(b"$", j)
            continue
        ch = src[j + 2]
        j += 3
        if ch == 0x24:  # "$Id$"
            cnt += 1
        elif ch == 0x3A:  # "$Id:" up to the closing "$", unless a LF comes first
            d = src.find(b"$", j)
            n = src.find(b"\n", j)
            if d != -1 and (n == -1 or d < n):
                cnt += 1
                j = d + 1
            elif n != -1:
                j = n + 1
            else:
                j = size
        i = src.find(b"$", j)
    return cnt


def ident_to_worktree(src: bytes, oid_hex: bytes) -> bytes:
    """``ident_to_worktree``: expand keywords to ``$Id: <oid> $``.

    The id is the blob's own object id, which is what git hashes ``src`` to.
    """
    if not count_ident(src):
        return src
    out = []
    size = len(src)
    pos = 0
    while True:
        dollar = src.find(b"$", pos)
        if dollar == -1:
            break
        out.append(src[pos : dollar + 1])
        pos = dollar + 1
        if size - pos < 3 or src[pos : pos + 2] != b"Id":
            continue
        ch = src[pos + 2]
        if ch == 0x24:
            pos += 3
        elif ch == 0x3A:
            close = src.find(b"$", pos + 3)
            if close == -1:
                break
            if src.find(b"\n", pos + 3, close) != -1:
                continue
            spc = src.find(b" ", pos + 4, close)
            if spc != -1 and spc < close - 1:
                continue  # a foreign ident ("$Id: file.c,v 1.2 ... $"): keep
            pos = close + 1
        else:
            continue
        out.append(b"Id: " + oid_hex + b" $")
    out.append(src[pos:])
    return b"".join(out)


# git spells a few encodings its own way; iconv knows aliases Python lacks.
_BOM_ENCODINGS = {
    "UTF-16LE-BOM": ("utf-16-le", codecs.BOM_UTF16_LE),
    "UTF-16BE-BOM": ("utf-16-be", codecs.BOM_UTF16_BE),
    "UTF-32LE-BOM": ("utf-32-le", codecs.BOM_UTF32_LE),
    "UTF-32BE-BOM": ("utf-32-be", codecs.BOM_UTF32_BE),
}


class EncodingError(Exception):
    """git's ``failed to encode '<path>' from UTF-8 to <enc>``."""


def encode_to_worktree(src: bytes, encoding: bytes, path: bytes) -> bytes:
    """``encode_to_worktree``: re-encode UTF-8 content to ``encoding``.

    Raises :class:`EncodingError` with git's message when iconv would fail
    (unknown encoding, invalid UTF-8, unencodable character); the caller then
    writes the content unconverted, as git does.
    """
    if not src:
        return src
    name = encoding.decode("ascii", "replace")
    try:
        text = src.decode("utf-8")
        special = _BOM_ENCODINGS.get(name.upper())
        if special:
            return special[1] + text.encode(special[0])
        return text.encode(name)
    except (LookupError, UnicodeError, ValueError):
        raise EncodingError(
            f"failed to encode '{path.decode('utf-8', 'replace')}' from UTF-8 to {name}"
        ) from None


def convert_to_working_tree(
    src: bytes,
    crlf_action: int,
    ident: int,
    encoding: bytes | None,
    oid_hex: bytes,
    path: bytes,
    eol: EolConfig,
    on_error=None,
) -> bytes:
    """``convert_to_working_tree_ca`` without filters: ident, eol, encoding."""
    if ident:
        src = ident_to_worktree(src, oid_hex)
    src = crlf_to_worktree(src, crlf_action, eol)
    if encoding:
        try:
            src = encode_to_worktree(src, encoding, path)
        except EncodingError as e:
            if on_error is not None:
                on_error(str(e))
    return src
