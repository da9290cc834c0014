"""Pathspecs as ``pathspec.c`` parses them and ``dir.c`` matches them.

``parse_pathspec`` (for the command line of a checkout): each argument may
start with magic, short (``:/`` top, ``:!`` or ``:^`` exclude, ended by an
optional ``:``) or long (``:(top,glob,literal,icase,exclude)``); the rest is
a path relative to the current directory (unless ``top``), normalized like
``normalize_path_copy`` (``//``, ``./`` and ``dir/..`` folded; a trailing
slash kept; ``..`` above the top is fatal).

``match_pathspec_item``: an empty pattern matches everything; a pattern
that is the path, or a leading directory of it (``d`` or ``d/`` for
``d/x``, but ``d/`` never the file ``d``), matches; a pattern with a glob
character (``*``, ``?``, ``[``, ``\\``) and no ``literal`` magic matches
by ``wildmatch``, where ``*`` crosses ``/`` unless ``glob`` magic is given
(then ``*`` stays in one component and ``**`` spans directories). Every
pattern a path matches is marked matched (``ps_matched``), not only the
first; a path matching an exclude pattern is not matched, and exclude
patterns are never reported as unmatched.
"""

from __future__ import annotations

from .wildmatch import casefold, wildmatch_regex

__all__ = ["PathspecError", "Pathspec", "parse_pathspec"]

_GLOB_SPECIAL = b"*?[\\"
_LONG_MAGIC = {"top", "glob", "literal", "icase", "exclude", "attr"}


class PathspecError(Exception):
    """A pathspec git refuses (its message; fatal, 128)."""


class _Item:
    __slots__ = ("original", "match", "glob", "literal", "icase", "exclude", "regex", "has_wild")

    def __init__(self, original: str, match: bytes, glob: bool, literal: bool, icase: bool,
                 exclude: bool) -> None:
        self.original = original
        self.match = casefold(match) if icase else match
        self.glob, self.literal, self.icase, self.exclude = glob, literal, icase, exclude
        self.has_wild = not literal and any(c in _GLOB_SPECIAL for c in match)
        self.regex = wildmatch_regex(match, glob, icase) if self.has_wild else None

    def matches(self, path: bytes, is_dir: bool = False) -> bool:
        """``match_pathspec_item``: exactly, as a leading directory, or by
        wildmatch; a spec with a trailing slash names a directory (``is_dir``:
        git's ``DO_MATCH_DIRECTORY``, which ``ce_path_match`` sets for a gitlink)."""
        m = self.match
        name = casefold(path) if self.icase else path
        if not m:
            return True
        n = len(m)
        if n <= len(name) and name[:n] == m:
            if n == len(name) or m[-1:] == b"/" or name[n:n + 1] == b"/":
                return True
        elif is_dir and m[-1:] == b"/" and len(name) == n - 1 and m[:-1] == name:
            return True
        return self.regex is not None and self.regex.fullmatch(name) is not None


def _normalize(path: str, original: str) -> str:
    """``normalize_path_copy``: fold ``//``, ``.`` and ``..``; keep a trailing slash."""
    parts: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                raise PathspecError(f"{original}: '{original}' is outside repository at ''")
            parts.pop()
            continue
        parts.append(comp)
    out = "/".join(parts)
    if out and path.endswith("/"):
        out += "/"
    return out


def parse_pathspec(args: list[str], prefix: str = "") -> Pathspec:
    """``parse_pathspec`` for ``args`` given in directory ``prefix`` (relative to the top, "" there)."""
    items = []
    prefix = "" if prefix in ("", ".") else prefix.rstrip("/") + "/"
    for arg in args:
        top = glob = literal = icase = exclude = False
        rest = arg
        if arg.startswith(":(") :
            end = arg.find(")")
            if end == -1:
                raise PathspecError(f"Missing ')' at the end of pathspec magic in '{arg}'")
            for word in arg[2:end].split(","):
                word = word.strip()
                if not word:
                    continue
                if word.startswith("prefix:") or word.split("=", 1)[0] == "attr" or word not in _LONG_MAGIC:
                    raise PathspecError(f"Invalid pathspec magic '{word}' in '{arg}'")
                top |= word == "top"
                glob |= word == "glob"
                literal |= word == "literal"
                icase |= word == "icase"
                exclude |= word == "exclude"
            rest = arg[end + 1:]
        elif arg.startswith(":"):
            i = 1
            while i < len(arg) and arg[i] in "/!^":
                top |= arg[i] == "/"
                exclude |= arg[i] in "!^"
                i += 1
            if i < len(arg) and arg[i] == ":":
                i += 1
            rest = arg[i:]
        if glob and literal:
            raise PathspecError("global 'glob' and 'noglob' pathspec settings are incompatible")
        full = _normalize(rest if top else prefix + rest, arg)
        items.append(_Item(arg, full.encode("utf-8", "surrogateescape"), glob, literal, icase, exclude))
    return Pathspec(items)


class Pathspec:
    """Parsed pathspecs; :meth:`match` marks every positive item a path matches."""

    def __init__(self, items: list[_Item]) -> None:
        self.items = items
        self.positive = [i for i, it in enumerate(items) if not it.exclude]
        self.negative = [i for i, it in enumerate(items) if it.exclude]
        self.matched = [False] * len(items)

    def match(self, path: bytes, is_dir: bool = False) -> bool:
        """``match_pathspec`` with ``ps_matched``: whether ``path`` is selected.

        The excludes are tried, and all marked as seen, only once a positive
        item matched (git's second ``do_match_pathspec`` pass): an exclude
        is reported unmatched when no path got that far."""
        hit = False
        positive = self.positive
        if not positive:
            hit = True  # only excludes: as if ":/" were given
        items = self.items
        for i in positive:
            if items[i].matches(path, is_dir):
                self.matched[i] = True
                hit = True
        if not hit:
            return False
        for i in self.negative:
            self.matched[i] = True
        return not any(items[i].matches(path, is_dir) for i in self.negative)

    def selects(self, path: bytes, is_dir: bool = False) -> bool:
        """Whether ``path`` is selected, marking nothing: the tree walk of
        ``read_tree_some``, after which only the entries it took are matched."""
        items = self.items
        if self.positive and not any(items[i].matches(path, is_dir) for i in self.positive):
            return False
        return not any(items[i].matches(path, is_dir) for i in self.negative)

    def unmatched(self) -> list[str]:
        """``report_path_error``: the pathspecs that matched nothing, as the
        user wrote them (one written twice counts when either matched)."""
        seen = {it.original for it, m in zip(self.items, self.matched, strict=True) if m}
        return [it.original for it, m in zip(self.items, self.matched, strict=True) if not m and it.original not in seen]
