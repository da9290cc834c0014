"""The small write and message helpers every module shares (``wrapper.c``).

One ``write_in_full`` for files, helper results, filter input and the index,
and one way to show a path in a one-line message.
"""

from __future__ import annotations

import os

__all__ = ["WRITE_CHUNK", "keep_mmap_threshold", "list_dir", "rename_tempfile", "show_path", "unfix_mmap_threshold",
           "write_in_full", "write_locked"]

#: Above this size a plain item is written in slices of this many bytes, so
#: one write() never holds more than this of a large blob at a time.
WRITE_CHUNK = 1 << 23


#: glibc's ``mallopt`` parameters, and the thresholds its adjusting moves
#: between: a block of ``M_MMAP_THRESHOLD`` bytes or more is mapped on its
#: own and given back to the system when freed; free memory above
#: ``M_TRIM_THRESHOLD`` at the heap's top is given back.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
DEFAULT_MMAP_THRESHOLD_MIN = 128 * 1024
DEFAULT_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024

_mmap_threshold_fixed = False


def _mallopt(*settings: tuple[int, int]) -> bool:
    import ctypes  # (1.7 ms: only a program that owns its process asks)

    try:
        mallopt = ctypes.CDLL(None).mallopt
        return all(mallopt(param, value) == 1 for param, value in settings)
    except (OSError, AttributeError):  # no glibc: another allocator, left as it is
        return False


def keep_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at its start value; False where there is none.

    glibc raises the threshold to the size of each mapped block the process
    frees (up to 32 MiB), and the trim threshold with it. A coordinator
    frees such blocks from the start (a dictionary of 100,000 paths outgrows
    its table a dozen times while a tree is read), so its later transients
    (a joined buffer, a table while it is copied) then come from the heap,
    whose free memory stays mapped: 10 MiB of a 100,000-file clone's peak.
    Children forked after this undo it (:func:`unfix_mmap_threshold`)."""
    global _mmap_threshold_fixed
    _mmap_threshold_fixed = _mallopt((M_MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD_MIN))
    return _mmap_threshold_fixed


def unfix_mmap_threshold() -> None:
    """After :func:`keep_mmap_threshold`, in a process about to write files
    (a forked helper, or a coordinator writing them itself): the thresholds
    as high as glibc's adjusting takes them. A writer allocates and frees a
    blob's buffers item after item; mapping each large one afresh made a
    switch of git.git 1-3% slower."""
    if _mmap_threshold_fixed:
        _mallopt((M_MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD_MAX), (M_TRIM_THRESHOLD, 2 * DEFAULT_MMAP_THRESHOLD_MAX))


def show_path(path: bytes) -> str:
    """``path`` for a one-line message: invalid UTF-8 and control bytes escaped."""
    text = path.decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def list_dir(path):
    """The names in directory ``path`` (``str`` or ``bytes``, as ``os.listdir``),
    none when it cannot be read: its callers treat a missing or unreadable
    directory as an empty one."""
    try:
        return os.listdir(path)
    except OSError:
        return []


def write_in_full(fd: int, data: bytes) -> None:
    """``write_in_full`` (wrapper.c): loop over short writes, in bounded slices.
    The one place this project writes a buffer to a descriptor."""
    n = len(data)
    if n <= WRITE_CHUNK:
        done = os.write(fd, data)
        if done == n:
            return
    else:
        done = 0
    view = memoryview(data)
    while done < n:
        done += os.write(fd, view[done : done + WRITE_CHUNK])


def rename_tempfile(fd: int, tmp, path, data: bytes, mode: int | None = None) -> None:
    """``tempfile.c``'s write-then-``rename_tempfile``: ``data`` into the
    open temporary file ``tmp`` (``fd``), its mode set when given, then
    renamed to ``path``, so a reader sees the old file or the whole new one;
    on any failure the temporary file is closed and removed."""
    try:
        write_in_full(fd, data)
        if mode is not None:
            os.fchmod(fd, mode)
        os.close(fd)
        fd = -1
        os.rename(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_locked(path: str, data: bytes, mode: int | None = None) -> None:
    """``lockfile.c``'s ``hold_lock_file_for_update`` then ``commit_lock_file``:
    ``data`` into ``<path>.lock``, made exclusively (FileExistsError when
    another writer holds it), then renamed over ``path``; the lock removed
    on any failure (:func:`rename_tempfile`)."""
    lock = path + ".lock"
    rename_tempfile(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), lock, path, data, mode)
