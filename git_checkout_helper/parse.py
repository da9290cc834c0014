"""git's ``parse.c``: reading a config value as a boolean, the one rule every
module applies (the config stack, repository discovery, promisor flags).
Each caller decides what a value that is no boolean means for it."""

from __future__ import annotations

__all__ = ["git_parse_maybe_bool"]


def git_parse_maybe_bool(value: bytes | None) -> bool | None:
    """``git_parse_maybe_bool``: true/yes/on, false/no/off/empty, or a number
    (non-zero is true); a valueless key is true; None when it is none of these."""
    if value is None:
        return True
    v = value.strip().lower()
    if v in (b"true", b"yes", b"on"):
        return True
    if v in (b"false", b"no", b"off", b""):
        return False
    try:
        return int(v) != 0
    except ValueError:
        return None
