"""Reading git config files as git 2.39's ``config.c`` reads them.

Why this exists: start-up. Importing dulwich's ``dulwich.config`` cost every
checkout about 20 ms before the first file was looked at (``python -X
importtime`` on a 2-core machine: 19-26 ms cumulative for ``dulwich.config``;
``config`` and ``discovery`` together, best of 10: 42-47 ms with it, 12-18
ms with this module). This module imports nothing beyond the standard library
but the project's own boolean rule (:func:`parse.git_parse_maybe_bool`).

The parser mirrors ``git_parse_source`` and the functions it calls
(``get_next_char``, ``get_base_var``, ``get_extended_base_var``,
``get_value``, ``parse_value``), a character at a time as git reads them,
so that what is accepted, every value, and the line a syntax error names are
git's:

* a UTF-8 byte order mark is skipped at the start (a partial one is an
  error); ``\\r\\n`` is a line end; ``#`` and ``;`` start a comment outside
  quotes;
* ``[section]``: letters, digits, ``-`` and ``.``, lowercased (so the legacy
  ``[section.sub]`` is lowercased whole); ``[section "sub"]``: the
  subsection as written, ``\\x`` standing for ``x``, a line end an error, and
  ``]`` right after the closing quote;
* a variable starts with a letter (letters, digits and ``-``), lowercased;
  without ``=`` its value is git's NULL (None here: ``true`` as a boolean);
* a value: leading blanks skipped, each blank after the first character kept
  as one space only when something follows it (so trailing unquoted blanks go,
  and a tab inside becomes a space), ``"..."`` quoting, the escapes ``\\n``
  ``\\t`` ``\\b`` ``\\\\`` ``\\"`` (any other is an error), a backslash at the
  end of a line continuing the value on the next;
* bytes stay bytes: nothing is decoded, and a NUL ends a key or a value, as it
  ends git's C strings.

A syntax error is :class:`ConfigParseError`, whose message is git's ``bad
config line N in file PATH``. Sections are addressed as dulwich addresses
them (``(b"core",)``, ``(b"remote", b"origin")`` or ``b"core"``), and
:class:`ConfigFile` and :class:`StackedConfig` answer the calls the code base
makes on dulwich's (``get``, ``get_multivar``, ``get_boolean``, ``set``,
``sections``, ``items``, ``config[section][name]``, ``backends``), with one
difference: a name missing from ``[section "sub"]`` is missing, where
dulwich's ``get`` falls back to ``[section]``, which git never does. Through
that API a variable without ``=`` reads ``b"true"``, as dulwich gave it;
:meth:`ConfigFile.entries` keeps git's None. ``sections()`` lists the
sections that hold a variable (git's callbacks never hear of an empty one;
dulwich listed those too), and a variable read before any section header
(git accepts it) is in no section: no lookup can name it.

A file with an ``include`` or ``includeIf`` section is read by dulwich's
``ConfigFile.from_path`` (imported then, and only then), as before this
module existed: includes are its business, not ours.
"""

from __future__ import annotations

from collections.abc import Iterator

from .parse import git_parse_maybe_bool

__all__ = [
    "UTF8_BOM",
    "ConfigFile",
    "ConfigParseError",
    "StackedConfig",
    "key_string",
    "parse_config",
    "read_config_file",
    "split_key",
]

#: ``utf8_bom``: skipped at the very start of a file.
UTF8_BOM = b"\xef\xbb\xbf"

_LF, _TAB, _SP = 0x0A, 0x09, 0x20
_HASH, _SEMI, _EQ, _QUOTE, _BACKSLASH, _LBRACKET, _RBRACKET, _DOT = b'#;="\\[].'
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = b"abcdefghijklmnopqrstuvwxyz"
#: git's ``isspace`` (``sane_ctype``'s GIT_SPACE): not ``\v`` nor ``\f``.
_SPACE = frozenset(b" \t\n\r")
#: git's ``isalpha``: ASCII letters only.
_ALPHA = frozenset(_UPPER + _LOWER)
#: ``iskeychar``: what a variable name (and a section name) is made of.
_KEYCHAR = _ALPHA | frozenset(b"0123456789-")
_SECTION_CHAR = _KEYCHAR | {_DOT}
#: ``parse_value``'s escapes: what ``\\x`` stands for.
_ESCAPES = {ord("t"): _TAB, ord("b"): 0x08, ord("n"): _LF, _BACKSLASH: _BACKSLASH, _QUOTE: _QUOTE}
_TOLOWER = bytes.maketrans(_UPPER, _LOWER)

#: What a variable without ``=`` reads through the dulwich-shaped API.
IMPLICIT_TRUE = b"true"


class ConfigParseError(ValueError):
    """A config file git would refuse: ``bad config line N in file PATH``."""

    def __init__(self, linenr: int, origin: str) -> None:
        super().__init__(f"bad config line {linenr} in {origin}")
        self.linenr = linenr
        self.origin = origin


class _Parser:
    """``struct config_source`` over a file's bytes, with git's parser on it.
    ``entries`` collects what git hands its callback: (key, value)."""

    __slots__ = ("buf", "end", "pos", "linenr", "eof", "entries")

    def __init__(self, data: bytes) -> None:
        # get_next_char reads "\r\n" as "\n" and a lone "\r" as itself: the
        # same as replacing the pairs first, which never overlap.
        self.buf = data.replace(b"\r\n", b"\n")
        self.end = len(self.buf)
        self.pos = 0
        self.linenr = 1
        self.eof = False
        self.entries: list[tuple[bytes, bytes | None]] = []

    def next_char(self) -> int:
        """``get_next_char``: past the end, a newline each time (counted)."""
        pos = self.pos
        if pos < self.end:
            c = self.buf[pos]
            self.pos = pos + 1
            if c == _LF:
                self.linenr += 1
            return c
        self.eof = True
        self.linenr += 1
        return _LF

    def parse_value(self) -> bytes | None:
        """``parse_value``: the value after ``=``, None for a syntax error."""
        out = bytearray()
        quote = comment = False
        space = 0
        while True:
            c = self.next_char()
            if c == _LF:
                if quote:
                    self.linenr -= 1  # (the error is on the line the value began)
                    return None
                return bytes(out)
            if comment:
                continue
            if c in _SPACE and not quote:
                if out:
                    space += 1
                continue
            if not quote and (c == _HASH or c == _SEMI):
                comment = True
                continue
            if space:
                out += b" " * space  # blanks are kept only when something follows them
                space = 0
            if c == _BACKSLASH:
                c = self.next_char()
                if c == _LF:
                    continue  # a continuation line
                c = _ESCAPES.get(c, -1)
                if c < 0:
                    return None
                out.append(c)
            elif c == _QUOTE:
                quote = not quote
            else:
                out.append(c)

    def get_value(self, name: bytearray) -> bool:
        """``get_value``: the rest of a variable's name, then its value."""
        while True:
            c = self.next_char()
            if c not in _KEYCHAR:  # (the newline past the end is not one)
                break
            name.append(_TOLOWER[c])
        while c == _SP or c == _TAB:
            c = self.next_char()
        value = None
        if c != _LF:
            if c != _EQ:
                return False
            value = self.parse_value()
            if value is None:
                return False
        key = bytes(name)
        self.entries.append((key.partition(b"\0")[0],
                             value if value is None else value.partition(b"\0")[0]))
        return True

    def get_extended_base_var(self, name: bytearray, c: int) -> bool:
        """``get_extended_base_var``: ``[section "subsection"]``, from the blank."""
        while True:
            if c == _LF:
                self.linenr -= 1
                return False
            c = self.next_char()
            if c not in _SPACE:
                break
        if c != _QUOTE:
            return False
        name.append(_DOT)
        while True:
            c = self.next_char()
            if c == _LF:
                self.linenr -= 1
                return False
            if c == _QUOTE:
                break
            if c == _BACKSLASH:
                c = self.next_char()
                if c == _LF:
                    self.linenr -= 1
                    return False
            name.append(c)
        return self.next_char() == _RBRACKET

    def get_base_var(self, name: bytearray) -> bool:
        """``get_base_var``: a section header, after its ``[``."""
        while True:
            c = self.next_char()
            if self.eof:
                return False
            if c == _RBRACKET:
                return True
            if c in _SPACE:
                return self.get_extended_base_var(name, c)
            if c not in _SECTION_CHAR:
                return False
            name.append(_TOLOWER[c])

    def parse(self) -> bool:
        """``git_parse_source``: True at the end of the file, False at a
        syntax error (``linenr`` is then the line git names)."""
        bom = 0  # how much of UTF8_BOM has been read; len(UTF8_BOM) once past it
        comment = False
        var = bytearray()
        baselen = 0
        while True:
            c = self.next_char()
            if bom < len(UTF8_BOM):
                if c == UTF8_BOM[bom]:
                    bom += 1
                    continue
                if bom:
                    return False  # a partial byte order mark
                bom = len(UTF8_BOM)
            if c == _LF:
                if self.eof:
                    return True
                comment = False
                continue
            if comment or c in _SPACE:
                continue
            if c == _HASH or c == _SEMI:
                comment = True
                continue
            if c == _LBRACKET:
                var = bytearray()
                if not self.get_base_var(var) or not var:
                    return False
                var.append(_DOT)
                baselen = len(var)
                continue
            if c not in _ALPHA:
                return False
            del var[baselen:]
            var.append(_TOLOWER[c])
            if not self.get_value(var):
                return False


def parse_config(data: bytes, origin: str) -> list[tuple[bytes, bytes | None]]:
    """Every (key, value) of a config text, in order, as git's parser hands
    them to its callback: ``section[.subsection].name`` with the section and
    the name lowercased; value None for a variable without ``=``. ``origin``
    names the text in the error (``"file .git/config"``)."""
    parser = _Parser(data)
    if not parser.parse():
        raise ConfigParseError(parser.linenr, origin)
    return parser.entries


def split_key(key: bytes) -> tuple[tuple[bytes, ...], bytes] | None:
    """(section, name) of a parsed key, split as git's key lookups split it (at
    the first and the last dot); None for a key no lookup can name (one read
    before any section header)."""
    first = key.find(b".")
    last = key.rfind(b".")
    if first < 0 or last == len(key) - 1:
        return None
    if first == last:
        return (key[:first],), key[last + 1:]
    return (key[:first], key[first + 1:last]), key[last + 1:]


def key_string(section: tuple[bytes, ...], name: bytes) -> bytes:
    """The key git would parse for ``name`` in ``section``."""
    return b".".join((*section, name))


def _section_key(section) -> tuple[bytes, ...]:
    """A section as given to the dulwich-shaped calls (a tuple, or a bare
    section name; bytes or str), with the section name lowercased."""
    if not isinstance(section, tuple):
        section = (section,)
    parts = tuple(p if isinstance(p, bytes) else p.encode() for p in section)
    return (parts[0].lower(), *parts[1:])


def _name_key(name) -> bytes:
    return (name if isinstance(name, bytes) else name.encode()).lower()


def _value_bytes(value) -> bytes:
    if isinstance(value, bool):
        return b"true" if value else b"false"
    return value if isinstance(value, bytes) else value.encode()


def _shown(value: bytes | None) -> bytes:
    return IMPLICIT_TRUE if value is None else value


class Section:
    """One section's variables: ``section[name]`` is the last value of
    ``name`` (any case), KeyError when there is none."""

    __slots__ = ("_pairs", "_last")

    def __init__(self) -> None:
        self._pairs: list[tuple[bytes, bytes | None]] = []
        self._last: dict[bytes, bytes | None] = {}

    def _add(self, name: bytes, value: bytes | None) -> None:
        self._pairs.append((name, value))
        self._last[name] = value

    def _remove(self, name: bytes) -> None:
        self._pairs = [p for p in self._pairs if p[0] != name]
        self._last.pop(name, None)

    def __getitem__(self, name) -> bytes:
        return _shown(self._last[_name_key(name)])

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name) -> bool:
        return _name_key(name) in self._last

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._last)

    def __len__(self) -> int:
        return len(self._last)

    def keys(self):
        return self._last.keys()

    def get_all(self, name) -> Iterator[bytes]:
        """Every value of ``name``, in file order."""
        key = _name_key(name)
        return iter([_shown(v) for n, v in self._pairs if n == key])

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """(name, value) of every variable, in file order (names lowercased)."""
        return iter([(n, _shown(v)) for n, v in self._pairs])


def _get_boolean(config, section, name, default: bool | None) -> bool | None:
    """``git_config_bool``'s reading (:func:`parse.git_parse_maybe_bool`:
    true/yes/on, false/no/off/empty, a number), ``default`` when unset, and
    a ValueError for what git calls a bad boolean config value."""
    try:
        value = config.get(section, name)
    except KeyError:
        return default
    answer = git_parse_maybe_bool(value)
    if answer is None:
        raise ValueError(f"bad boolean config value '{value.decode('utf-8', 'replace')}'")
    return answer


class ConfigFile:
    """One config file's settings (or the command line's), looked up as git
    looks them up; ``path`` is where it was read from."""

    __slots__ = ("path", "_sections", "_order")

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._sections: dict[tuple[bytes, ...], Section] = {}
        self._order: list[tuple[tuple[bytes, ...], bytes, bytes | None]] = []

    @classmethod
    def from_entries(cls, entries, path: str | None = None) -> ConfigFile:
        """A file from :func:`parse_config`'s entries (those no lookup can
        name left out)."""
        cf = cls(path)
        for key, value in entries:
            split = split_key(key)
            if split is not None:
                cf._append(split[0], split[1], value)
        return cf

    def _append(self, section: tuple[bytes, ...], name: bytes, value: bytes | None) -> None:
        sec = self._sections.get(section)
        if sec is None:
            sec = self._sections[section] = Section()
        sec._add(name, value)
        self._order.append((section, name, value))

    def entries(self) -> list[tuple[bytes, bytes | None]]:
        """(key, value) of every setting in file order, as git's callbacks
        see them (None for a variable without ``=``)."""
        return [(key_string(s, n), v) for s, n, v in self._order]

    def __repr__(self) -> str:
        return f"ConfigFile({self.path!r})"

    def __getitem__(self, section) -> Section:
        return self._sections[_section_key(section)]

    def __contains__(self, section) -> bool:
        return _section_key(section) in self._sections

    def has_section(self, section) -> bool:
        return section in self

    def sections(self) -> Iterator[tuple[bytes, ...]]:
        """The sections holding a variable, in the order they first appear."""
        return iter(list(self._sections))

    def items(self, section) -> Iterator[tuple[bytes, bytes]]:
        """(name, value) of a section, in file order; nothing when absent."""
        sec = self._sections.get(_section_key(section))
        return sec.items() if sec is not None else iter(())

    def get(self, section, name) -> bytes:
        """The last value of ``name`` in exactly ``section``; KeyError when unset."""
        return self[section][name]

    def get_multivar(self, section, name) -> Iterator[bytes]:
        """Every value of ``name`` in ``section``, in file order; KeyError when
        there is no such section."""
        return self[section].get_all(name)

    def get_boolean(self, section, name, default: bool | None = None) -> bool | None:
        return _get_boolean(self, section, name, default)

    def set(self, section, name, value) -> None:
        """``name`` = ``value`` in ``section``, replacing every value it had."""
        section, name = _section_key(section), _name_key(name)
        sec = self._sections.get(section)
        if sec is not None:
            sec._remove(name)
            self._order = [e for e in self._order if e[0] != section or e[1] != name]
        self._append(section, name, _value_bytes(value))

    def add(self, section, name, value: bytes | str | bool | None) -> None:
        """One more value of ``name`` (None: a variable without ``=``)."""
        self._append(_section_key(section), _name_key(name),
                     None if value is None else _value_bytes(value))


class StackedConfig:
    """Several configs, the most important first (dulwich's
    ``StackedConfig``): ``get`` answers from the first that has the setting,
    ``get_multivar`` gives each one's values in that order."""

    __slots__ = ("backends", "writable")

    def __init__(self, backends: list, writable=None) -> None:
        self.backends = backends
        self.writable = writable

    def __repr__(self) -> str:
        return f"StackedConfig({self.backends!r})"

    def get(self, section, name) -> bytes:
        for backend in self.backends:
            try:
                return backend.get(section, name)
            except KeyError:
                pass
        raise KeyError(name)

    def get_multivar(self, section, name) -> Iterator[bytes]:
        for backend in self.backends:
            try:
                yield from backend.get_multivar(section, name)
            except KeyError:
                pass

    def get_boolean(self, section, name, default: bool | None = None) -> bool | None:
        return _get_boolean(self, section, name, default)

    def set(self, section, name, value) -> None:
        if self.writable is None:
            raise NotImplementedError(self.set)
        self.writable.set(section, name, value)

    def sections(self) -> Iterator[tuple[bytes, ...]]:
        seen = set()
        for backend in self.backends:
            for section in backend.sections():
                if section not in seen:
                    seen.add(section)
                    yield section


def _has_include(entries: list[tuple[bytes, bytes | None]]) -> bool:
    return any(key.startswith((b"include.", b"includeif.")) for key, _ in entries)


def read_config_file(path: str) -> ConfigFile:
    """The config file at ``path`` (OSError when it cannot be read, as
    ``open`` raises it; :class:`ConfigParseError` naming ``path`` as given).
    With an ``include``/``includeIf`` section, dulwich reads it."""
    with open(path, "rb") as f:
        data = f.read()
    entries = parse_config(data, f"file {path}")
    if _has_include(entries):
        return _read_with_includes(path)
    return ConfigFile.from_entries(entries, path)


def _read_with_includes(path: str) -> ConfigFile:
    """dulwich's reading of a file with includes (its ValueError when it
    refuses one), as one of ours: what it found, section by section."""
    from dulwich.config import ConfigFile as DulwichConfigFile

    theirs = DulwichConfigFile.from_path(path)
    ours = ConfigFile(path)
    for section in theirs.sections():
        for name, value in theirs.items(section):
            ours.add(section, name, value)
    return ours
