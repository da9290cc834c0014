"""Reading and matching ``.gitattributes`` as git 2.39's attr.c does
(attr.py, attributes.py), twin tests against ``git check-attr``.

A corpus of attribute files in several directories (the root, a
subdirectory, one below it with a BOM and CRLF line ends, one with a NUL
byte), ``$GIT_DIR/info/attributes`` and ``core.attributesFile`` covers the
syntax (comments, blanks, quoted patterns with spaces and escapes, malformed
quoting, ``\\!`` and negative patterns, the four states, ``name=value`` with
``=`` or nothing after it, invalid attribute names, overlong lines, macros
where they are allowed and not, the builtin ``binary``) and the matching
(basename patterns, ``*.ext``, character classes and ranges, case, ``**/``,
``a/**/b``, ``/anchored``, trailing ``/`` directory patterns, the literal lead
of ``match_pathname``). Each line sets attributes checkout reads, most of
them ``filter=<tag>``, so a difference names the line. git's verdicts for
paths in every directory are compared with the stack's: ``check-attr`` reads
the work tree's files (our :class:`AttrFile`), ``check-attr --cached`` the
index's blobs (plain bytes).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT, git, isolated_git_env, run_git

from git_checkout_helper.attr import ATTR_MAX_FILE_SIZE, AttrFile
from git_checkout_helper.attributes import AttributeStack

WANTED = (b"crlf", b"ident", b"filter", b"eol", b"text", b"working-tree-encoding")


def _pad(head: bytes, tail: bytes, length: int) -> bytes:
    """A line of ``length`` bytes: ``head``, spaces, ``tail``."""
    return head + b" " * (length - len(head) - len(tail)) + tail


ROOT_FILE = b"\n".join([
    b"# a comment",
    b"  \t# an indented comment",
    b"",
    b"   ",
    b"*.txt text",
    b"*.TXT eol=crlf",
    b'"with space.c" filter=quoted',
    b'"tab\\there" filter=tab',
    b'"oct\\303\\251.c" filter=octal',
    b'"esc\\"q" filter=escquote',
    b'"bad\\q" filter=badquote',
    b'"oct\\8" filter=badoctal',
    b'"unterminated filter=unterminated',
    b'"adj"ident',
    b'"  lead" filter=leadspace',
    b"\\!bang filter=bang",
    b"*.neg filter=negbase",
    b"!*.neg filter=negative",
    b"*.u text ident eol=lf",
    b"*.u !text -ident",
    b"*.v filter=a=b",
    b"*.e filter=",
    b"*.x eol=lf\ttext\t -crlf\t",
    b"*.bad text filter=bad1 bad@name",
    b"*.bad2 filter=bad2 -",
    b"*.bad3 filter=bad3 =x",
    b"*.bad4 filter=bad4 --text",
    b"*.bad5 -text=foo eol=crlf=x !ident=y",
    b"*.bad6 eol=lf",
    b"*.bad6 !eol=foo",
    b"*.bad7 filter=bad7 _ok.-9 -9ok",
    b"*.vt\vtext filter=vt",
    b"*.ff text\ffilter=ff",
    b"[attr]mymacro text eol=crlf -ident",
    b"[attr]nested mymacro filter=nested",
    b"[attr]bad@ text",
    b"[attr] text",
    b'"[attr]qmacro" eol=lf',
    b'"[attr] spaced more" crlf',
    b"*.m mymacro",
    b"*.m2 -text mymacro",
    b"*.m3 mymacro text=manual",
    b"*.m4 nested",
    b"*.m5 qmacro",
    b"*.m6 spaced",
    b"*.m7 !mymacro",
    b"*.m8 mymacro=value",
    b"*.bin binary",
    b"*.bin2 -text binary",
    b"*.bin3 binary text",
    b"*.nb binary",
    b"*.nb -binary",
    b"**/deep/*.c filter=deep",
    b"a/**/b filter=ab",
    b"/anchored filter=anchored",
    b"anchored2/ filter=dirpat",
    b"sub/x/ filter=dirpat2",
    b"/ filter=slash",
    b'"" filter=empty',
    b"docs/*.md filter=docsmd",
    b"/docs/*.[c/] filter=brslash",
    b"[a-c]*.cls filter=cls",
    b"[!a-c]*.ncls filter=ncls",
    b"[[:digit:]]*.dig filter=dig",
    b"[[:nope:]]*.dig filter=nope",
    b"[z-ab]*.rev filter=rev",
    b"[[:]x.brk filter=brk",
    b"[]]x.cb filter=cb",
    b"?.q filter=q",
    b"*.crlf text eol=crlf\r",
    b"/foo**/x filter=quirk",
    b"/dstar**tail filter=dstar",
    b"st/**\\/z filter=starslash",
    b"*.tr\\ filter=trailbs",
    b"*/one.lvl filter=onelvl",
    b"CamelCase filter=case",
    b"* whitespace=trail",
    _pad(b"x.long filter=long", b"ident", 2048),
    _pad(b"x.edge filter=edge", b"ident", 2047),
    b"last.line filter=nolf",
])
SUB_FILE = b"\n".join([
    b"*.txt -text",
    b"[attr]submacro text",
    b"*.sm submacro filter=sm",
    b"/local filter=sublocal",
    b"deep/** filter=subdeep",
    b"*.m -mymacro",
    b"x/*.c filter=subx",
    b'"*.sq" filter=subquoted',
    b"*.u text",
    b"",
])
CRLF_FILE = b"\xef\xbb\xbf*.bom filter=bom\r\n*.cr text\r\n" + _pad(b"x.crlong filter=crlong", b"ident", 2047) + b"\r\n"
NUL_FILE = b"*.a filter=beforenul\n*.b filter=x\0y\n*.c filter=afternul\n"
INFO_FILE = b"*.info filter=info\n*.txt eol=lf\n[attr]mymacro text eol=lf\n"
GLOBAL_FILE = b"*.glob filter=global\n[attr]gmacro ident\n*.gm gmacro\n*.txt filter=globaltxt\n*.m working-tree-encoding=UTF-16\n"
FILES = {b"": ROOT_FILE, b"sub": SUB_FILE, b"sub/x": CRLF_FILE, b"nul": NUL_FILE}

NAMES = [
    b"a.txt", b"A.TXT", b"a.TXT", b"with space.c", b"tab\there", b"oct\303\251.c", b'esc"q', b'"badq"', b'"oct\\8"', b'"oct8"',
    b'"unterminated', b"adj", b"  lead", b"lead", b"!bang", b"bang", b"a.neg", b"a.u", b"a.v", b"a.e", b"a.x",
    b"a.bad", b"a.bad2", b"a.bad3", b"a.bad4", b"a.bad5", b"a.bad6", b"a.bad7", b"a.vt", b"a.vt\vtext", b"a.ff",
    b"a.m", b"a.m2", b"a.m3", b"a.m4", b"a.m5", b"a.m6", b"a.m7", b"a.m8", b"a.bin", b"a.bin2", b"a.bin3", b"a.nb",
    b"z.c", b"b", b"anchored", b"anchored2", b"f", b"r.md", b"a.cls", b"d.cls", b"b.ncls", b"d.ncls", b"1.dig",
    b"x.dig", b"b.rev", b"z.rev", b"a.rev", b"[x.brk", b":x.brk", b"x.brk", b"]x.cb", b"a.q", b"ab.q", b"a.crlf",
    b"x", b"foox", b"dstartail", b"a.tr\\", b"a.tr", b"one.lvl", b"CamelCase", b"camelcase", b"x.long", b"x.edge",
    b"last.line", b"a.info", b"a.glob", b"a.gm", b"a.sm", b"local", b"a.sq", b"*.sq", b"a.bom", b"a.cr",
    b"x.crlong", b"a.a", b"a.b", b"a.c", b"t", b"r", b"z",
]
DIRS = [b"", b"sub", b"sub/x", b"sub/x/y", b"sub/deep", b"sub/deep/r", b"nul", b"deep", b"x/deep", b"deep/y",
        b"a", b"a/x", b"a/x/y", b"x/a", b"anchored2", b"docs", b"docs/x", b"sub/docs", b"foo", b"foo/a/b", b"fo",
        b"foobar", b"dstar/a", b"st/a/b", b"st", b"lvl"]
PATHS = [d + b"/" + n if d else n for d in DIRS for n in NAMES]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A repository holding the corpus in its work tree and, added, in its index."""
    top = tmp_path_factory.mktemp("attr")
    home = tmp_path_factory.mktemp("home")
    env = {**isolated_git_env(home), "GIT_ATTR_NOSYSTEM": "1"}
    git(top, "init", "-q", env=env)
    for d, data in FILES.items():
        os.makedirs(top / os.fsdecode(d), exist_ok=True)
        (top / os.fsdecode(d) / ".gitattributes").write_bytes(data)
    (top / ".git" / "info").mkdir(exist_ok=True)
    (top / ".git" / "info" / "attributes").write_bytes(INFO_FILE)
    (home / "global-attributes").write_bytes(GLOBAL_FILE)
    git(top, "config", "core.attributesFile", str(home / "global-attributes"), env=env)
    git(top, "add", "-A", env=env)
    return top, env


def _git_check_attr(top, env, paths, *args: bytes) -> dict[bytes, dict[bytes, object]]:
    """``git check-attr -z --stdin <args>``: per path, each attribute git
    prints that checkout reads; "unspecified" ones left out."""
    out = run_git(top, "check-attr", "-z", "--stdin", *map(os.fsdecode, args), env=env,
                  input=b"\0".join(paths) + b"\0").stdout.split(b"\0")
    got: dict[bytes, dict[bytes, object]] = {p: {} for p in paths}
    for i in range(0, len(out) - 1, 3):
        path, name, info = out[i:i + 3]
        if name in WANTED and info != b"unspecified":
            got[path][name] = {b"set": True, b"unset": False}.get(info, info)
    return got


def _stack(top, cached: bool) -> AttributeStack:
    """Our stack over the corpus: the work tree's files as files, or (``cached``) the index's blobs."""
    blobs = {}
    if cached:
        for line in git(top, "ls-files", "-s", "-z").split(b"\0"):
            if line.endswith(b".gitattributes"):
                meta, path = line.split(b"\t", 1)
                blobs[path[:-len(b".gitattributes")].rstrip(b"/")] = git(top, "cat-file", "blob",
                                                                         meta.split()[1].decode())

    def read(d: bytes) -> bytes | None:
        if cached:
            return blobs.get(d)
        try:
            return AttrFile((top / os.fsdecode(d) / ".gitattributes").read_bytes())
        except OSError:
            return None

    return AttributeStack(read, lambda d: read(d) is not None, info_attributes=INFO_FILE, global_attributes=GLOBAL_FILE)


@pytest.mark.parametrize("cached", [False, True], ids=["worktree", "index"])
def test_all_attributes_as_git_check_attr(corpus, cached):
    top, env = corpus
    want = _git_check_attr(top, env, PATHS, b"-a", *([b"--cached"] if cached else []))
    stack = _stack(top, cached)
    differ = {p: (got, want[p]) for p in PATHS if (got := stack.check(p)) != want[p]}
    assert differ == {}  # path: (ours, git's)
    assert sum(1 for v in want.values() if v) > len(PATHS) // 3  # the corpus says something about most


def test_each_attribute_as_git_check_attr(corpus):
    """``git check-attr <attr>... --``: the same, unspecified attributes included."""
    top, env = corpus
    want = _git_check_attr(top, env, PATHS, *WANTED)
    stack = _stack(top, False)
    differ = {p: (got, want[p]) for p in PATHS if (got := stack.check(p)) != want[p]}
    assert differ == {}  # path: (ours, git's)


def test_corpus_cases_git_and_we_agree_on(corpus):
    """A few verdicts spelled out, so the corpus cannot silently stop covering them."""
    top, env = corpus
    stack = _stack(top, False)
    cached = _stack(top, True)
    assert stack.check(b"with space.c") == {b"filter": b"quoted"}
    assert stack.check(b'"badq"') == {b"filter": b"badquote"}
    assert stack.check(b"!bang") == {b"filter": b"bang"}
    assert stack.check(b"a.neg") == {b"filter": b"negbase"}
    assert stack.check(b"a.u") == {b"ident": False, b"eol": b"lf"}
    assert stack.check(b"a.bad") == {}
    assert stack.check(b"a.nb") == {}
    assert stack.check(b"a.bin2") == {b"text": False}
    assert stack.check(b"sub/a.m") == {b"working-tree-encoding": b"UTF-16"}
    assert stack.check(b"foo/a/b/x") == stack.check(b"foox") == {b"filter": b"quirk"}
    assert stack.check(b"x.long") == {} and stack.check(b"x.edge") == {b"filter": b"edge", b"ident": True}
    assert stack.check(b"sub/x/a.bom") == {b"filter": b"bom"} and cached.check(b"sub/x/a.bom") == {}
    assert stack.check(b"nul/a.c") == {b"filter": b"afternul"} and cached.check(b"nul/a.c") == {}
    assert stack.check(b"sub/x/x.crlong")[b"filter"] == b"crlong" and b"filter" not in cached.check(b"sub/x/x.crlong")


def test_overly_large_files_are_ignored(tmp_path, git_env):
    """A ``.gitattributes`` of ``ATTR_MAX_FILE_SIZE`` bytes or more is
    ignored whole; one byte less is read (sparse files: git only stats)."""
    git_env = {**git_env, "GIT_ATTR_NOSYSTEM": "1"}
    git(tmp_path, "init", "-q", env=git_env)
    for d, size in ((b"big", ATTR_MAX_FILE_SIZE), (b"fits", ATTR_MAX_FILE_SIZE - 1)):
        (tmp_path / os.fsdecode(d)).mkdir()
        with open(tmp_path / os.fsdecode(d) / ".gitattributes", "wb") as f:
            f.write(b"* filter=" + d + b"\n")
            f.truncate(size)
    paths = [b"big/a", b"fits/a"]
    want = _git_check_attr(tmp_path, git_env, paths, b"-a")
    assert want == {b"big/a": {}, b"fits/a": {b"filter": b"fits"}}

    def read(d: bytes) -> bytes | None:
        p = tmp_path / os.fsdecode(d) / ".gitattributes"
        return AttrFile(p.read_bytes()) if d and p.exists() else None

    stack = AttributeStack(read, lambda d: d in (b"big", b"fits"))
    assert {p: stack.check(p) for p in paths} == want


def test_importing_attributes_loads_no_dulwich_attrs():
    """dulwich's attribute module costs start-up time on every checkout; we do not need it."""
    code = "import sys, git_checkout_helper.attributes; print('dulwich.attrs' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "False"
