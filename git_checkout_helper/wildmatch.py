"""``wildmatch.c`` as regular expressions over bytes: the glob matching of
pathspecs, ignore rules, sparse-checkout patterns and attributes.

``WM_CASEFOLD`` (a pathspec's ``icase`` magic; ``core.ignoreCase`` for
ignore rules, sparse-checkout patterns and attributes, through ``dir.c``'s
``fnmatch_icase_mem``) is git's, quirks included: ``dowild`` lowers the
text's character and the pattern's plain characters (ASCII only), but not
a character after a backslash nor one in a bracket expression, so an
upper-case letter there never matches; a range also matches a lower-case
letter whose upper case is in it, and ``[:upper:]`` any letter. So a
case-folded expression is matched against :func:`casefold`'s text (where
an upper-case letter kept as written never matches, as in git), and the
literal parts its callers compare without one (``fspathncmp``) are folded
the same way.
"""

from __future__ import annotations

import re

__all__ = ["casefold", "wildmatch_regex", "wildmatch_source"]

_CLASSES = {b"alpha": rb"a-zA-Z", b"digit": rb"0-9", b"alnum": rb"a-zA-Z0-9", b"upper": rb"A-Z",
            b"lower": rb"a-z", b"space": rb" \t\n\r\f\v", b"xdigit": rb"0-9a-fA-F",
            b"punct": re.escape(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), b"blank": rb" \t",
            b"cntrl": rb"\x00-\x1f\x7f", b"print": rb"\x20-\x7e", b"graph": rb"\x21-\x7e"}
#: ``[:upper:]`` under ``WM_CASEFOLD`` (``ISUPPER(t) || ISLOWER(t)``).
_CASEFOLD_UPPER = rb"a-zA-Z"
_NEVER = b"(?!)"


def casefold(text: bytes) -> bytes:
    """The text a case-folded match sees: ASCII letters lowered (``tolower``
    in git's C locale; other bytes as they are)."""
    return text.lower()


def _range(lo: bytes, hi: bytes, fold: bool) -> bytes:
    """A range's class body; folded, the lower case of its upper-case letters too."""
    body = re.escape(lo) + b"-" + re.escape(hi)
    if fold:
        a, z = max(lo, b"A"), min(hi, b"Z")
        if a <= z:
            body += re.escape(a.lower()) + b"-" + re.escape(z.lower())
    return body


def _bracket(p: bytes, i: int, pathname: bool, fold: bool) -> tuple[bytes, int] | None:
    """The regex class for the bracket expression at ``p[i] == '['``, and the
    index after it; None where wildmatch gives up (no closing bracket, an
    unknown ``[:class:]``): nothing matches. As wildmatch: ``[:`` not closed
    by ``:]`` before the next ``]`` is a literal ``[``; a reversed range
    (``z-a``) matches its first character only."""
    j = i + 1
    neg = j < len(p) and p[j:j + 1] in (b"!", b"^")
    if neg:
        j += 1
    parts: list[bytes] = []
    first = True
    while j < len(p):
        c = p[j:j + 1]
        if c == b"]" and not first:
            body = b"".join(parts)
            cls = b"[" + (b"^" if neg else b"") + body + (b"/" if neg and pathname else b"") + b"]"
            if not neg and pathname:
                cls = b"(?!/)" + cls
            return cls, j + 1
        first = False
        if c == b"[" and p[j + 1:j + 2] == b":":
            close = p.find(b"]", j + 2)
            if close == -1:
                return None
            if close > j + 2 and p[close - 1:close] == b":":
                name = p[j + 2:close - 1]
                cls = _CASEFOLD_UPPER if fold and name == b"upper" else _CLASSES.get(name)
                if cls is None:
                    return None
                parts.append(cls)
                j = close + 1
                continue
        if c == b"\\" and j + 1 < len(p):
            j += 1
            c = p[j:j + 1]
        if p[j + 1:j + 2] == b"-" and j + 2 < len(p) and p[j + 2:j + 3] != b"]":
            hi = p[j + 2:j + 3]
            k = j + 3
            if hi == b"\\" and k < len(p):
                hi = p[k:k + 1]
                k += 1
            parts.append(_range(c, hi, fold) if c <= hi else re.escape(c))
            j = k
            continue
        parts.append(re.escape(c))
        j += 1
    return None  # no closing bracket: wildmatch aborts, nothing matches


def wildmatch_source(p: bytes, pathname: bool, fold: bool = False) -> bytes | None:
    """``wildmatch(pattern, text, WM_PATHNAME if pathname, WM_CASEFOLD if
    fold)`` as the source of a regular expression over bytes (for
    ``re.DOTALL`` and ``fullmatch``; folded, over :func:`casefold`'s text),
    or None for a pattern that matches nothing (wildmatch gives up on it,
    or it ends in a lone backslash). Under ``WM_PATHNAME`` a ``**`` at the
    start or after a slash, and at the end or before a slash, spans
    directories (none too, for ``**/``); before ``\\/`` it spans at least
    one."""
    out: list[bytes] = []
    i = 0
    while i < len(p):
        c = p[i:i + 1]
        if c == b"*":
            j = i
            while j < len(p) and p[j:j + 1] == b"*":
                j += 1
            if not pathname:
                out.append(b".*")
            elif j - i >= 2 and (i == 0 or p[i - 1:i] == b"/") and (j == len(p) or p[j:j + 1] == b"/"):
                if j == len(p):
                    out.append(b".*")
                else:
                    out.append(b"(?:.*/)?")
                    j += 1
            elif j - i >= 2 and (i == 0 or p[i - 1:i] == b"/") and p[j:j + 2] == b"\\/":
                out.append(b".*")
            else:
                out.append(b"[^/]*")
            i = j
        elif c == b"?":
            out.append(b"[^/]" if pathname else b".")
            i += 1
        elif c == b"[":
            br = _bracket(p, i, pathname, fold)
            if br is None:
                return None
            out.append(br[0])
            i = br[1]
        elif c == b"\\":
            if i + 1 == len(p):
                return None
            out.append(re.escape(p[i + 1:i + 2]))  # (as written, folded or not)
            i += 2
        else:
            out.append(re.escape(casefold(c) if fold else c))
            i += 1
    return b"".join(out)


def wildmatch_regex(p: bytes, pathname: bool, fold: bool = False) -> re.Pattern:
    """:func:`wildmatch_source`, compiled (nothing matches where it gives up)."""
    source = wildmatch_source(p, pathname, fold)
    return re.compile(_NEVER if source is None else source, re.DOTALL)
