"""objects.py parses what git's parse_commit_buffer and parse_tag_buffer
read, with git's verdicts: every field checked against what git itself
answers for the same objects (``rev-parse``, ``cat-file``), malformed
commits refused with git's own messages, and no dulwich object module
loaded for it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from git_checkout_helper.objects import Commit, CorruptObject, Tag, Tree
from git_checkout_helper.repository import Repository


@pytest.fixture(params=["sha1", "sha256"])
def history(make_repo, request):
    repo = make_repo(object_format=request.param)
    (repo.path / "a.txt").write_bytes(b"one\n")
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "first\n\nbody line\n")
    repo.git("tag", "-a", "-m", "annotated", "v1")
    repo.git("tag", "-a", "-m", "tag of a tag", "v1b", "v1")
    repo.git("tag", "-a", "-m", "tree tag", "vt", "HEAD^{tree}")
    repo.git("checkout", "-q", "-b", "side")
    (repo.path / "b.txt").write_bytes(b"two\n")
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "side")
    repo.git("checkout", "-q", "-")
    (repo.path / "a.txt").write_bytes(b"changed\n")
    repo.git("commit", "-q", "-am", "second")
    repo.git("merge", "-q", "--no-edit", "side")
    return repo


def _rev(repo, rev: str) -> bytes:
    return repo.git("rev-parse", rev).strip()


def test_commits_read_as_git_reads_them(history):
    repo = Repository.open(str(history.path))
    for rev in ("HEAD", "HEAD^", "HEAD^2", "HEAD~2"):
        hexsha = _rev(history, rev)
        c = repo.object(hexsha)
        assert isinstance(c, Commit) and c.id == hexsha
        assert c.tree == _rev(history, rev + "^{tree}")
        assert c.parents == history.git("rev-parse", rev + "^@").split()
        raw = history.git("cat-file", "commit", rev)
        assert c.message == raw.split(b"\n\n", 1)[1]
        assert c.as_raw_string() == raw
    assert repo.object(_rev(history, "HEAD~2")).message == b"first\n\nbody line\n"
    repo.close()


def test_tags_name_their_object(history):
    repo = Repository.open(str(history.path))
    for tag, kind in (("v1", b"commit"), ("v1b", b"tag"), ("vt", b"tree")):
        t = repo.object(_rev(history, tag))
        assert isinstance(t, Tag)
        assert t.object == (kind, history.git("cat-file", "tag", tag).split(b"\n", 1)[0].split()[1])
        assert kind == history.git("cat-file", "-t", t.object[1].decode()).strip()
    tree = repo.object(_rev(history, "HEAD^{tree}"))
    assert isinstance(tree, Tree)
    mode, sha = tree[b"a.txt"]
    assert (mode, sha) == (0o100644, _rev(history, "HEAD:a.txt"))
    with pytest.raises(KeyError):
        tree[b"nope"]
    repo.close()


def _literal(repo, kind: str, body: bytes) -> bytes:
    return repo.git("hash-object", "-t", kind, "--literally", "-w", "--stdin", input=body).strip()


def test_malformed_commits_refused_with_gits_message(make_repo):
    repo = make_repo()
    tree = repo.git("write-tree").strip()
    cases = {
        b"tre " + tree + b"\nauthor a\n\nm": "bogus commit object",
        b"tree " + tree + b"x\nauthor a\n\nm": "bogus commit object",
        b"tree " + b"z" * 40 + b"\nauthor a\n\nm": "bad tree pointer in commit",
        b"tree " + tree + b"\nparent " + b"z" * 40 + b"\nauthor a\n\nm": "bad parents in commit",
        b"tree " + tree + b"\nparent " + tree[:-1] + b"\nauthor a\n\nm": "bad parents in commit",
    }
    r = Repository.open(str(repo.path))
    for body, message in cases.items():
        sha = _literal(repo, "commit", body)
        p = subprocess.run(["git", "rev-parse", sha.decode() + "^{tree}"], cwd=repo.path, env=repo.env,
                           capture_output=True, text=True)
        assert p.returncode != 0 and f"error: {message} {sha.decode()}" in p.stderr
        with pytest.raises(CorruptObject, match=f"^{message} {sha.decode()}$"):
            r.object(sha)
    good = _literal(repo, "commit", b"tree " + tree + b"\nauthor a\ncommitter a\n")
    c = r.object(good)
    assert (c.tree, c.parents, c.message) == (tree, [], b"")
    r.close()


def test_a_corrupt_commit_is_one_fatal_line_and_nothing_touched(make_repo):
    """A commit whose bytes hash to another id: git's "hash mismatch", exit
    128, the work tree and index as they were."""
    import zlib

    repo = make_repo()
    (repo.path / "a").write_bytes(b"1\n")
    repo.git("add", "a")
    repo.git("commit", "-q", "-m", "one")
    repo.git("branch", "other")
    (repo.path / "a").write_bytes(b"2\n")
    repo.git("commit", "-q", "-am", "two")
    branch = repo.git("symbolic-ref", "--short", "HEAD").strip().decode()
    head = _rev(repo, "HEAD").decode()
    repo.git("checkout", "-q", "other")
    path = repo.path / ".git" / "objects" / head[:2] / head[2:]
    raw = repo.git("cat-file", "commit", "other")
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"commit %d\0" % len(raw) + raw))
    index = (repo.path / ".git" / "index").read_bytes()
    p = subprocess.run([sys.executable, "-m", "git_checkout_helper", "parallel-checkout", branch],
                       cwd=repo.path, env=repo.env, capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (128, f"fatal: hash mismatch {head}\n")
    assert (repo.path / "a").read_bytes() == b"1\n"
    assert (repo.path / ".git" / "index").read_bytes() == index
