"""Adding settings to a config file as ``git config`` does (``config.c``'s
``git_config_set_multivar_in_file`` for new keys): the file's bytes are kept
as they are and a new section is appended, under ``<file>.lock`` renamed
into place. A round trip through a parser would rewrite every other value
(dulwich's writer drops the quotes around values holding ``;`` or ``#``,
which turns the rest of such a value into a comment).
"""

from __future__ import annotations

import os

from .wrapper import write_locked

__all__ = ["append_section", "enable_worktree_config", "format_section", "quote_value", "set_branch_upstream"]


def quote_value(value: bytes) -> bytes:
    """A value as ``write_pair`` writes it: quoted when it has ``;``, ``#``,
    or leading/trailing blanks; ``\\``, ``"`` and control characters escaped."""
    out = value.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n").replace(b"\t", b"\\t")
    if value[:1].isspace() or value[-1:].isspace() or b";" in value or b"#" in value:
        return b'"' + out + b'"'
    return out


def _subsection(name: bytes) -> bytes:
    return b'"' + name.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return b""
    return data if not data or data.endswith(b"\n") else data + b"\n"


def format_section(section: bytes, subsection: bytes | None, items: list[tuple[bytes, bytes]]) -> bytes:
    """``[section "subsection"]`` and its ``items`` as git writes them."""
    head = b"[" + section + (b" " + _subsection(subsection) if subsection is not None else b"") + b"]\n"
    return head + b"".join(b"\t" + k + b" = " + quote_value(v) + b"\n" for k, v in items)


def append_section(path: str, section: bytes, subsection: bytes | None, items: list[tuple[bytes, bytes]]) -> None:
    """Append ``[section "subsection"]`` with ``items`` to the config at ``path``."""
    _replace(path, _read(path) + format_section(section, subsection, items))


def enable_worktree_config(path: str) -> None:
    """``extensions.worktreeConfig = true`` as the clone's ``git sparse-checkout
    set`` leaves it: first in an ``[extensions]`` section, else in a new one
    before the first ``[branch ...]`` section (which a clone writes later),
    else at the end."""
    lines = _read(path).splitlines(keepends=True)
    key = b"\tworktreeConfig = true\n"
    at = next((i + 1 for i, line in enumerate(lines) if line.strip().lower() == b"[extensions]"), None)
    if at is None:
        key = b"[extensions]\n" + key
        at = next((i for i, line in enumerate(lines) if line.lstrip().lower().startswith(b"[branch")), len(lines))
    _replace(path, b"".join(lines[:at]) + key + b"".join(lines[at:]))


def _replace(path: str, data: bytes) -> None:
    """``data`` into ``path`` under ``<path>.lock`` (:func:`wrapper.write_locked`), its mode kept."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    write_locked(path, data, mode)


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
