"""packed_refs: dulwich's packed-refs result without its per-byte name checks.

Whatever the file, the fast reader either gives exactly what dulwich's own
reader gives or leaves the file to it (None): on real files written by git
(peeled tags, SHA-256), on files made of random names and lines, and on every
rule of ``check_ref_format``. In a repository, lookups see a replaced
``packed-refs`` at once, as dulwich's cache does.
"""

from __future__ import annotations

import io
import os

import pytest
from conftest import git
from dulwich.refs import PackedRefsException, read_packed_refs_with_peeled
from dulwich.refs import read_packed_refs as dulwich_read_packed_refs
from hypothesis import given, settings
from hypothesis import strategies as st

from git_checkout_helper.packed_refs import find_packed_ref, read_packed_refs
from git_checkout_helper.repository import Repository

A = b"a" * 40
B = b"b" * 40


def dulwich_parse(data: bytes):
    """dulwich's DiskRefsContainer.get_packed_refs on these bytes: (refs, peeled)."""
    f = io.BytesIO(data)
    first = next(iter(f), b"").rstrip()
    refs, peeled = {}, {}
    if first.startswith(b"# pack-refs") and b" peeled" in first:
        for sha, name, p in read_packed_refs_with_peeled(f):
            refs[name] = sha
            if p:
                peeled[name] = p
    else:
        f.seek(0)
        for sha, name in dulwich_read_packed_refs(f):
            refs[name] = sha
    return refs, peeled


def agrees(data: bytes) -> bool:
    """The fast reader gives dulwich's answer, or leaves the file to it."""
    ours = read_packed_refs(data)
    try:
        theirs = dulwich_parse(data)
    except (PackedRefsException, ValueError):
        return ours is None
    return ours is None or ours[:2] == theirs


HEADER = b"# pack-refs with: peeled fully-peeled sorted \n"


def test_real_files_are_read_fast_and_alike(make_repo):
    repo = make_repo()
    repo.git("commit", "-q", "--allow-empty", "-m", "c")
    for i in range(30):
        repo.git("branch", f"topic/b{i}")
        repo.git("tag", "-a", "-m", "t", f"v1.{i}")  # annotated: a peeled line each
        repo.git("tag", f"light{i}")
    repo.git("pack-refs", "--all")
    data = (repo.git_dir / "packed-refs").read_bytes()
    ours = read_packed_refs(data)
    assert ours is not None  # git's own file takes the fast path
    assert ours[:2] == dulwich_parse(data)
    assert len(ours[0]) == 91 and len(ours[1]) == 30
    assert ours[2] == b""  # fully-peeled: every ref's peeling is known


@pytest.mark.parametrize("name", [
    b"refs/heads/a..b", b"refs/heads/a@{1}", b"refs/heads/.hidden", b"refs/heads//x", b"refs/heads/x.lock",
    b"refs/heads/x.lock/y", b"refs/heads/x/", b"refs/heads/x.", b"refs/heads/a b", b"refs/heads/a~1",
    b"refs/heads/a^", b"refs/heads/a:b", b"refs/heads/a?", b"refs/heads/a*", b"refs/heads/a[", b"refs/heads/a\\b",
    b"refs/heads/a\x01", b"refs/heads/a\x7f", b"refs/heads/caf\xc3\xa9", b"HEAD", b"heads/x", b"refs/heads/ok",
])
def test_every_name_rule(name):
    for data in (HEADER + A + b" " + name + b"\n", A + b" " + name + b"\n",
                 HEADER + A + b" refs/tags/t\n^" + B + b"\n" + A + b" " + name + b"\n"):
        assert agrees(data), data


@pytest.mark.parametrize("data", [
    b"", b"\n", HEADER, HEADER + b"^" + B + b"\n", A + b" refs/tags/t\n^" + B + b"\n",  # peeled, no header
    HEADER + A + b" refs/heads/x", HEADER + A + b"  refs/heads/x\n", HEADER + A[:-1] + b" refs/heads/x\n",
    HEADER + A.upper() + b" refs/heads/x\n", HEADER + A + b" refs/heads/x\r\n", HEADER + b"# another\n",
    HEADER + A + b" refs/heads/x\n" + A + b" refs/heads/x\n", HEADER + A + b" refs/heads/x\n^" + B + b"\n^" + B + b"\n",
    HEADER + A + b" refs/heads/x\n# c\n^" + B + b"\n", b"# pack-refs with: sorted\n" + A + b" refs/heads/x\n",
    HEADER + b"a" * 64 + b" refs/heads/x\n",
])
def test_odd_files(data):
    assert agrees(data)


_names = st.lists(st.sampled_from([b"refs", b"heads", b"tags", b"a", b".", b"..", b"x.lock", b"", b"@{", b"@",
                                   b"~", b"^", b" ", b"\\", b"\xff", b"v1.0", b"-"]), min_size=1, max_size=5)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([A, B, b"c" * 39, b"#"]), _names, st.booleans()), max_size=8),
       st.booleans())
def test_random_files(lines, header):
    out = [HEADER] if header else []
    for sha, parts, peeled in lines:
        if sha == b"#":
            out.append(b"# " + b"/".join(parts) + b"\n")
            continue
        out.append(sha + b" " + b"/".join(parts) + b"\n")
        if peeled:
            out.append(b"^" + B + b"\n")
    assert agrees(b"".join(out))


def test_a_replaced_file_is_read_again(make_repo):
    repo = make_repo()
    repo.git("commit", "-q", "--allow-empty", "-m", "c")
    first = repo.git("rev-parse", "HEAD").strip()
    repo.git("commit", "-q", "--allow-empty", "-m", "d")
    second = repo.git("rev-parse", "HEAD").strip()
    packed = repo.git_dir / "packed-refs"
    packed.write_bytes(HEADER + first + b" refs/tags/moving\n")
    r = Repository.open(str(repo.path), environ=repo.env)
    try:
        refs = r.dulwich.refs
        assert refs[b"refs/tags/moving"] == first
        tmp = repo.git_dir / "packed-refs.new"
        tmp.write_bytes(HEADER + second + b" refs/tags/moving\n" + second + b" refs/tags/added\n")
        os.replace(tmp, packed)  # a new file, as git's pack-refs writes one
        assert refs[b"refs/tags/moving"] == second
        assert refs[b"refs/tags/added"] == second
    finally:
        r.close()
    assert git(repo.path, "rev-parse", "refs/tags/moving", env=repo.env).strip() == second


def _sorted_file(names: list[bytes], peeled: set[bytes], header: bytes = HEADER) -> bytes:
    return header + b"".join(A + b" " + n + b"\n" + (b"^" + B + b"\n" if n in peeled else b"")
                             for n in sorted(set(names)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6).map(lambda b: b"refs/" + b.replace(b"\n", b"x")), max_size=40),
       st.data())
def test_a_sorted_file_bisected_finds_what_parsing_finds(names, data):
    """find_packed_ref, bisecting records (a ref line and its peeled line),
    answers every name as the whole file parsed does: each present name, and
    absent ones before, between and after them."""
    peeled = set(data.draw(st.lists(st.sampled_from(names), max_size=10))) if names else set()
    text = _sorted_file(names, peeled)
    absent = [b"refs/", b"refs/\x00", b"refs/\xff\xff\xff\xff\xff\xff\xff", b"A"] + [n + b"\x00" for n in names]
    for name in set(names) | set(absent):
        assert find_packed_ref(text, name) == (A if name in names else None), name


def test_git_written_file_is_bisected_without_a_parse(make_repo):
    """A lookup in git's own packed-refs (a thousand refs or one) bisects it:
    the whole file is not parsed, and every ref, annotated tag or not, reads
    as git reads it."""
    repo = make_repo()
    repo.git("commit", "-q", "--allow-empty", "-m", "c")
    for i in range(40):
        repo.git("tag", "-a", "-m", "t", f"v1.{i}") if i % 3 else repo.git("branch", f"topic/b{i}")
    repo.git("pack-refs", "--all")
    want = dict(line.split(" ")[::-1] for line in repo.git("show-ref").decode().splitlines())
    r = Repository.open(str(repo.path), environ=repo.env)
    try:
        for name, sha in want.items():
            if (repo.git_dir / name).exists():
                continue  # (still loose)
            assert r.refs.read_ref(name.encode()) == sha.encode()
        assert r.refs.read_ref(b"refs/tags/nothing") is None
        assert r.refs._packed is None  # never parsed whole
    finally:
        r.close()


@pytest.mark.parametrize("text", [
    b"# pack-refs with: peeled fully-peeled \n" + A + b" refs/heads/x\n",  # not said to be sorted
    A + b" refs/heads/x\n",  # no header
    HEADER + A + b" refs/heads/x",  # unterminated
    HEADER + A[:-1] + b" refs/heads/x\n",  # not an id
    HEADER + A.upper() + b" refs/heads/x\n",
])
def test_files_that_cannot_be_bisected_are_parsed(text):
    with pytest.raises(ValueError):
        find_packed_ref(text, b"refs/heads/x")
