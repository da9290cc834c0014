"""working-tree-encoding, as git 2.39's ``convert.c`` and ``utf8.c`` do it.

Checkout re-encodes UTF-8 blobs to the attribute's encoding
(``encode_to_worktree``); the modification checks of a checkout read a file
back to UTF-8 (``encode_to_git``, with ``validate_encoding``'s BOM rules).
Both go through iconv as git calls it: a Python codec where
:mod:`.iconv_names` has one verified against glibc for the name (writing),
else the C library's ``iconv`` itself (see :func:`reencoder`). A conversion
that fails is reported with git's message and the content stays as it was,
as git leaves it.
"""

from __future__ import annotations

import codecs
import errno
import re
import sys
from collections.abc import Callable

__all__ = ["EncodingError", "encode_to_git", "encode_to_worktree", "glibc_charset", "python_encoder", "reencoder"]



class EncodingError(Exception):
    """git's ``failed to encode '<path>' from UTF-8 to <enc>``."""


def _same_utf_encoding(a: str, b: str) -> bool:
    """``same_utf_encoding``: both start with "utf" and match after an optional "-"."""
    if a[:3].lower() != "utf" or b[:3].lower() != "utf":
        return False
    a, b = a[3:], b[3:]
    if a.startswith("-"):
        a = a[1:]
    if b.startswith("-"):
        b = b[1:]
    return a.lower() == b.lower()


def _fallback_encoding(name: str) -> str:
    """``fallback_encoding``: git's second try when iconv_open fails."""
    if _same_utf_encoding("utf-8", name):
        return "UTF-8"
    if name.lower() == "latin-1":
        return "ISO-8859-1"
    return name


_GLIBC_NAME_CHARS = re.compile(r"[^A-Za-z0-9_\-.,:]")
_ICONV_TABLE: dict[str, str] | None = None


def _iconv_table() -> dict[str, str]:
    global _ICONV_TABLE
    if _ICONV_TABLE is None:
        from .iconv_names import ICONV_CODECS

        table = {}
        for codec, names in ICONV_CODECS.items():
            for name in names.split():
                table[name] = codec
        _ICONV_TABLE = table
    return _ICONV_TABLE


def glibc_charset(name: str) -> tuple[str | None, bool, bool]:
    """How glibc's ``iconv_open`` reads a "to" code: (charset, translit, ignore).

    ``gconv_parse_code``: trailing blanks, ',' and '/' go; while the code has
    two or more '/', the suffix from its last '/' or ',' is read (TRANSLIT,
    IGNORE, or ignored) and dropped. ``strip`` then keeps letters
    (upper-cased), digits, ``_-.,:`` and up to two '/'. The result names a
    conversion only when nothing but slashes follows the charset
    ("UTF-16//X" opens, "UTF-16/X" does not); charset None: it cannot.
    """
    translit = ignore = False
    code = name
    while True:
        code = code.rstrip(" \t\n\r\v\f,/")
        if code.count("/") <= 1:
            break
        cut = max(code.rfind("/"), code.rfind(","))
        suffix = code[cut:].upper()
        if suffix in ("/TRANSLIT", ",TRANSLIT"):
            translit = True
        elif suffix in ("/IGNORE", ",IGNORE"):
            ignore = True
        code = code[: cut + 1]
    parts = code.split("/", 3)[:3]  # strip() stops at the third '/'
    charset = _GLIBC_NAME_CHARS.sub("", parts[0]).upper()
    if any(_GLIBC_NAME_CHARS.sub("", p) for p in parts[1:]):
        return None, translit, ignore
    return charset, translit, ignore


def _ucs2(byteorder: str):
    codec = "utf-16-le" if byteorder == "le" else "utf-16-be"

    def encode(text: str) -> bytes:
        # glibc's UCS-2 has no surrogate pairs: anything past the BMP fails.
        if text and max(text) > "\uffff":
            raise UnicodeEncodeError("ucs-2", text, 0, 1, "beyond the BMP")
        return text.encode(codec)

    return encode


def _ucs2_bom(text: str) -> bytes:
    """glibc's UNICODE: a BOM, then UCS-2 in this machine's byte order."""
    return (codecs.BOM_UTF16_LE if sys.byteorder == "little" else codecs.BOM_UTF16_BE) + _SPECIAL_CODECS[
        "x-ucs-2-le" if sys.byteorder == "little" else "x-ucs-2-be"
    ](text)


# Encoders for glibc charsets Python has no codec for (iconv_names refers to them).
_SPECIAL_CODECS = {
    "x-ucs-2-le": _ucs2("le"),
    "x-ucs-2-be": _ucs2("be"),
    "x-ucs-2-bom": _ucs2_bom,
}


def python_encoder(codec: str):
    """A callable str -> bytes that writes ``codec`` as git's iconv call does.

    git calls ``iconv()`` once and never flushes it, so a stateful encoding
    (ISO-2022-*, ...) does not return to its initial state at the end: the
    incremental encoder with ``final=False`` does the same.
    """
    special = _SPECIAL_CODECS.get(codec)
    if special is not None:
        return special

    def encode(text: str) -> bytes:
        return codecs.getincrementalencoder(codec)("strict").encode(text, False)

    return encode


class _LibcIconv:
    """The C library's ``iconv``, called as git's ``reencode_string_iconv`` does.

    For charsets :mod:`.iconv_names` has no verified Python codec for: one
    ``iconv()`` call over the whole input, output grown on E2BIG, never
    flushed; any other error is a failure.
    """

    def __init__(self) -> None:
        import ctypes
        import ctypes.util

        self.ctypes = ctypes
        libname = ctypes.util.find_library("c")
        lib = ctypes.CDLL(libname, use_errno=True)
        lib.iconv_open.restype = ctypes.c_void_p
        lib.iconv_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.iconv.restype = ctypes.c_size_t
        pp = ctypes.POINTER(ctypes.c_char_p)
        sp = ctypes.POINTER(ctypes.c_size_t)
        lib.iconv.argtypes = [ctypes.c_void_p, pp, sp, pp, sp]
        lib.iconv_close.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.fail = ctypes.c_size_t(-1).value

    def open(self, to: bytes, frm: bytes = b"UTF-8"):
        cd = self.lib.iconv_open(to, frm)
        return None if cd is None or cd == self.fail else cd

    def convert(self, cd, data: bytes) -> bytes | None:
        ct = self.ctypes
        outalloc = len(data) + 1
        out = ct.create_string_buffer(outalloc)
        inp = ct.c_char_p(data)
        insz = ct.c_size_t(len(data))
        done = 0
        while True:
            outp = ct.c_char_p(ct.addressof(out) + done)
            outsz = ct.c_size_t(outalloc - done - 1)
            r = self.lib.iconv(cd, ct.byref(inp), ct.byref(insz), ct.byref(outp), ct.byref(outsz))
            done = outalloc - 1 - outsz.value
            if r != self.fail:
                return out.raw[:done]
            if ct.get_errno() != errno.E2BIG:
                return None
            outalloc = done + insz.value * 2 + 32
            grown = ct.create_string_buffer(outalloc)
            ct.memmove(grown, out, done)
            out = grown

    def close(self, cd) -> None:
        self.lib.iconv_close(cd)


_LIBC_ICONV: _LibcIconv | None | bool = False


def _libc_iconv() -> _LibcIconv | None:
    global _LIBC_ICONV
    if _LIBC_ICONV is False:
        try:
            _LIBC_ICONV = _LibcIconv()
        except (ImportError, OSError, AttributeError, TypeError):
            _LIBC_ICONV = None
    return _LIBC_ICONV  # type: ignore[return-value]


def _python_reencoder(bom: bytes, codec: str, iconv_name: bytes):
    """UTF-8 -> ``codec`` with Python, for input Python reads as glibc does.

    Input that is not strict UTF-8 goes to the C library's iconv under
    ``iconv_name``: glibc's decoder has its own rules there (it reads 4-byte
    forms up to U+1FFFFF, which its UCS-4 writes; //IGNORE skips bytes).
    """
    encode = python_encoder(codec)

    def reencode(src: bytes) -> bytes | None:
        try:
            text = src.decode("utf-8")
        except UnicodeDecodeError:
            iconv = _libc_iconv()
            if iconv is None:
                return None
            out = _libc_reencoder(iconv, iconv_name)(src)
            return None if out is None else bom + out
        try:
            return bom + encode(text)
        except (UnicodeError, ValueError):
            return None

    return reencode


def _libc_reencoder(iconv: _LibcIconv, to: bytes):
    def reencode(src: bytes) -> bytes | None:
        cd = iconv.open(to)
        if cd is None:
            return None
        try:
            return iconv.convert(cd, src)
        finally:
            iconv.close(cd)

    return reencode


_REENCODERS: dict[bytes, object] = {}


def reencoder(encoding: bytes):
    """``reencode_string_len`` from UTF-8 to ``encoding``: a callable bytes ->
    bytes (None when the conversion fails), or None when iconv would not open.

    ``UTF-16LE-BOM`` / ``UTF-16BE-BOM`` (in any of git's spellings) are git's
    own: the BOM, then UTF-16LE / UTF-16BE. Anything else is iconv's: the
    Python codec :mod:`.iconv_names` verified for glibc's name, else (and for
    names with //TRANSLIT or //IGNORE, whose effects depend on glibc and the
    locale) the C library's iconv itself; then the same for git's
    ``fallback_encoding``.
    """
    if encoding in _REENCODERS:
        return _REENCODERS[encoding]
    name = encoding.decode("utf-8", "surrogateescape")
    found = None
    if _same_utf_encoding("UTF-16LE-BOM", name):
        found = _python_reencoder(codecs.BOM_UTF16_LE, "utf-16-le", b"UTF-16LE")
    elif _same_utf_encoding("UTF-16BE-BOM", name):
        found = _python_reencoder(codecs.BOM_UTF16_BE, "utf-16-be", b"UTF-16BE")
    else:
        table = _iconv_table()
        for candidate in dict.fromkeys((name, _fallback_encoding(name))):
            raw = candidate.encode("utf-8", "surrogateescape")
            charset, translit, ignore = glibc_charset(candidate)
            codec = table.get(charset) if charset and not (translit or ignore) else None
            if codec is not None:
                found = _python_reencoder(b"", codec, raw)
                break
            iconv = _libc_iconv()
            if iconv is not None:
                cd = iconv.open(raw)
                if cd is not None:
                    iconv.close(cd)
                    found = _libc_reencoder(iconv, raw)
                    break
    if len(_REENCODERS) < 64:
        _REENCODERS[encoding] = found
    return found


def encode_to_worktree(src: bytes, encoding: bytes, path: bytes) -> bytes:
    """``encode_to_worktree``: re-encode UTF-8 content to ``encoding``.

    Raises :class:`EncodingError` with git's message when iconv would fail
    (unknown encoding, invalid UTF-8, a character the encoding lacks); the
    caller then writes the content unconverted, as git does. Empty content
    is returned as is.
    """
    if not src:
        return src
    encoding = encoding.split(b"\0", 1)[0]  # git hands iconv a C string
    reencode = reencoder(encoding)
    out = reencode(src) if reencode is not None else None
    if out is None:
        name = encoding.decode("utf-8", "surrogateescape")
        raise EncodingError(
            f"failed to encode '{path.decode('utf-8', 'surrogateescape')}' from UTF-8 to {name}"
        )
    return out


# Reading back (``encode_to_git``): Python codecs that decode as glibc's
# iconv does for these names; any other goes to the C library's iconv.
_DECODERS = {"UTF-16": "utf-16", "UTF-16LE": "utf-16-le", "UTF-16BE": "utf-16-be", "UTF-32": "utf-32",
             "UTF-32LE": "utf-32-le", "UTF-32BE": "utf-32-be", "UTF-8": "utf-8"}
_UTF16_BOMS = (codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE)
_UTF32_BOMS = (codecs.BOM_UTF32_BE, codecs.BOM_UTF32_LE)


def _validate_encoding(path: str, enc: str, data: bytes) -> list[str]:
    """``validate_encoding``: the hint and error lines for a BOM a UTF encoding forbids or needs."""
    if enc[:3].upper() != "UTF":
        return []
    stripped = enc[3:]
    if stripped.startswith("-"):
        stripped = stripped[1:]
    if (any(_same_utf_encoding(e, enc) for e in ("UTF-16BE", "UTF-16LE")) and data.startswith(_UTF16_BOMS)) or (
        any(_same_utf_encoding(e, enc) for e in ("UTF-32BE", "UTF-32LE")) and data.startswith(_UTF32_BOMS)
    ):
        return [f"hint: The file '{path}' contains a byte order mark (BOM). Please use UTF-{stripped[:-2]} as "
                "working-tree-encoding.", f"error: BOM is prohibited in '{path}' if encoded as {enc}"]
    if (_same_utf_encoding(enc, "UTF-16") and not data.startswith(_UTF16_BOMS)) or (
        _same_utf_encoding(enc, "UTF-32") and not data.startswith(_UTF32_BOMS)
    ):
        return [f"hint: The file '{path}' is missing a byte order mark (BOM). Please use UTF-{stripped}BE or "
                f"UTF-{stripped}LE (depending on the byte order) as working-tree-encoding.",
                f"error: BOM is required in '{path}' if encoded as {enc}"]
    return []


def _reencode_to_utf8(src: bytes, enc: str) -> bytes | None | bool:
    """``reencode_string_len(src, "UTF-8", enc)``: the UTF-8 bytes, None when
    iconv fails, False when neither Python nor the C library can tell."""
    if _same_utf_encoding("UTF-16LE-BOM", enc):
        enc = "UTF-16"  # "the same as UTF-16 for reading"
    iconv = _libc_iconv()
    for name in dict.fromkeys((enc, _fallback_encoding(enc))):
        codec = _DECODERS.get(name.upper())
        if codec is not None:
            try:
                return src.decode(codec).encode("utf-8")
            except UnicodeError:
                return None
        if iconv is None:
            continue
        cd = iconv.open(b"UTF-8", name.encode("utf-8", "surrogateescape"))
        if cd is not None:
            try:
                return iconv.convert(cd, src)
            finally:
                iconv.close(cd)
    return None if iconv is not None else False


def encode_to_git(src: bytes, encoding: bytes, path: bytes, say: Callable[[str], None]) -> bytes | None:
    """``encode_to_git`` as a modification check calls it (not writing an object).

    ``src`` read from ``encoding`` into UTF-8. A BOM the encoding forbids or
    lacks, or a conversion iconv refuses, is reported through ``say`` with
    git's lines and ``src`` comes back unchanged, as git then hashes the file
    as it is. None: this machine cannot tell (no iconv for the name).
    """
    if not src:
        return src
    enc = encoding.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
    shown = path.decode("utf-8", "surrogateescape")
    lines = _validate_encoding(shown, enc, src)
    if lines:
        for line in lines:
            say(line)
        return src
    out = _reencode_to_utf8(src, enc)
    if out is False:
        return None
    if out is None:
        say(f"error: failed to encode '{shown}' from {enc} to UTF-8")
        return src
    return out
