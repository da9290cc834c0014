"""Attribute resolution for checkout: git's ``convert_attrs`` (convert.c) on top
of the attribute stack of ``attr.c``.

Sources, lowest precedence first (``attr.c:prepare_attr_stack``): the system
file, ``core.attributesFile``, then ``.gitattributes`` from the root down to
the file's own directory, then ``$GIT_DIR/info/attributes``. At checkout git
reads ``.gitattributes`` from the index being checked out before the work tree
(``GIT_ATTR_CHECKOUT``), so the caller hands us the blobs of the target tree.
Parsing and matching are git 2.39's own (``parse_attr_line`` in :mod:`attr`;
``path_matches`` in :class:`_LazyPattern`, over the project's wildmatch
translation, :mod:`wildmatch`), not dulwich's ``dulwich.attrs``:
importing that cost 15 to 20 ms of every start-up, with its ``logging``,
``dataclasses`` and ``inspect`` (``python -X importtime``: this module took
32 ms with it, 15 ms without), more than reading git.git's attribute files
and checking all its 4,800 paths (10 ms).

Speed: the list of patterns that can apply is built once per directory, and
when no attribute source exists at all every item gets the same answer
without any matching (git.git checks 4,800 paths; dulwich's checkout spends
17% of its time here).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .attr import AttrFile, read_attr
from .config import git_config_bool
from .convert import ConvertCrlfAction as A
from .convert import EolConfig
from .wildmatch import casefold, wildmatch_source

__all__ = ["AttrFile", "ConvAttrs", "ConvertDriver", "AttributeStack", "convert_attrs"]

_BUILTIN_MACROS = {b"binary": [(b"diff", False), (b"merge", False), (b"text", False)]}
_WANTED = frozenset((b"crlf", b"ident", b"filter", b"eol", b"text", b"working-tree-encoding"))


class ConvertDriver:
    """``struct convert_driver``: one ``filter.<name>`` section of the config.

    ``parallel`` is ours, not git's: ``filter.<name>.parallel = true`` says the
    user vouches that the driver may run in several processes at once, so its
    files may be written by helpers (see :mod:`filters`)."""

    __slots__ = ("name", "smudge", "clean", "process", "required", "parallel")

    def __init__(self, name, smudge=None, clean=None, process=None, required=False, parallel=False):
        self.name = name
        self.smudge = smudge
        self.clean = clean
        self.process = process
        self.required = required
        self.parallel = parallel


class ConvAttrs:
    """``struct conv_attrs``: what checkout needs to know about one path."""

    __slots__ = ("crlf_action", "ident", "drv", "working_tree_encoding")

    def __init__(self, crlf_action, ident, drv, working_tree_encoding):
        self.crlf_action = crlf_action
        self.ident = ident
        self.drv = drv
        self.working_tree_encoding = working_tree_encoding

    @property
    def parallel_eligible(self) -> bool:
        """``is_eligible_for_parallel_checkout`` minus the size check: no filter."""
        return not (self.drv is not None and (self.drv.process or self.drv.smudge or self.drv.clean))

    @property
    def filter_parallel(self) -> bool:
        """A driver the user marked ``filter.<name>.parallel``: eligible for our
        helpers (only ours, started with ``--filters``), never for git's worker."""
        return self.drv is not None and self.drv.parallel


class AttributeValueError(Exception):
    """An attribute value git dies on (``git_path_check_encoding``)."""


def _parse(data: bytes, base: bytes, macros: dict, allow_macros: bool, fold: bool = False) -> list:
    """``read_attr`` (:mod:`attr`): the patterns of one ``.gitattributes``
    (of directory ``base``), each with its states, in file order; its macros
    (only where ``allow_macros``: the root, info, global and system files, as
    git's ``READ_ATTR_MACRO_OK``) go to ``macros``, a later definition
    winning. A pattern with a trailing ``/`` (``PATTERN_FLAG_MUSTBEDIR``)
    matches only a directory, never a file checkout asks about: it is left
    out, and so is an empty one (``""``), which matches no name. ``fold``:
    ``core.ignoreCase`` (:class:`_LazyPattern`)."""
    out = []
    for is_macro, name, states in read_attr(data, allow_macros):
        if is_macro:
            macros[name] = states
        elif name and not name.endswith(b"/"):
            out.append((_LazyPattern(name, base, fold), states))
    return out


_WILDCARDS = frozenset(b"*?[\\")


def _simple_length(p: bytes) -> int:
    """``simple_length``: the length of the literal lead, before the first glob character."""
    return next((i for i, c in enumerate(p) if c in _WILDCARDS), len(p))


class _LazyPattern:
    """One pattern of a ``.gitattributes`` as ``parse_path_pattern`` leaves
    it: ``pattern`` its bytes (a leading ``/`` kept: it anchors), ``base`` the
    directory of its file (b"" for the root). :meth:`match` is attr.c's
    ``path_matches`` for a file at or below ``base``: a pattern without a
    slash is ``match_basename``, wildmatch of the path's last component
    without ``WM_PATHNAME``; one with a slash is ``match_pathname``: the
    literal lead (up to the first glob character) compared, then the rest by
    wildmatch with ``WM_PATHNAME``, on its own, so a ``**`` right after the
    lead counts as at the start (``/foo**/x`` matches ``foox`` and
    ``foo/a/x``, as git's). Its regular expression is compiled on the first
    ``match``: most patterns never need one (no attribute checkout reads, or
    a shape :func:`_matcher` tests without it), and compiling all of them was
    most of the cost of reading git.git's attribute files.

    ``fold`` (``core.ignoreCase``): ``pattern`` and ``base`` are kept
    case-folded (:func:`wildmatch.casefold`, as ``fspathncmp`` compares the
    literal parts), the expression is ``WM_CASEFOLD``'s from the pattern as
    written, and every path matched must be folded the same way
    (:meth:`AttributeStack.check` folds them)."""

    __slots__ = ("pattern", "base", "_nodir", "_regex", "_written")

    def __init__(self, pattern: bytes, base: bytes = b"", fold: bool = False) -> None:
        self.pattern = casefold(pattern) if fold else pattern
        self.base = casefold(base) if fold else base
        self._written = pattern if fold else None  # (None: not folded)
        self._nodir = b"/" not in pattern  # PATTERN_FLAG_NODIR
        self._regex: re.Pattern | None = None

    def _compile(self) -> re.Pattern:
        fold = self._written is not None
        raw = self._written if fold else self.pattern
        if self._nodir:
            source = wildmatch_source(raw, False, fold)
        else:
            rel = raw[1:] if raw.startswith(b"/") else raw
            cut = _simple_length(rel)
            rest = wildmatch_source(rel[cut:], True, fold)
            lead = (self.base + b"/" if self.base else b"") + (casefold(rel[:cut]) if fold else rel[:cut])
            source = None if rest is None else re.escape(lead) + rest
        return re.compile(b"(?!)" if source is None else source, re.DOTALL)

    def match(self, path: bytes) -> bool:
        regex = self._regex
        if regex is None:
            regex = self._regex = self._compile()
        if self._nodir:
            return regex.fullmatch(path, path.rfind(b"/") + 1) is not None
        return regex.fullmatch(path) is not None


class AttributeStack:
    """The attribute sources of one checkout, matched per directory."""

    def __init__(
        self,
        read_gitattributes: Callable[[bytes], bytes | None],
        has_gitattributes: Callable[[bytes], bool],
        info_attributes: bytes | None = None,
        global_attributes: bytes | None = None,
        system_attributes: bytes | None = None,
        ignore_case: bool = False,
    ) -> None:
        """``read_gitattributes(dir)`` returns the bytes of ``<dir>/.gitattributes``
        (dir is b"" for the root) or None: a blob, or an :class:`AttrFile` when
        read from the work tree; ``has_gitattributes(dir)`` answers cheaply
        whether one exists. The other three are the contents of files.
        ``ignore_case`` (``core.ignoreCase``): patterns match paths
        case-insensitively; which files apply to a directory is still told
        by its name as written, as git's attribute stack tells it."""
        self._read = read_gitattributes
        self._has = has_gitattributes
        self._fold = ignore_case
        self.macros: dict[bytes, list] = dict(_BUILTIN_MACROS)
        self._low: list = []
        for data in (system_attributes, global_attributes):
            if data:
                self._low += _parse(AttrFile(data), b"", self.macros, True, ignore_case)
        root = read_gitattributes(b"") if has_gitattributes(b"") else None
        self._root = _parse(root, b"", self.macros, True, ignore_case) if root else []
        self._info = (_parse(AttrFile(info_attributes), b"", self.macros, True, ignore_case)
                      if info_attributes else [])
        self._relevant = _relevant(self.macros)
        self._dirs: dict[bytes, list] = {b"": self._low + self._root}
        self._matchers: dict[bytes, list] = {}
        self._compiled: dict[int, list] = {}  # id of a _dirs list (kept alive there) -> matchers
        self.empty = not (self._low or self._root or self._info)

    def _dir_patterns(self, d: bytes) -> list:
        got = self._dirs.get(d)
        if got is not None:
            return got
        slash = d.rfind(b"/")
        parent = self._dir_patterns(d[:slash] if slash != -1 else b"")
        own = []
        if self._has(d):
            data = self._read(d)
            if data:
                own = _parse(data, d, self.macros, False, self._fold)
        got = parent + own if own else parent
        self._dirs[d] = got
        return got

    def _dir_matchers(self, d: bytes) -> list:
        """The patterns that can apply in ``d`` (its own and its ancestors', then
        info/attributes), compiled once per directory: each pattern's states
        cut down to the attributes checkout asks about and the macros that
        lead to one (:func:`_relevant`); a pattern left with none is dropped
        (git.git's root file has 21 patterns, 13 of them about whitespace,
        diff or conflict markers); then a matcher cheaper than a regular
        expression where the pattern's shape allows (see :func:`_matcher`).
        Macros cannot change after the constructor (only the root, info,
        global and system files may define them)."""
        return self._dir_index(d).matchers

    def _dir_index(self, d: bytes) -> _DirIndex:
        got = self._matchers.get(d)
        if got is None:
            # A directory without its own file shares its parent's list
            # object (``_dir_patterns``): compile each distinct list once.
            plist = self._dir_patterns(d)
            got = self._compiled.get(id(plist))
            if got is None:
                got = _DirIndex(self.macros)
                relevant = self._relevant
                for pattern, states in (*plist, *self._info):
                    wanted = [(n, v) for n, v in states if n in relevant]
                    if wanted:
                        got.add(pattern, wanted)
                got.finish()
                self._compiled[id(plist)] = got
            got = got.for_dir(casefold(d) if self._fold else d)
            self._matchers[d] = got
        return got

    def check(self, path: bytes) -> dict[bytes, object]:
        """``git_check_attr`` for the attributes convert_attrs asks about."""
        slash = path.rfind(b"/")
        index = self._dir_index(path[:slash] if slash != -1 else b"")
        return index.check(casefold(path) if self._fold else path, slash)


def _relevant(macros: Mapping[bytes, list]) -> frozenset[bytes]:
    """The attributes checkout asks about, and the macros whose expansion
    sets one of them, directly or through another macro: a state of any
    other attribute cannot change what checkout sees."""
    relevant = set(_WANTED)
    grew = True
    while grew:
        grew = False
        for name, states in macros.items():
            if name not in relevant and any(n in relevant for n, _v in states):
                relevant.add(name)
                grew = True
    return frozenset(relevant)


class _DirIndex:
    """The patterns that can apply in one directory, indexed by shape so that
    a path is matched against the few that can match it, not against each:
    ``*.ext`` by the path's tail (one dictionary probe per distinct suffix
    length), a plain name by the path's last component, an anchored literal
    path by the path; the rest (globs) one by one (:func:`_matcher`). The
    patterns a path matches then decide as in git (:meth:`_fill`); the
    result for each set of matching patterns is computed once. Results are
    shared: read only.

    :meth:`for_dir` then cuts the index down to what can match a file of one
    directory: an anchored pattern whose literal lead (``Documentation/`` of
    ``/Documentation/**/*.adoc``) leads elsewhere, or an anchored literal
    path in another directory, cannot; an anchored glob whose last component
    is ``*``, ``*.ext`` or a plain name is decided for the directory once
    (:func:`_in_dir`) and becomes a hit for every file, a suffix, a name or
    nothing there. On git.git no directory is left with a pattern to test
    one by one."""

    __slots__ = ("matchers", "_macros", "_wanted", "_suffixes", "_lengths", "_names", "_paths", "_others",
                 "_always", "_results", "_tail", "_by_tail", "_by_ext", "_probe", "_views")

    def __init__(self, macros: Mapping[bytes, list]) -> None:
        self.matchers: list = []  # (match, wanted) in file order
        self._macros = macros
        self._wanted: list = []
        self._suffixes: dict[bytes, list[int]] = {}
        self._lengths: tuple[int, ...] = ()
        self._names: dict[bytes, list[int]] = {}
        self._paths: dict[bytes, list[int]] = {}
        self._others: list = []  # (index, match, lead, pattern)
        self._always: tuple[int, ...] = ()  # patterns every file of the directory matches (for_dir)
        self._results: dict[tuple[int, ...], dict] = {(): {}}
        self._tail = 0
        self._by_tail: dict[bytes, dict] | None = None
        self._by_ext: dict[bytes, dict] | None = None  # the second memo (_memo_by_tail)
        self._probe = False  # names or literal paths to look for before the memo
        self._views: dict[tuple, _DirIndex] = {}  # for_dir's views, by what they hold

    def add(self, pattern: _LazyPattern, wanted: list) -> None:
        i = len(self._wanted)
        self._wanted.append(wanted)
        self.matchers.append((_matcher(pattern), wanted))
        kind, key = _shape(pattern)
        if kind == "suffix":
            self._suffixes.setdefault(key, []).append(i)
        elif kind == "name":
            self._names.setdefault(key, []).append(i)
        elif kind == "path":
            self._paths.setdefault(key, []).append(i)
        else:
            self._others.append((i, self.matchers[-1][0], _lead(pattern), pattern))

    def finish(self) -> None:
        self._lengths = tuple(sorted({len(k) for k in self._suffixes}))
        self._memo_by_tail()

    def _memo_by_tail(self) -> None:
        """An index of suffixes alone (and patterns every file matches)
        decides a path by its last bytes, as many as its longest suffix
        (a suffix has no slash: it never reaches into the directory of a
        longer path): :meth:`check` then answers each distinct tail once,
        one dictionary probe a file after that (most of git.git's
        directories; 130 ms of CPU at 100,000 files before).

        When every suffix but the empty one is an extension (a dot and no
        other: ``*.sh``, not ``*.tar.gz`` or ``*sh``), a path's last
        extension alone decides which of them it ends with: a tail not seen
        yet is then answered by a second memo, by extension, before it is
        matched (git.git's root had about 3,000 distinct five-byte tails
        among its 4,800 files, and a few dozen extensions). The tail stays
        the first key: it is a slice, where finding the extension is a
        search (0.3 µs a file more at 100,000 files, measured).

        Plain names and anchored literal paths are probed first, and a
        path one of them hits is decided without the memo: the rest are
        still decided by suffixes alone (git.git's ``t/``, whose own file names the path
        ``/t556x_common``, and its root, with two such paths: 1,700 of its
        files)."""
        dotted = all(k[:1] == b"." and k.count(b".") == 1 for k in self._suffixes if k)
        self._tail = self._lengths[-1] if self._lengths else 0
        self._by_tail = None if self._others else {}
        self._by_ext = {} if dotted and self._by_tail is not None else None
        self._probe = bool(self._names or self._paths)

    def for_dir(self, d: bytes) -> _DirIndex:
        """This index for the files directly in ``d`` (b"" for the root).
        Directories left with the same patterns share one view, and so its
        memo (:meth:`check`): most of git.git's 200 directories hold the
        root's suffixes alone once its anchored paths are cut away."""
        prefix = d + b"/" if d else b""
        n = len(prefix)

        def can_match(lead: bytes | None) -> bool:
            if lead is None:
                return True
            if len(lead) <= n:
                return prefix.startswith(lead)
            return lead.startswith(prefix) and b"/" not in lead[n:]

        others, always, decided = [], [], []
        suffixes, names = self._suffixes, self._names
        for other in self._others:
            i, _match, lead, pattern = other
            if not can_match(lead):
                continue
            kind, key = _in_dir(pattern, d) if lead is not None else ("other", None)
            if kind == "other":
                others.append(other)
                continue
            decided.append((i, kind, key))
            if kind == "all":
                always.append(i)
            elif kind == "suffix":
                suffixes = {**suffixes, key: [*suffixes.get(key, ()), i]}
            elif kind == "name":
                names = {**names, key: [*names.get(key, ()), i]}
        paths = {k: v for k, v in self._paths.items() if k.startswith(prefix) and b"/" not in k[n:]}
        if len(others) == len(self._others) and len(paths) == len(self._paths):
            return self
        held = (tuple(other[0] for other in others), tuple(decided), tuple(paths))
        view = self._views.get(held)
        if view is not None:
            return view
        view = self._views[held] = _DirIndex.__new__(_DirIndex)  # (copy.copy of a slotted object: 15 µs a directory)
        for slot in _DirIndex.__slots__:
            setattr(view, slot, getattr(self, slot))
        view._others = others
        view._always = tuple(always)
        view._suffixes = suffixes
        view._lengths = tuple(sorted({len(k) for k in suffixes}))
        view._names = names
        view._paths = paths
        view._memo_by_tail()
        return view

    def check(self, path: bytes, slash: int) -> dict[bytes, object]:
        by_tail = self._by_tail
        if by_tail is None or (self._probe and (path[slash + 1:] in self._names or path in self._paths)):
            return self._check(path, slash)
        tail = path[-self._tail:] if self._tail else b""
        result = by_tail.get(tail)
        if result is None:
            by_ext = self._by_ext
            if by_ext is None:
                result = self._check(path, slash)
            else:
                dot = path.rfind(b".", slash + 1)
                ext = path[dot:] if dot != -1 else b""
                result = by_ext.get(ext)
                if result is None:
                    result = by_ext[ext] = self._check(path, slash)
            by_tail[tail] = result
        return result

    def _check(self, path: bytes, slash: int) -> dict[bytes, object]:
        hits = list(self._always)
        suffixes = self._suffixes
        if suffixes:
            n = len(path)
            for length in self._lengths:
                if length > n:
                    break
                got = suffixes.get(path[n - length :])
                if got is not None:
                    hits += got
        if self._names:
            got = self._names.get(path[slash + 1 :])
            if got is not None:
                hits += got
        if self._paths:
            got = self._paths.get(path)
            if got is not None:
                hits += got
        for i, match, _lead, _pattern in self._others:
            if match(path):
                hits.append(i)
        key = tuple(sorted(hits))
        result = self._results.get(key)
        if result is None:
            result = self._results[key] = self._fill(key)
        return result

    def _fill(self, key: tuple[int, ...]) -> dict[bytes, object]:
        """attr.c's ``fill``: the matching patterns from the last (the top
        of the stack: info/attributes, then the deepest file, each file from
        its end), each line's states from its last; the first state found
        for an attribute decides it (``!name`` too: unspecified), and an
        attribute that a state newly sets to true and that names a macro
        then fills the macro's states the same way (``macroexpand_one``). So
        ``binary text`` leaves text set and ``-text binary`` leaves it unset
        (by the macro), and a later line's ``-binary`` keeps an earlier
        line's ``binary`` from expanding at all."""
        found: dict[bytes, object] = {}
        for i in reversed(key):
            _fill_one(found, self._macros, self._wanted[i])
        return {name: value for name, value in found.items() if value is not None and name in _WANTED}



def _fill_one(found: dict[bytes, object], macros: dict, states: list) -> None:
    """``fill_one`` for one line's ``states`` (last first), a macro's
    expanded in place (not a closure: :func:`cli.start_program`)."""
    for name, value in reversed(states):
        if name not in found:
            found[name] = value
            if value is True and name in macros:
                _fill_one(found, macros, macros[name])


def _lead(pattern: _LazyPattern) -> bytes | None:
    """The literal lead of an anchored pattern (one with a slash), from its
    base: every path it matches starts with it; None for the others."""
    raw = pattern.pattern
    if b"/" not in raw:
        return None
    rel = raw[1:] if raw.startswith(b"/") else raw
    full = pattern.base + b"/" + rel if pattern.base else rel
    return full[:_simple_length(full)]


def _shape(pattern: _LazyPattern) -> tuple[str, bytes | None]:
    """How :class:`_DirIndex` files a pattern, by the shapes :func:`_matcher`
    tests without a regular expression: ``("suffix", ".ext")`` for ``*.ext``
    (no slash, no other wildcard: any path ending so; ``*`` alone, as in
    ``* text=auto``, is the empty suffix every path ends with), ``("name", n)`` for a
    plain name (no slash: the last component), ``("path", p)`` for an
    anchored literal path, ``("other", None)`` for the rest."""
    raw = pattern.pattern
    if b"/" not in raw:
        if raw.startswith(b"*") and not _WILDCARDS.intersection(raw[1:]):
            return "suffix", raw[1:]
        if not _WILDCARDS.intersection(raw):
            return "name", raw
        return "other", None
    rel = raw[1:] if raw.startswith(b"/") else raw
    full = pattern.base + b"/" + rel if pattern.base else rel
    if not _WILDCARDS.intersection(full):
        return "path", full
    return "other", None


def _in_dir(pattern: _LazyPattern, d: bytes) -> tuple[str, bytes | None]:
    """An anchored glob for the files directly in ``d``, decided once for
    all of them when its last component is ``*`` (``("all", None)``),
    ``*.ext`` (``("suffix", ".ext")``) or a plain name (``("name", n)``), or
    ``("none", None)`` when ``d`` is not a directory it names; ``("other",
    None)`` (one test per path) for any other last component.

    Why the directory can be decided alone: a last component with no slash
    and no ``**`` can match only a path's last component, so the pattern's
    last slash meets the path's last slash, and what comes before must match
    ``d`` itself, whatever the file's name. So a name made to fit the last
    component tells, through the pattern's own expression, whether ``d``
    matches (``/Documentation/**/*.adoc`` in ``Documentation/technical``).
    Not so when a ``**`` follows a literal lead that does not end in a slash
    (``/foo**/*.c`` matches ``foox.c``: see :class:`_LazyPattern`)."""
    raw = pattern.pattern
    rel = raw[1:] if raw.startswith(b"/") else raw
    cut = _simple_length(rel)
    if cut and rel[cut - 1:cut] != b"/" and rel[cut:cut + 2] == b"**":
        return "other", None
    full = pattern.base + b"/" + rel if pattern.base else rel
    if b"[" in full:  # (a slash in a bracket, ``*.[c/]``, is no component's end)
        return "other", None
    last = full[full.rfind(b"/") + 1 :]
    if last == b"*":
        kind, key, sample = "all", None, b"x"
    elif last.startswith(b"*") and len(last) > 1 and not _WILDCARDS.intersection(last[1:]):
        kind, key, sample = "suffix", last[1:], b"x" + last[1:]
    elif last and not _WILDCARDS.intersection(last):
        kind, key, sample = "name", last, last
    else:
        return "other", None
    slash = full.rfind(b"/")
    where = full[:slash] if slash != -1 else b""
    if not _WILDCARDS.intersection(where):
        # A literal directory (``/t/t4013/*``: most anchored patterns of
        # git.git's files) names one directory: no expression compiled.
        return (kind, key) if where == d else ("none", None)
    return (kind, key) if pattern.match(d + b"/" + sample if d else sample) else ("none", None)


def _matcher(pattern: _LazyPattern) -> Callable[[bytes], bool]:
    """A test equivalent to ``pattern.match`` for paths at or below its base.

    The common shapes skip the regular expression: ``*.ext`` (no slash: any
    path whose last component ends with ``.ext``, which is any path ending
    with it, the suffix holding no slash), a plain name (no slash: the last
    component equals it) and an anchored plain path (``/name``, ``a/b``).
    Everything else keeps the pattern's own expression (:class:`_LazyPattern`),
    behind a cheap test of the literal lead when the pattern is anchored
    (has a slash)."""
    raw = pattern.pattern
    if b"/" not in raw:
        if raw.startswith(b"*") and not _WILDCARDS.intersection(raw[1:]):
            suffix = raw[1:]
            return lambda path: path.endswith(suffix)
        if not _WILDCARDS.intersection(raw):
            tail = b"/" + raw
            return lambda path: path == raw or path.endswith(tail)
    else:
        rel = raw[1:] if raw.startswith(b"/") else raw
        full = pattern.base + b"/" + rel if pattern.base else rel
        cut = _simple_length(full)
        if cut == len(full):
            return lambda path: path == full
        # Anchored: no path outside its literal lead (``Documentation/`` of
        # ``/Documentation/**/*.adoc``) can match; most fail that test.
        lead, regex_match = full[:cut], pattern.match
        return lambda path: path.startswith(lead) and regex_match(path)
    return pattern.match


def _crlf_from_attr(value) -> int:
    """``git_path_check_crlf``."""
    if value is True:
        return A.CRLF_TEXT
    if value is False:
        return A.CRLF_BINARY
    if value == b"input":
        return A.CRLF_TEXT_INPUT
    if value == b"auto":
        return A.CRLF_AUTO
    return A.CRLF_UNDEFINED


def convert_attrs(
    attrs: Mapping[bytes, object],
    eol: EolConfig,
    drivers: Mapping[bytes, ConvertDriver],
) -> ConvAttrs:
    """``convert_attrs``: turn checked attributes into a decided crlf_action."""
    crlf = _crlf_from_attr(attrs.get(b"text"))
    if crlf == A.CRLF_UNDEFINED:
        crlf = _crlf_from_attr(attrs.get(b"crlf"))
    ident = 1 if attrs.get(b"ident") is True else 0
    f = attrs.get(b"filter")
    drv = drivers.get(f) if isinstance(f, bytes) else None
    if crlf != A.CRLF_BINARY:
        e = attrs.get(b"eol")
        if crlf == A.CRLF_AUTO and e == b"lf":
            crlf = A.CRLF_AUTO_INPUT
        elif crlf == A.CRLF_AUTO and e == b"crlf":
            crlf = A.CRLF_AUTO_CRLF
        elif e == b"lf":
            crlf = A.CRLF_TEXT_INPUT
        elif e == b"crlf":
            crlf = A.CRLF_TEXT_CRLF
    enc = attrs.get(b"working-tree-encoding")
    if enc is True or enc is False:
        raise AttributeValueError("true/false are no valid working-tree-encodings")
    encoding = enc if isinstance(enc, bytes) and enc else None
    if crlf == A.CRLF_TEXT:
        crlf = A.CRLF_TEXT_CRLF if eol.text_eol_is_crlf() else A.CRLF_TEXT_INPUT
    if crlf == A.CRLF_UNDEFINED:
        crlf = {"false": A.CRLF_BINARY, "true": A.CRLF_AUTO_CRLF, "input": A.CRLF_AUTO_INPUT}[eol.autocrlf]
    return ConvAttrs(int(crlf), ident, drv, encoding)


def read_convert_drivers(config) -> dict[bytes, ConvertDriver]:
    """``read_convert_config``: every ``filter.<name>`` section becomes a driver."""
    drivers: dict[bytes, ConvertDriver] = {}
    for backend in reversed(getattr(config, "backends", [config])):
        for section in backend.sections():
            if len(section) != 2 or section[0].lower() != b"filter":
                continue
            name = section[1]
            drv = drivers.setdefault(name, ConvertDriver(name))
            for key, value in backend.items(section):
                k = key.lower()
                if k == b"smudge":
                    drv.smudge = value
                elif k == b"clean":
                    drv.clean = value
                elif k == b"process":
                    drv.process = value
                elif k == b"required":
                    drv.required = git_config_bool(f"filter.{name.decode('utf-8', 'replace')}.required", value)
                elif k == b"parallel":
                    drv.parallel = git_config_bool(f"filter.{name.decode('utf-8', 'replace')}.parallel", value)
    return drivers
