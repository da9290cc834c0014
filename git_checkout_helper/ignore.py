"""Ignore rules as ``dir.c`` reads and matches them.

Sources (``setup_standard_excludes``): ``core.excludesFile`` (default
``$XDG_CONFIG_HOME/git/ignore``), ``$GIT_DIR/info/exclude``, and the
``.gitignore`` of each directory of the work tree (read without following
a symlink, as git 2.32 and later). Precedence (``last_matching_pattern``):
the ``.gitignore`` lists from the path's own directory up to the root, then
``info/exclude``, then ``core.excludesFile``; in each list the last pattern
that matches decides, a ``!`` pattern re-including.

``prep_exclude``: a directory that is excluded excludes everything below
it (a ``!`` pattern cannot re-include a file in it), and the ``.gitignore``
files below it are never read.

Patterns (``parse_path_pattern``, ``match_basename``, ``match_pathname``):
``#`` comments, trailing spaces trimmed unless escaped, a CR before the LF
dropped, ``!`` negates, a trailing ``/`` matches directories only; a
pattern without a ``/`` matches the basename at any depth below its
``.gitignore``, one with a ``/`` matches the path relative to that
directory with ``wildmatch(WM_PATHNAME)`` (``**`` spans directories).

:class:`IgnoreRules` with ``per_directory_only=True`` is what git 2.39's
``verify_clean_subdirectory`` uses: a fresh ``dir_struct`` that knows only
the per-directory file name, so a file ignored only through
``info/exclude`` or ``core.excludesFile`` counts as untracked there.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Container

from .wildmatch import casefold, wildmatch_regex

__all__ = ["IgnoreRules", "parse_patterns"]

_GLOB_SPECIAL = b"*?[\\"


class _Pattern:
    """One pattern of a list (``struct path_pattern``); ``fold``
    (``core.ignoreCase``): its literal parts kept case-folded and its
    expression ``WM_CASEFOLD``'s, for paths folded by the caller
    (:func:`wildmatch.casefold`)."""

    __slots__ = ("negative", "mustbedir", "nodir", "literal", "regex", "base")

    def __init__(self, text: bytes, base: bytes, fold: bool = False) -> None:
        self.negative = text.startswith(b"!")
        if self.negative:
            text = text[1:]
        self.mustbedir = text.endswith(b"/")
        if self.mustbedir:
            text = text.rstrip(b"/")
        self.nodir = b"/" not in text
        if not self.nodir and text.startswith(b"/"):
            text = text[1:]
        self.base = casefold(base) if fold else base  # the directory of the list, b"" or ending in "/"
        wild = any(c in _GLOB_SPECIAL for c in text)
        self.literal = None if wild else casefold(text) if fold else text
        self.regex = wildmatch_regex(text, not self.nodir, fold) if wild else None

    def matches(self, path: bytes, basename: bytes) -> bool:
        if self.nodir:
            target = basename
        else:
            base = self.base
            if base and not path.startswith(base):
                return False
            target = path[len(base):]
        if self.literal is not None:
            return target == self.literal
        return self.regex.fullmatch(target) is not None


def _trim_trailing_spaces(line: bytes) -> bytes:
    """``trim_trailing_spaces``: drop unescaped trailing spaces."""
    end = len(line)
    while end and line[end - 1:end] == b" ":
        # an odd number of backslashes before it escapes it
        i = end - 1
        n = 0
        while i > 0 and line[i - 1:i] == b"\\":
            n += 1
            i -= 1
        if n % 2:
            break
        end -= 1
    return line[:end]


def parse_patterns(data: bytes, base: bytes, fold: bool = False) -> list[_Pattern]:
    """``add_patterns_from_buffer`` for the list of directory ``base`` (b"" or
    "dir/"); ``fold``: ``core.ignoreCase`` (:class:`_Pattern`)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    out = []
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        line = _trim_trailing_spaces(line)
        if not line or line in (b"!",):
            continue
        out.append(_Pattern(line, base, fold))
    return out


def _read_nofollow(path: bytes) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read()
    except OSError:
        return None


class IgnoreRules:
    """``is_excluded`` for paths of one work tree (relative to ``top``, which ends in "/")."""

    def __init__(self, top: bytes, index: Container[bytes], info_exclude: bytes | None = None,
                 excludes_file: bytes | None = None, per_directory_only: bool = False,
                 ignore_case: bool = False) -> None:
        """``ignore_case`` (``core.ignoreCase``): patterns match paths
        case-insensitively; a directory's ``.gitignore`` is still the one
        of the directory as written."""
        self.top = top
        self.index = index
        self.fold = ignore_case
        self.files: list[list[_Pattern]] = []  # searched in this order
        if not per_directory_only:
            for data in (info_exclude, excludes_file):
                if data:
                    self.files.append(parse_patterns(data, b"", ignore_case))
        self._dir_lists: dict[bytes, list[_Pattern]] = {}
        self._dir_excluded: dict[bytes, bool] = {}

    def _list_of(self, d: bytes) -> list[_Pattern]:
        got = self._dir_lists.get(d)
        if got is None:
            data = _read_nofollow(self.top + (d + b"/.gitignore" if d else b".gitignore"))
            got = self._dir_lists[d] = parse_patterns(data, d + b"/" if d else b"", self.fold) if data else []
        return got

    def _is_dir(self, path: bytes) -> bool:
        """``resolve_dtype``: an index entry is a file; otherwise ``lstat``."""
        if path in self.index:
            return False
        try:
            return stat_mod.S_ISDIR(os.lstat(self.top + path).st_mode)
        except OSError:
            return False

    def _match(self, path: bytes, is_dir: bool) -> bool | None:
        """The decision of the last matching pattern, or None."""
        slash = path.rfind(b"/")
        d = path[:slash] if slash != -1 else b""
        if self.fold:
            path = casefold(path)
        basename = path[slash + 1:]
        while True:
            hit = self.last_match(self._list_of(d), path, basename, is_dir)
            if hit is not None:
                return hit
            if not d:
                break
            slash = d.rfind(b"/")
            d = d[:slash] if slash != -1 else b""
        for lst in reversed(self.files):
            hit = self.last_match(lst, path, basename, is_dir)
            if hit is not None:
                return hit
        return None

    @staticmethod
    def last_match(lst: list[_Pattern], path: bytes, basename: bytes, is_dir: bool) -> bool | None:
        """``last_matching_pattern_from_list``: True when the last pattern of
        ``lst`` that matches is positive, False when negative, None when none does."""
        for p in reversed(lst):
            if p.mustbedir and not is_dir:
                continue
            if p.matches(path, basename):
                return not p.negative
        return None

    def _excluded_dir(self, d: bytes) -> bool:
        """``prep_exclude``: is directory ``d`` (or one above it) excluded?"""
        got = self._dir_excluded.get(d)
        if got is None:
            slash = d.rfind(b"/")
            got = (slash != -1 and self._excluded_dir(d[:slash])) or bool(self._match(d, True))
            self._dir_excluded[d] = got
        return got

    def is_excluded(self, path: bytes, is_dir: bool | None = None) -> bool:
        slash = path.rfind(b"/")
        if slash != -1 and self._excluded_dir(path[:slash]):
            return True
        if is_dir is None:
            is_dir = self._is_dir(path)
        return bool(self._match(path, is_dir))

    __call__ = is_excluded
