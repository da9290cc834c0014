"""Adding settings to a config file as ``git config`` does (``config.c``'s
``git_config_set_multivar_in_file`` for new keys): the file's bytes are kept
as they are and a new section is appended, under ``<file>.lock`` renamed
into place. A round trip through a parser would rewrite every other value
(dulwich's writer drops the quotes around values holding ``;`` or ``#``,
which turns the rest of such a value into a comment).
"""

from __future__ import annotations

import os

__all__ = ["append_section", "quote_value", "set_branch_upstream"]


def quote_value(value: bytes) -> bytes:
    """A value as ``write_pair`` writes it: quoted when it has ``;``, ``#``,
    or leading/trailing blanks; ``\\``, ``"`` and control characters escaped."""
    out = value.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n").replace(b"\t", b"\\t")
    if value[:1].isspace() or value[-1:].isspace() or b";" in value or b"#" in value:
        return b'"' + out + b'"'
    return out


def _subsection(name: bytes) -> bytes:
    return b'"' + name.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def append_section(path: str, section: bytes, subsection: bytes | None, items: list[tuple[bytes, bytes]]) -> None:
    """Append ``[section "subsection"]`` with ``items`` to the config at ``path``."""
    lock = path + ".lock"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = b""
    if data and not data.endswith(b"\n"):
        data += b"\n"
    head = b"[" + section + (b" " + _subsection(subsection) if subsection is not None else b"") + b"]\n"
    data += head + b"".join(b"\t" + k + b" = " + quote_value(v) + b"\n" for k, v in items)
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            os.write(fd, data)
            mode = os.stat(path).st_mode & 0o7777 if os.path.exists(path) else None
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(lock, path)
    except BaseException:
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass
        raise


def set_branch_upstream(path: str, branch: bytes, remote: bytes, merge: bytes) -> None:
    """``install_branch_config``: ``branch.<name>.remote`` and ``.merge``. A
    new section is appended (every other byte kept); an existing one is
    rewritten through dulwich, which keeps it only as dulwich writes it."""
    from dulwich.config import ConfigFile

    cf = ConfigFile.from_path(path)
    if (b"branch", branch) not in cf.sections():
        append_section(path, b"branch", branch, [(b"remote", remote), (b"merge", merge)])
        return
    cf.set((b"branch", branch), b"remote", remote)
    cf.set((b"branch", branch), b"merge", merge)
    cf.write_to_path(path)
