"""Which paths may be checked out: ``read-cache.c``'s ``verify_path`` with
``path.c``'s ``is_ntfs_dotgit`` / ``is_hfs_dotgit`` (``core.protectNTFS``,
``core.protectHFS``).

The same verdicts as dulwich's validators (``dulwich.index.validate_path``,
``validate_path_element_ntfs``, ``validate_path_element_hfs``,
``get_path_element_validator``; t/test_verify_path.py compares them on every
spelling it knows), in a module of their own because importing
``dulwich.index`` imports dulwich's whole object store with it, which a helper
otherwise never needs: a third of its start-up.
"""

from __future__ import annotations

import os
import stat
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterable
from itertools import accumulate, islice

__all__ = [
    "get_path_element_validator",
    "invalid_paths",
    "validate_path",
    "validate_path_element_default",
    "validate_path_element_hfs",
    "validate_path_element_ntfs",
]

INVALID_DOTNAMES = (b".git", b".", b"..", b"")

#: Code points HFS+ ignores when it compares names (git's ``utf8.c``).
HFS_IGNORABLE_CHARS = frozenset({
    0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
    0x206A, 0x206B, 0x206C, 0x206D, 0x206E, 0x206F, 0xFEFF,
})

_WINDOWS_DEVICES = frozenset(
    [b"con", b"prn", b"aux", b"nul"] + [b"com%d" % i for i in range(1, 10)] + [b"lpt%d" % i for i in range(1, 10)]
)


def validate_path_element_default(element: bytes) -> bool:
    """Not ``.git`` (any case), ``.``, ``..`` or empty."""
    return element.lower() not in INVALID_DOTNAMES


def _is_ntfs_dotgit(name: bytes) -> bool:
    """``is_ntfs_dotgit``: ``.git`` or its 8.3 name ``git~1``, followed only by
    dots and spaces up to the end or an alternate data stream's ``:``."""
    if name[:1] == b".":
        if name[1:4].lower() != b"git":
            return False
        i = 4
    elif name[:1].lower() == b"g":
        if name[1:3].lower() != b"it" or name[3:5] != b"~1":
            return False
        i = 5
    else:
        return False
    while i < len(name):
        c = name[i : i + 1]
        if c == b":":
            return True
        if c != b"." and c != b" ":
            return False
        i += 1
    return True


def validate_path_element_ntfs(element: bytes) -> bool:
    """``core.protectNTFS``: no NTFS spelling of ``.git`` in any
    backslash-separated part; trailing dots and spaces do not count."""
    if os.name == "nt" and b"\\" in element:
        return False
    for segment in element.split(b"\\"):
        if _is_ntfs_dotgit(segment):
            return False
    normalized = element.rstrip(b". ").lower()
    if normalized in INVALID_DOTNAMES:
        return False
    if os.name == "nt" and normalized.split(b".", 1)[0].rstrip(b" ") in _WINDOWS_DEVICES:
        return False
    return True


def validate_path_element_hfs(element: bytes) -> bool:
    """``core.protectHFS``: no spelling of ``.git`` HFS+ folds to it (ignorable
    code points dropped, NFD, any case); malformed UTF-8 is refused."""
    import unicodedata

    try:
        text = element.decode("utf-8", errors="strict")
        text = "".join(c for c in text if ord(c) not in HFS_IGNORABLE_CHARS)
        normalized = unicodedata.normalize("NFD", text).lower().encode("utf-8", errors="strict")
    except UnicodeError:
        return False
    return normalized not in INVALID_DOTNAMES and normalized != b"git~1"


def get_path_element_validator(config) -> Callable[[bytes], bool]:
    """The element validator for a repository's config (dulwich ``Config``):
    ``core.protectNTFS`` (default true everywhere, as git's
    ``PROTECT_NTFS_DEFAULT``) and ``core.protectHFS`` (default true on
    macOS), both applying when both are set; neither: the default rules."""
    validators: list[Callable[[bytes], bool]] = []
    if config.get_boolean(b"core", b"protectNTFS", True):
        validators.append(validate_path_element_ntfs)
    if config.get_boolean(b"core", b"protectHFS", sys.platform == "darwin"):
        validators.append(validate_path_element_hfs)
    if not validators:
        return validate_path_element_default
    if len(validators) == 1:
        return validators[0]

    def validate_all(element: bytes) -> bool:
        return all(v(element) for v in validators)

    return validate_all


def validate_path(path: bytes, element_validator: Callable[[bytes], bool] = validate_path_element_default) -> bool:
    """``verify_path``: every ``/``-separated component passes ``element_validator``
    (so no empty component, no leading or trailing slash); on Windows no
    drive prefix."""
    if os.name == "nt" and len(path) >= 2 and path[1:2] == b":" and path[0] < 0x80:
        return False
    return all(element_validator(p) for p in path.split(b"/"))


#: What can begin a path element that ``verify_path`` refuses (".", "..",
#: ".git" and its NTFS/HFS spellings, "git~1", an empty element), seen in
#: paths joined by newlines; non-ASCII bytes (HFS ignorables) are looked for
#: apart. A path with none of them is valid under every rule, so only the
#: few paths that have one go through the element validator.
_SUSPECT = (b"\n.", b"/.", b"\n ", b"/ ", b"//", b"\n/", b"/\n", b"\n\n", b"~", b"\\", b"\0")


#: Paths joined into one string per scan. A 100,000-path tree joined at once
#: made a 4 MB string and two framed copies of it: 12 MiB at once, which the C
#: heap then kept (free, but above the peak of the checkout's own data).
PATHS_PER_SCAN = 2048


def invalid_paths(
    paths: Iterable[bytes],
    validate_element: Callable[[bytes], bool],
    mode_of: Callable[[bytes], int] = lambda p: 0,
) -> list[bytes]:
    """The paths of ``paths`` that git's ``verify_path`` refuses, in order.

    Relative, no empty, ``.`` or ``..`` element, no ``.git`` in any spelling
    ``validate_element`` knows (``core.protectNTFS``/``protectHFS``), and no
    symlink named ``.gitmodules``. Costs a few scans of joined strings of
    :data:`PATHS_PER_SCAN` paths each.
    """
    bad: list[bytes] = []
    it = iter(paths)
    while chunk := list(islice(it, PATHS_PER_SCAN)):
        bad.extend(_invalid_among(chunk, validate_element, mode_of))
    return bad


def _invalid_among(paths: list[bytes], validate_element: Callable[[bytes], bool],
                   mode_of: Callable[[bytes], int]) -> list[bytes]:
    blob = b"\n".join([b"", *paths, b""])
    hits: list[int] = []
    for s in _SUSPECT:
        i = blob.find(s)
        while i != -1:
            hits.append(i + 1 if s[0] == 0x0A else i)
            i = blob.find(s, i + 1)
    if not blob.isascii():
        import re

        hits.extend(m.start() for m in re.finditer(rb"[\x80-\xff]+", blob))
    if not hits:
        return []
    starts = list(accumulate((len(p) + 1 for p in paths), initial=1))
    bad = []
    for n in sorted({min(bisect_right(starts, h) - 1, len(paths) - 1) for h in hits}):
        p = paths[n]
        if not p or b"\0" in p or not validate_path(p, validate_element):
            bad.append(p)
        elif mode_of(p) == stat.S_IFLNK and p.rsplit(b"/", 1)[-1].rstrip(b". ").lower() in (b".gitmodules", b"gitmod~1"):
            bad.append(p)
    return bad
