"""The attribute stack's fast matchers against the patterns' own expressions.

``attributes._matcher`` replaces ``_LazyPattern.match`` (attr.c's
``path_matches``, checked against git in test_attr_parse.py) for common
pattern shapes; every pattern/path pair here must get the same answer from
both (for paths at or below the pattern's base, the only ones the stack asks
it about)."""

from __future__ import annotations

import itertools

import pytest

from git_checkout_helper.attributes import AttributeStack, _LazyPattern, _matcher

PATTERNS = [
    b"*.sh", b"*.c", b"*", b"*.tar.gz", b"Makefile", b".sh", b"README.md", b"*.[ch]", b"t????-*.sh",
    b"/Makefile", b"/docs/index.md", b"docs/index.md", b"/docs/*", b"docs/**/*.adoc", b"**/foo", b"a\\*b",
    b"*sh", b"x/y/z", b"*.SH", b"/docs/a*", b"t[0-9]*/*", b"/sub/*.sh", b"sub/**", b"/sub**/a.sh",
    b"a*b", b"[!a]*", b"*/*", b"?",
]
PATHS = [
    b"Makefile", b"sub/Makefile", b"Makefile.in", b"a.sh", b"sub/a.sh", b"sub/dir/a.sh", b".sh", b"sub/.sh",
    b"a.shx", b"ash", b"sub/ash", b"a.c", b"a.h", b"docs/index.md", b"sub/docs/index.md", b"docs/x/y.adoc",
    b"docs/a", b"docs/a/b", b"foo", b"bar/foo", b"a*b", b"axb", b"t0000-basic.sh", b"x/y/z", b"sub/x/y/z",
    b"README.md", b"dir/README.md", b"a.tar.gz", b"b.gz", b"A.SH", b"sub/sub", b"sub",
]


@pytest.mark.parametrize("base", [b"", b"sub", b"docs"])
def test_fast_matcher_agrees_with_wildmatch(base):
    checked = 0
    for raw, path in itertools.product(PATTERNS, PATHS):
        if base and not path.startswith(base + b"/"):
            continue
        p = _LazyPattern(raw, base)
        assert _matcher(p)(path) == p.match(path), (raw, base, path)
        checked += 1
    assert checked > 100 if not base else checked > 20


def test_stack_drops_patterns_without_checkout_attributes():
    files = {
        b"": b"* whitespace=trail\n*.sh text eol=lf diff=sh\n*.bin binary\n/Makefile -text\n",
        b"sub": b"*.sh -text\nx ident\n",
    }
    stack = AttributeStack(files.get, lambda d: d in files)
    assert stack.check(b"a.sh") == {b"text": True, b"eol": b"lf"}
    assert stack.check(b"sub/a.sh") == {b"text": False, b"eol": b"lf"}
    assert stack.check(b"sub/x") == {b"ident": True}
    assert stack.check(b"a.bin") == {b"text": False}
    assert stack.check(b"Makefile") == {b"text": False}
    assert stack.check(b"sub/Makefile") == {}
    assert stack.check(b"README") == {}
    # "* whitespace=trail" holds nothing checkout reads: no matcher for it
    assert all(len(w) for _, w in stack._dir_matchers(b""))
    assert len(stack._dir_matchers(b"")) == 3
