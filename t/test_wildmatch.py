"""wildmatch.py against git: each pattern in a .gitignore of its own
directory, each name asked about with `git check-ignore`, with
core.ignoreCase off and on (WM_CASEFOLD: brackets, ranges, classes and
escapes keep git's rules), compared with ignore.IgnoreRules' verdicts; and
attributes and sparse patterns under core.ignoreCase."""

from __future__ import annotations

import pytest
from conftest import git

from git_checkout_helper.attributes import AttributeStack
from git_checkout_helper.ignore import IgnoreRules
from git_checkout_helper.sparse import SparseCheckout
from git_checkout_helper.wildmatch import casefold, wildmatch_regex

PATTERNS = [
    "*.TXT", "*.txt", "README", "readme", "[A-Z]*", "[a-z]*", "[A]*", "[!A]*", "[Ab]x", "[[:upper:]]*",
    "[[:lower:]]*", "[[:alpha:]]?", "\\Ax", "\\ax", "X?Z", "[Z-a]*", "[!Z-a]*", "sub/*.C", "**/D/*.h", "Q*",
    "[^q]x", "a[B-d]c", "[!B-D]1",
]
NAMES = [
    "a.txt", "A.TXT", "a.Txt", "README", "readme", "ReadMe", "abc", "Abc", "ax", "Ax", "bx", "Bx", "xyz", "XyZ",
    "x_z", "_q", "z", "Z", "`", "[", "qx", "Qx", "aCc", "abc", "AbC", "a1", "c1", "C1", "E1",
]


def _tree(tmp_path, env):
    top = tmp_path / "w"
    git(tmp_path, "init", "-q", str(top), env=env)
    paths = []
    for i, pattern in enumerate(PATTERNS):
        d = top / f"p{i}"
        d.mkdir()
        (d / ".gitignore").write_text(pattern + "\n")
        for name in NAMES:
            paths.append(f"p{i}/{name}")
        if "/" in pattern:
            paths += [f"p{i}/sub/x.c", f"p{i}/SUB/x.C", f"p{i}/d/y.h", f"p{i}/e/D/y.H", f"p{i}/Sub/X.c"]
    return top, paths


@pytest.mark.parametrize("ignore_case", [False, True])
def test_ignore_patterns_match_as_git_s(git_env, tmp_path, ignore_case):
    top, paths = _tree(tmp_path, git_env)
    git(top, "config", "core.ignoreCase", str(ignore_case).lower(), env=git_env)
    out = git(top, "check-ignore", "--no-index", "--stdin", "-z", "-v", "-n", env=git_env,
              input=b"".join(p.encode() + b"\0" for p in paths)).split(b"\0")
    # -z -v -n: source, line, pattern, path; an empty source when nothing matched
    want = {out[i + 3].decode() for i in range(0, len(out) - 3, 4) if out[i]}
    rules = IgnoreRules(bytes(top) + b"/", set(), ignore_case=ignore_case)
    got = {p for p in paths if rules.is_excluded(p.encode(), False)}
    assert got == want
    assert len(want) > len(paths) // 8  # (the patterns match something)


def test_casefold_follows_git_s_quirks():
    """dowild lowers the text and the pattern's plain characters, not what
    a backslash escapes nor a bracket's own characters."""
    def match(pattern: bytes, text: bytes) -> bool:
        return wildmatch_regex(pattern, False, True).fullmatch(casefold(text)) is not None

    assert match(b"*.TXT", b"a.txt") and match(b"*.txt", b"A.TXT")
    assert not match(b"[A]x", b"Ax") and not match(b"[A]x", b"ax") and match(b"[a]x", b"Ax")
    assert match(b"[A-Z]x", b"ax") and match(b"[a-z]x", b"AX")
    assert match(b"[[:upper:]]", b"a") and match(b"[[:lower:]]", b"A")
    assert not match(b"\\Ax", b"Ax") and match(b"\\ax", b"Ax")
    assert match(b"[!A]", b"A")


def test_attributes_match_case_insensitively_under_ignore_case():
    files = {b"": b"*.txt eol=crlf\n/Docs/*.MD ident\n", b"src": b"*.c text\n"}

    def stack(ignore_case: bool) -> AttributeStack:
        return AttributeStack(lambda d: files.get(d), lambda d: d in files, ignore_case=ignore_case)

    folded, plain = stack(True), stack(False)
    assert folded.check(b"SRC/Z.TXT").get(b"eol") == b"crlf"
    assert plain.check(b"SRC/Z.TXT").get(b"eol") is None
    assert folded.check(b"docs/a.md").get(b"ident") is True
    assert folded.check(b"DOCS/b.Md").get(b"ident") is True
    assert plain.check(b"docs/a.md").get(b"ident") is None
    # which .gitattributes apply is told by the directory as written
    assert folded.check(b"src/a.C").get(b"text") is True
    assert folded.check(b"SRC/a.c").get(b"text") is None


def test_sparse_patterns_match_case_insensitively_under_ignore_case():
    cone = [b"/*", b"!/*/", b"/Src/"]
    assert SparseCheckout(cone, True, ignore_case=True).included(b"src/a")
    assert SparseCheckout(cone, True, ignore_case=True).included(b"SRC/b/c")
    assert not SparseCheckout(cone, True).included(b"src/a")
    assert SparseCheckout(cone, True, ignore_case=True).dir_included(b"SRC")
    patterns = [b"/*.TXT", b"/Docs/"]
    assert SparseCheckout(patterns, False, ignore_case=True).included(b"a.txt")
    assert SparseCheckout(patterns, False, ignore_case=True).included(b"B.Txt")
    assert SparseCheckout(patterns, False, ignore_case=True).included(b"docs/x")
    assert not SparseCheckout(patterns, False).included(b"docs/x")
