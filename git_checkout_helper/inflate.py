"""Inflating object data: ``git_inflate`` (``zlib.c``) with the fastest inflater at hand.

git links zlib. The same streams inflate about twice as fast with ISA-L's
inflater (``isal.isal_zlib``, zlib's API and zlib's checks: the Adler-32
trailer, distances, a stream that ends early), so every object this project
reads goes through this module: pack entries and deltas (:mod:`packreader`),
loose objects and streamed blobs (:mod:`odb`). When ``isal`` cannot be
imported (a platform without its wheel), zlib does the same work with the
same results; :func:`use` chooses explicitly (the CLI layer's
``GIT_CHECKOUT_HELPER_INFLATE=zlib``, and the tests, which run both).

Measured on the pack entries (blobs and their delta chains) of git.git's
HEAD, one-shot, same run: zlib 194 ms, ISA-L 105 ms, libdeflate 89 ms
(libdeflate needs the inflated size, which a pack entry header gives, but
returns a ``bytearray`` that costs a copy to turn into ``bytes``, offers no
incremental inflater for streamed blobs, and answers an impossible size
with an empty result instead of an error), zlib-ng in between.

ISA-L's x86 code leaves the upper halves of the vector registers dirty
when it returns (no ``vzeroupper``), and the processor then runs the
interpreter's and the C library's code after it slower until something
clears them: on this project's Intel Xeon (AVX-512) a parse of a
100,000-entry index took 74 ms in a fresh process, 111-133 ms after one
ISA-L call, 73-74 ms after that call and a ``vzeroupper``. So after each
ISA-L call :func:`inflate` runs that one instruction (:func:`_upper_clearer`:
four bytes of machine code, on x86-64 with AVX only, and only where an
executable page may be mapped); a 100,000-file near switch took 0.93x
the time without it (7 paired rounds, twice), helpers and coordinator alike.
The incremental inflaters (:func:`decompressobj`: blobs streamed in pieces)
leave them dirty until the next :func:`inflate`; they are few a checkout.

Errors: a corrupt stream raises one of :data:`ERRORS` (``zlib.error`` or
ISA-L's ``IsalError``), whichever inflater is in use; :func:`inflate` adds
``ValueError`` for a stream that does not hold exactly the declared size,
as ``unpack_compressed_entry`` checks.
"""

from __future__ import annotations

import os
import zlib

__all__ = ["BACKEND", "ERRORS", "available", "decompressobj", "inflate", "use", "use_setting"]

try:
    from isal import isal_zlib as _isal
except ImportError:  # no wheel for this platform: zlib does the same work
    _isal = None

#: Exceptions a corrupt stream raises, whichever inflater is in use.
ERRORS: tuple[type[BaseException], ...] = (zlib.error,) if _isal is None else (zlib.error, _isal.error)

_backend = zlib if _isal is None else _isal
_decompress = _backend.decompress
#: The module in use: ``"isal"`` or ``"zlib"``.
BACKEND = "zlib" if _isal is None else "isal"


def available() -> list[str]:
    """The inflaters this process can use, fastest first."""
    return ["zlib"] if _isal is None else ["isal", "zlib"]


def use(name: str) -> None:
    """Inflate with ``name`` (``"isal"`` or ``"zlib"``) from now on in this process;
    ValueError when it is not available."""
    global _backend, _decompress, _clear_upper, BACKEND
    if name not in available():
        raise ValueError(f"inflater '{name}' is not available (have: {', '.join(available())})")
    _backend = _isal if name == "isal" else zlib
    _decompress = _backend.decompress
    _clear_upper = _CLEARER if name == "isal" else None
    BACKEND = name


def _upper_clearer():
    """A function running ``vzeroupper`` (see the module's text), or None:
    not x86-64, no AVX (the instruction would fault: the kernel lists
    ``avx`` only when it saves the registers' state), no ``ctypes``, or no
    executable page to be had (a hardened kernel's W^X)."""
    uname = getattr(os, "uname", None)  # (none on Windows)
    if uname is None or uname().machine not in ("x86_64", "AMD64") or b"avx" not in _cpu_flags():
        return None
    try:
        import ctypes
        import mmap

        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(b"\xc5\xf8\x77\xc3")  # vzeroupper; ret
        func = ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
    except (OSError, ImportError, ValueError, AttributeError):
        return None
    func.page = page  # (the page lives as long as the function)
    return func


def _cpu_flags() -> list[bytes]:
    """The first processor's flags as Linux lists them (none elsewhere)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            return next((line for line in f if line.startswith(b"flags")), b"").split()
    except OSError:
        return []


#: :func:`_upper_clearer`'s function (made once), and the one :func:`inflate` calls (None with zlib).
_CLEARER = _upper_clearer() if _isal is not None else None
_clear_upper = _CLEARER


def use_setting(env) -> str | None:
    """``GIT_CHECKOUT_HELPER_INFLATE=zlib|isal`` (ours) in ``env``, the
    environment the CLI layer passes in: the inflater of this process and,
    inherited, of its helpers (default: the fastest one installed). Returns
    the error message for a value it cannot honour."""
    name = env.get("GIT_CHECKOUT_HELPER_INFLATE")
    if not name:
        return None
    try:
        use(name)
    except ValueError as e:
        return f"GIT_CHECKOUT_HELPER_INFLATE: {e}"
    return None


def decompressobj():
    """An incremental inflater with zlib's ``decompressobj`` API. ISA-L's may keep
    input it has read but not yet inflated (its ``unconsumed_tail`` can be empty
    while output is pending): call ``decompress(b"", n)`` until it yields nothing."""
    return _backend.decompressobj()


def inflate(buf, pos: int, size: int) -> bytes:
    """The ``size`` bytes of the zlib stream at ``buf[pos:]`` (a memoryview of a
    pack, say; what follows the stream is ignored). One call on a window the
    stream fits in unless it compresses worse than stored blocks; otherwise, and
    on any error, the stream is inflated again piece by piece to the end of
    ``buf``, so that a window too small is never taken for corruption and real
    corruption raises what the inflater says. Output is bounded by ``size``."""
    n = size + (size >> 3) + 64
    try:
        # One byte of room beyond the size: with exactly ``size``, both
        # inflaters grow (realloc, copy) the full buffer to see the stream end.
        out = _decompress(buf[pos : pos + n], 15, size + 1)
    except ERRORS:
        out = None
    if out is None or len(out) != size:
        out = _inflate_slow(buf, pos, size)
    if _clear_upper is not None:
        _clear_upper()  # (after the slow path's ISA-L calls too)
    return out


def _inflate_slow(buf, pos: int, size: int, piece: int = 1 << 20) -> bytes:
    d = _backend.decompressobj()
    parts = []
    done = 0
    end = len(buf)
    while not d.eof:
        data = d.unconsumed_tail
        if not data and pos < end:
            data = buf[pos : pos + piece]
            pos += len(data)
        out = d.decompress(data, size + 1 - done)
        if out:
            parts.append(out)
            done += len(out)
        if done > size:
            raise ValueError("object size mismatch")
        if not data and not out:
            raise ValueError("truncated object")
    if done != size:
        raise ValueError("object size mismatch")
    return b"".join(parts)
