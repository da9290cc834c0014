"""Reading ``.gitattributes`` text as git 2.39's ``attr.c`` does
(``read_attr_from_file``, ``read_attr_from_index``, ``parse_attr_line``,
``parse_attr``), down to each line's pattern or macro name and its states;
:mod:`attributes` makes patterns of them, matches and stacks them.

Ours rather than ``dulwich.attrs``: importing that costs 15 to 20 ms of
every start-up (it brings ``logging``, ``dataclasses`` and ``inspect``), and
it differs from git on quoting, invalid names, overlong lines and more.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["ATTR_MAX_FILE_SIZE", "ATTR_MAX_LINE_LENGTH", "GITATTRIBUTES_FILE", "AttrFile", "attr_lines",
           "attributes_path", "is_attributes_file", "parse_attr_line", "read_attr"]

GITATTRIBUTES_FILE = b".gitattributes"  # attr.h
ATTR_MAX_LINE_LENGTH = 2048  # attr.h: a longer line is ignored (git warns)
ATTR_MAX_FILE_SIZE = 100 * 1024 * 1024  # attr.h: a larger file is ignored (git warns)
_MACRO_PREFIX = b"[attr]"
_BLANK = b" \t\r\n"  # attr.c's blank[]: not \v nor \f, which bytes.split() would take
_TOKEN = re.compile(rb"[^ \t\r\n]+")
_ATTR_NAME = re.compile(rb"[-._0-9A-Za-z]+")
_QUOTE_STOP = re.compile(rb'["\\]')
_OCTAL = re.compile(rb"[0-3][0-7][0-7]")
_C_ESCAPES = {ord(k): ord(v) for k, v in zip("abfnrtv\\\"", "\a\b\f\n\r\t\v\\\"", strict=True)}


def attributes_path(d: bytes) -> bytes:
    """The ``.gitattributes`` of directory ``d`` (b"": the top)."""
    return d + b"/" + GITATTRIBUTES_FILE if d else GITATTRIBUTES_FILE


def is_attributes_file(path: bytes) -> bool:
    """Whether ``path`` names a directory's ``.gitattributes``."""
    return path == GITATTRIBUTES_FILE or path.endswith(b"/" + GITATTRIBUTES_FILE)


class AttrFile(bytes):
    """The bytes of a ``.gitattributes`` read from a file, which a reader
    hands back to say so; plain bytes are a blob of the index. git 2.39 reads
    the two differently (``read_attr_from_file``, ``read_attr_from_index``):
    from a file it drops a UTF-8 BOM before the first line and a CR before
    each LF, and a NUL ends only its line; from a blob it keeps the BOM and
    the CR, and a NUL ends the file. ``info/attributes``, the global and the
    system files are always files."""

    __slots__ = ()


def unquote_c_style(s: bytes, i: int) -> tuple[bytes, int] | None:
    """quote.c's ``unquote_c_style`` for the string quoted at ``s[i] == '"'``:
    its text and the index after its closing quote, or None when it is
    malformed (no closing quote, an unknown escape, an octal escape that is
    not three digits from ``\\000`` to ``\\377``)."""
    out = bytearray()
    i += 1
    while True:
        m = _QUOTE_STOP.search(s, i)
        if m is None:
            return None
        j = m.start()
        out += s[i:j]
        if s[j] == 0x22:  # '"'
            return bytes(out), j + 1
        esc = _C_ESCAPES.get(s[j + 1]) if j + 1 < len(s) else None
        if esc is not None:
            out.append(esc)
            i = j + 2
        elif _OCTAL.match(s, j + 1):
            out.append(int(s[j + 1:j + 4], 8))
            i = j + 4
        else:
            return None


def attr_name_valid(name: bytes) -> bool:
    """``attr_name_valid``: not empty, no leading ``-``, only ``[-._0-9A-Za-z]``."""
    return bool(name) and name[0] != 0x2D and _ATTR_NAME.fullmatch(name) is not None


def _parse_states(text: bytes) -> list[tuple[bytes, object]] | None:
    """``parse_attr`` over the states of a line, in order: ``name`` (True),
    ``-name`` (False), ``!name`` (None: unspecified, hiding what lower lines
    say), ``name=value`` (the bytes, maybe empty; ``-name=v`` and ``!name=v``
    ignore the value). None when a name is not valid: git then drops the
    whole line (it says ``<name> is not a valid attribute name: <file>:<n>``)."""
    states = []
    for token in _TOKEN.findall(text):
        eq = token.find(b"=")
        name = token if eq == -1 else token[:eq]
        if token[0] in b"-!":
            name, value = name[1:], (False if token[0] == 0x2D else None)
        else:
            value = True if eq == -1 else token[eq + 1:]
        if not attr_name_valid(name):
            return None
        states.append((name, value))
    return states


def parse_attr_line(line: bytes, macro_ok: bool) -> tuple[bool, bytes, list] | None:
    """``parse_attr_line``: ``(is_macro, pattern or macro name, states)``, or
    None for a line git skips (blank, ``#`` comment) or drops: one of
    ``ATTR_MAX_LINE_LENGTH`` bytes or more, an invalid attribute name, a
    ``[attr]`` macro where macros are not allowed (a subdirectory's file) or
    with an invalid name, a negative pattern (``!x``; ``\\!x`` is the literal
    ``!x``). A pattern starting with ``"`` is C-unquoted; when the quoting is
    malformed the token is taken as it is, quote and all, as git does. git
    warns about the drops; we have no channel for that here and say nothing."""
    first = _TOKEN.search(line)
    if first is None or line[first.start()] == 0x23 or len(line) >= ATTR_MAX_LINE_LENGTH:
        return None
    quoted = unquote_c_style(line, first.start()) if line[first.start()] == 0x22 else None
    if quoted is not None:
        name, states = quoted[0], _parse_states(line[quoted[1]:])
    else:
        name, states = first.group(), _parse_states(line[first.end():])
    if states is None:
        return None
    if len(name) > len(_MACRO_PREFIX) and name.startswith(_MACRO_PREFIX):
        macro = _TOKEN.match(name[len(_MACRO_PREFIX):].split(b"\0", 1)[0].lstrip(_BLANK))
        if not macro_ok or macro is None or not attr_name_valid(macro.group()):
            return None
        return True, macro.group(), states
    name = name.split(b"\0", 1)[0]  # from here on git's pattern is a C string
    if name.startswith(b"!"):
        return None
    return False, name, states


def attr_lines(data: bytes) -> list[bytes]:
    """The lines of a ``.gitattributes`` as git hands them to
    ``handle_attr_line`` (see :class:`AttrFile`)."""
    if not isinstance(data, AttrFile):
        return data.split(b"\0", 1)[0].split(b"\n")
    lines = data.split(b"\n")
    if lines[0].startswith(b"\xef\xbb\xbf"):
        lines[0] = lines[0][3:]
    return [(line[:-1] if line.endswith(b"\r") else line).split(b"\0", 1)[0] for line in lines]


def read_attr(data: bytes, macro_ok: bool) -> Iterator[tuple[bool, bytes, list]]:
    """``read_attr_from_file`` / ``read_attr_from_index`` with
    ``handle_attr_line``: ``(is_macro, pattern or macro name, states)`` for
    each line git keeps, in file order (:func:`parse_attr_line`). A file of
    ``ATTR_MAX_FILE_SIZE`` bytes or more gives nothing (git warns; for a
    blob too large git then reads the work tree's file, which we do not)."""
    if len(data) >= ATTR_MAX_FILE_SIZE:
        return
    for line in attr_lines(data):
        got = parse_attr_line(line, macro_ok)
        if got is not None:
            yield got
