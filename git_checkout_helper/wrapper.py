"""The small write and message helpers every module shares (``wrapper.c``).

One ``write_in_full`` for files, helper results, filter input and the index,
and one way to show a path in a one-line message.
"""

from __future__ import annotations

import os

__all__ = ["WRITE_CHUNK", "list_dir", "rename_tempfile", "show_path", "write_in_full", "write_locked"]

#: Above this size a plain item is written in slices of this many bytes, so
#: one write() never holds more than this of a large blob at a time.
WRITE_CHUNK = 1 << 23


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
