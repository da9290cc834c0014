"""The attribute stack's per-directory index (attributes._DirIndex) gives what
matching every pattern in file order gives, for every path.

The reference is the definition (attr.c's ``fill``): each pattern that can
apply in the path's directory (its own and its ancestors' files, then
info/attributes) matched with the pattern's own ``match``, from the last;
each line's states from its last; the first state found for an attribute
decides it, and one newly set true that names a macro fills the macro's
states the same way. Patterns of every shape the index files differently
(``*.ext``, plain names, anchored literal paths, globs) are mixed in random
files over random trees, with macros (nested, unset, unspecified).
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from conftest import git, twin_env

from git_checkout_helper.attributes import AttributeStack, _LazyPattern

SHAPES = [
    b"*.sh", b"*.c", b"*.tar.gz", b"*.gz", b"*sh", b"*.SH", b"*", b"*.[ch]", b"t????-*.sh", b"Makefile",
    b"README.md", b".sh", b"/Makefile", b"/docs/index.md", b"docs/index.md", b"/docs/*", b"docs/**/*.adoc",
    b"**/foo", b"x/y/z", b"/sub/*.sh", b"sub/**", b"foo", b"a\\*b", b"/a.sh", b"dir/", b"*.md",
    # anchored globs decided per directory (attributes._in_dir), and some that are not
    b"/docs/**/*.adoc", b"**/*.sh", b"/*", b"/*.md", b"*/*.c", b"sub/*/Makefile", b"/sub/dir/*",
    b"docs/**/index.md", b"/t/t????-*.sh", b"/sub/**/*", b"/*/dir/*.sh", b"**/x/*", b"/docs/*.md",
    # a ``**`` right after a literal lead that does not end in a slash (attributes._LazyPattern)
    b"/sub**/*.sh", b"/do**/index.md", b"/a**",
]
ATTRS = [b"text", b"-text", b"!text", b"eol=lf", b"eol=crlf", b"!eol", b"ident", b"-ident", b"binary",
         b"crlf", b"-crlf", b"filter=lfs", b"working-tree-encoding=UTF-16", b"whitespace=trail", b"mymacro",
         b"-mymacro", b"!mymacro", b"outer", b"-binary", b"!binary"]
DIRS = [b"", b"sub", b"docs", b"sub/dir", b"docs/x", b"t", b"docs/x/y", b"sub/x", b"a/dir", b"x"]
NAMES = [b"Makefile", b"a.sh", b"b.c", b"b.h", b"README.md", b"index.md", b"foo", b"a.tar.gz", b"x.gz",
         b"ash", b"A.SH", b"t0000-basic.sh", b".sh", b"a*b", b"axb", b"z", b"y.adoc", b"other", b"subx.sh",
         b"doindex.md"]


def reference(stack: AttributeStack, path: bytes) -> dict:
    slash = path.rfind(b"/")
    d = path[:slash] if slash != -1 else b""
    found: dict = {}

    def fill(states):
        for name, value in reversed(states):
            if name not in found:
                found[name] = value
                if value is True and name in stack.macros:
                    fill(stack.macros[name])

    for pattern, states in reversed((*stack._dir_patterns(d), *stack._info)):
        if _LazyPattern(pattern.pattern, pattern.base).match(path):
            fill(states)
    wanted = (b"crlf", b"ident", b"filter", b"eol", b"text", b"working-tree-encoding")
    return {name: value for name, value in found.items() if value is not None and name in wanted}


def random_file(rng: random.Random, macros: bool) -> bytes:
    lines = []
    if macros:
        lines.append(b"[attr]mymacro text eol=crlf -ident")
        lines.append(b"[attr]outer mymacro filter=outer -text")
    for _ in range(rng.randint(1, 12)):
        lines.append(rng.choice(SHAPES) + b" " + b" ".join(rng.sample(ATTRS, rng.randint(1, 3))))
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("seed", range(80))
def test_index_agrees_with_matching_every_pattern(seed):
    rng = random.Random(seed)
    files = {d: random_file(rng, d == b"") for d in DIRS if rng.random() < 0.6 or d == b""}
    info = random_file(rng, True) if rng.random() < 0.5 else None
    stack = AttributeStack(files.get, lambda d: d in files, info_attributes=info)
    paths = [(d + b"/" + n if d else n) for d in DIRS for n in NAMES]
    rng.shuffle(paths)
    for path in paths:
        assert stack.check(path) == reference(stack, path), (seed, path, files, info)


def test_results_are_shared_per_match_set():
    files = {b"": b"*.sh text eol=lf\n*.c ident\n"}
    stack = AttributeStack(files.get, lambda d: d in files)
    assert stack.check(b"a.sh") is stack.check(b"b.sh")
    assert stack.check(b"a.sh") == {b"text": True, b"eol": b"lf"}
    assert stack.check(b"x.txt") == {}


def test_a_real_projects_directories_need_no_glob_per_path():
    """git.git's root attributes (the lines checkout reads attributes from):
    every directory's index tests its paths by suffix, name or a hit for all,
    none by a regular expression per path; and its verdicts are the
    reference's."""
    root = (b"* whitespace=trail,space\n*.[ch] whitespace=indent,trail,space,incomplete diff=cpp\n"
            b"*.sh whitespace=indent,trail,space,incomplete text eol=lf\n*.perl text eol=lf diff=perl\n"
            b"*.bat text eol=crlf\nCODE_OF_CONDUCT.md -whitespace\n"
            b"/Documentation/**/*.adoc text eol=lf whitespace=trail,space,incomplete\n"
            b"/command-list.txt text eol=lf\n/mergetools/* text eol=lf\n/t/oid-info/* text eol=lf\n"
            b"/Documentation/git-merge.adoc conflict-marker-size=32\n/t/t????-*.sh conflict-marker-size=32\n"
            b"/templates/hooks/*.sample whitespace=indent,trail,space,incomplete text eol=lf\n")
    stack = AttributeStack(lambda d: root if d == b"" else None, lambda d: d == b"")
    paths = [b"Makefile", b"command-list.txt", b"a.sh", b"Documentation/git.adoc", b"Documentation/x.txt",
             b"Documentation/technical/api.adoc", b"Documentation/RelNotes/2.0.adoc", b"mergetools/vimdiff",
             b"t/oid-info/hash-info", b"t/t0000-basic.sh", b"templates/hooks/pre-commit.sample",
             b"templates/hooks/README", b"compat/win32/x.bat", b"gitweb/static/js/x.js"]
    for path in paths:
        slash = path.rfind(b"/")
        assert stack._dir_index(path[:slash] if slash != -1 else b"")._others == [], path
        assert stack.check(path) == reference(stack, path), path
    # An anchored pattern whose directory is literal (``/mergetools/*``) is
    # decided for a directory by comparing names: its expression is never
    # compiled (the reference above matches with copies of the patterns).
    literal = {p.pattern: p for p, _states in stack._dir_patterns(b"")
               if p.pattern in (b"/mergetools/*", b"/t/oid-info/*", b"/templates/hooks/*.sample")}
    assert len(literal) == 3 and all(p._regex is None for p in literal.values())

    # Each directory decides a path by its extension (its suffixes are all
    # ``*.ext``): every distinct extension is matched once, whatever its
    # tail. The root's literal paths are probed first and kept out of the
    # memos.
    root_index = stack._dir_index(b"")
    assert root_index._by_ext is not None and b".txt" not in root_index._by_ext  # command-list.txt
    assert stack.check(b"other.txt") == {} and b".txt" in root_index._by_ext
    assert stack.check(b"command-list.txt") == {b"text": True, b"eol": b"lf"}
    sub = [p for p in paths if not p.startswith((b"mergetools/", b"t/oid-info/", b"command-list"))]
    for path in sub:
        slash = path.rfind(b"/")
        index = stack._dir_index(path[:slash] if slash != -1 else b"")
        dot = path.rfind(b".", slash + 1)
        assert index._by_ext is not None and (path[dot:] if dot != -1 else b"") in index._by_ext, path
    # Directories left with the same patterns share one view, and its memo.
    dirs = (b"gitweb/static/js", b"compat/win32", b"builtin")
    index = stack._dir_index(dirs[0])
    assert all(stack._dir_index(d) is index for d in dirs)
    for d in dirs:
        for name in (b"a.js", b"jquery.min.js", b"x.sh", b"run.sh", b"LICENSE", b".sh", b"y.c"):
            assert stack.check(d + b"/" + name) == reference(stack, d + b"/" + name), name
    assert sorted(index._by_ext) == [b"", b".bat", b".c", b".js", b".sh"]  # (x.bat: compat/win32, above)


SUFFIXES = [b"*.sh", b"*.c", b"*.tar.gz", b"*.gz", b"*.SH", b"*", b"*.md", b"*.h", b"*.[ch]", b"*sh", b"*_x.c"]


@pytest.mark.parametrize("seed", range(20))
def test_suffixes_alone_are_decided_by_the_tail(seed):
    """An index of suffix patterns (and ``*``) decides each distinct tail
    (or extension, when every suffix is one) once, with the reference's
    verdict: paths shorter than the longest suffix, tails that reach into
    the directory, one suffix the tail of another, suffixes with two dots,
    none, or one not leading; a glob among them leaves each path to be matched."""
    rng = random.Random(seed)
    lines = [rng.choice(SUFFIXES) + b" " + b" ".join(rng.sample(ATTRS, rng.randint(1, 3)))
             for _ in range(rng.randint(1, 8))]
    files = {b"": b"[attr]mymacro text eol=crlf -ident\n" + b"\n".join(lines) + b"\n"}
    stack = AttributeStack(files.get, lambda d: d in files)
    names = NAMES + [b"gz", b"c", b"h", b".gz", b"x.tar.gz", b"y.tar.gz", b"tar.gz", b"a.gz.c", b"a_x.c"]
    paths = [(d + b"/" + n if d else n) for d in (b"", b"s", b"sub/dir.tar", b"a.tar") for n in names]
    rng.shuffle(paths)
    for path in paths + paths:
        assert stack.check(path) == reference(stack, path), (seed, path, lines)
    index = stack._dir_index(b"")
    if any(line.startswith(b"*.[ch]") for line in lines):  # a glob: matched path by path
        assert index._by_tail is None
    else:
        assert index._by_tail and len(index._by_tail) < len(paths), lines
        # a second memo, by the last extension, unless a suffix has two dots, none or one not leading
        dotted = not any(line.startswith((b"*.tar.gz ", b"*sh ", b"*_x.c ")) for line in lines)
        assert (index._by_ext is not None) == dotted, lines


# -- the memos against git's checkout ------------------------------------------------------

_TWIN_ATTRIBUTES = {
    b"": b"*.sh eol=crlf\n*.bat text eol=crlf\nREADME eol=crlf\n/top.txt eol=crlf\n/docs/*.md eol=crlf\n",
    b"sub": b"*.c -text\n/x.c text eol=crlf\n",  # (a literal path in sub's own file, after a suffix)
    b"odd": b"*sh eol=crlf\n*.tar.gz eol=crlf\n",  # suffixes that are no extension: no memo by extension
    # git.git's t/.gitattributes shapes: anchored, a literal directory (decided
    # by comparing names), and one whose directory is a glob (an expression)
    b"t": b"/t4013/* eol=crlf\n/t4256/1/* eol=crlf\n/t9*/*.dump eol=crlf\n",
}
_TWIN_FILES = [b"top.txt", b"other.txt", b"README", b"a/README", b"a/run.sh", b"a/run.c", b"a/x.bat",
               b"b/run.sh", b"b/notes.txt", b"b/README.md", b"docs/a.md", b"docs/b.txt", b"docs/sub/c.md",
               b"sub/x.c", b"sub/y.c", b"sub/z.sh", b"odd/bash", b"odd/x.sh", b"odd/Makefile", b"odd/a.tar.gz",
               b"odd/b.gz", b"c/.sh", b"c/noext", b"t/t4013/a", b"t/t4013/sub/b", b"t/t4013x/c", b"t/t4256/1/d",
               b"t/t4256/e", b"t/t9300/x.dump", b"t/t9300/y.txt", b"t/t4013.dump"]


def test_checkout_writes_what_git_writes_with_the_memos(tmp_path):
    """A clone's checkout by ours and by git of files whose line endings the
    attributes decide: by a plain name (``README``), a literal path (at the
    root and, as ``/x.c``, in ``sub``'s own file), anchored globs, suffixes
    that are extensions (both memos) and ones that are not (``*sh``,
    ``*.tar.gz``), in directories that share one view (``a``, ``b``, ``c``).
    Every file's bytes are git's."""
    env = twin_env(tmp_path)
    src = tmp_path / "src"
    git(None, "init", "-q", "-b", "main", str(src), env=env)
    for d, text in _TWIN_ATTRIBUTES.items():
        (src / d.decode()).mkdir(parents=True, exist_ok=True)
        (src / d.decode() / ".gitattributes").write_bytes(text)
    for name in _TWIN_FILES:
        (src / name.decode()).parent.mkdir(parents=True, exist_ok=True)
        (src / name.decode()).write_bytes(b"one\ntwo\n")
    git(src, "add", "-A", env=env)
    git(src, "commit", "-q", "-m", "files", env=env)
    trees = {}
    for who in ("ours", "git"):
        wt = tmp_path / who
        git(None, "clone", "-q", "--no-checkout", str(src), str(wt), env=env)
        if who == "git":
            git(wt, "-c", "checkout.workers=2", "-c", "checkout.thresholdForParallelism=0", "checkout", "-q", "-f",
                "HEAD", env=env)
        else:
            subprocess.run([sys.executable, "-m", "git_checkout_helper", "parallel-checkout", "-q", "-f", "-j", "2",
                            "--threshold", "0", "HEAD"], cwd=wt, env=env, check=True, capture_output=True)
        trees[who] = {name: (wt / name.decode()).read_bytes() for name in _TWIN_FILES}
    assert trees["ours"] == trees["git"]
    crlf = {name for name, data in trees["git"].items() if b"\r\n" in data}
    assert {b"top.txt", b"README", b"a/README", b"a/run.sh", b"b/run.sh", b"docs/a.md", b"sub/x.c",
            b"odd/bash", b"odd/x.sh", b"odd/a.tar.gz", b"t/t4013/a", b"t/t4256/1/d", b"t/t9300/x.dump"} <= crlf
    assert not crlf & {b"other.txt", b"b/README.md", b"sub/y.c", b"odd/Makefile", b"odd/b.gz", b"c/noext",
                       b"t/t4013/sub/b", b"t/t4013x/c", b"t/t4256/e", b"t/t9300/y.txt", b"t/t4013.dump"}
