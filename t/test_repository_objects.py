"""repository.py reads objects and refs without dulwich's ``Repo`` or its
object store: ``Repository.object`` gives what ``store[hexsha]`` gives (the
same classes, the id checked against the bytes, KeyError for anything that
names no object), and the coordinator's common commands (a clone's
checkout, a branch switch, a detached switch to an annotated tag) never
import ``dulwich.repo`` or ``dulwich.object_store``, whose import costs
about 40 ms of every such command, nor dulwich's config, attributes, refs
or objects modules (20 ms more), nor ``subprocess`` (4 ms; needed only
when a hook, a filter or an exec'd helper runs), nor what only a partial
clone's fetch or a split index needs."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zlib

import pytest
from dulwich.objects import ChecksumMismatch
from dulwich.repo import Repo

from git_checkout_helper.objects import Commit, ObjectHashMismatch, Tag, Tree
from git_checkout_helper.repository import Repository
from git_checkout_helper.revision import get_oid
from git_checkout_helper.tree import value_mode, value_oid

HEAVY = ("dulwich.repo", "dulwich.object_store", "dulwich.pack", "subprocess",
         "git_checkout_helper.fetch_pack", "git_checkout_helper.list_objects_filter", "git_checkout_helper.ewah",
         # dulwich's config, attributes, refs and objects (and the logging,
         # dataclasses and pathlib they bring): about 20 ms of start-up.
         "dulwich.config", "dulwich.attrs", "dulwich.refs", "dulwich.objects", "dulwich.file", "logging",
         "dataclasses", "pathlib",
         # msgspec (record.py): about 13 ms, with the uuid, platform, datetime
         # and decimal its core imports; the -v report and trace2 import it.
         "msgspec", "uuid", "platform", "datetime", "decimal",
         # the dulwich package itself, with the typing it imports (about 6 ms):
         # its C helpers are loaded without it (dulwich_ext.py), and without
         # importlib's package and util (with contextlib and warnings: 2 ms).
         "dulwich", "typing", "importlib.util", "importlib.machinery", "contextlib",
         # threading (the locks are _thread's; only a helper with I/O threads
         # or a trace imports it) and shlex (--helper-cmd): 1.5 ms.
         "threading", "shlex",
         # hashlib, which loads OpenSSL (4.5 ms; hash_algo.new_hash hashes
         # what is small with the interpreter's own code), and copy (1.6 ms).
         "hashlib", "_hashlib", "copy")
WRITERS = ("dulwich.config", "dulwich.refs", "dulwich.objects", "dulwich.file")


@pytest.fixture
def history(make_repo):
    repo = make_repo()
    (repo.path / "a.txt").write_bytes(b"one\n")
    (repo.path / "d").mkdir()
    (repo.path / "d" / "b.txt").write_bytes(b"two\n")
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "first")
    repo.git("tag", "-a", "-m", "annotated", "v1")
    repo.git("branch", "other")
    (repo.path / "a.txt").write_bytes(b"changed\n")
    repo.git("commit", "-q", "-am", "second")
    return repo


def test_object_matches_the_object_store(history):
    repo = Repository.open(str(history.path))
    with Repo(str(history.path)) as d:
        for rev in ("HEAD", "HEAD^{tree}", "v1", "HEAD:d", "other"):
            hexsha = history.git("rev-parse", rev).strip()
            ours, theirs = repo.object(hexsha), d.object_store[hexsha]
            assert type(ours).__name__ == type(theirs).__name__ and ours.id == theirs.id
            assert ours.as_raw_string() == theirs.as_raw_string()
    assert isinstance(repo.object(history.git("rev-parse", "v1").strip()), Tag)
    assert isinstance(repo.object(history.git("rev-parse", "HEAD").strip()), Commit)
    assert isinstance(repo.object(history.git("rev-parse", "HEAD^{tree}").strip()), Tree)
    repo.close()


def test_flattened_tree_holds_one_object_a_file(history):
    """A flattened tree holds one object for each file (its id, with a mode
    byte unless 100644), not a (mode, id) pair as well (6 MiB at 100,000
    files); its files are git's ``ls-tree -r``, its ``.gitattributes``
    files kept apart too."""
    (history.path / "run.sh").write_bytes(b"#!/bin/sh\n")
    (history.path / "run.sh").chmod(0o755)
    for i in range(20):
        (history.path / "d" / f"{i}.txt").write_bytes(b"%d\n" % i)
    (history.path / "d" / ".gitattributes").write_bytes(b"*.txt text\n")
    history.git("add", ".")
    history.git("commit", "-q", "-m", "more")
    repo = Repository.open(str(history.path))
    files = repo.tree_of(history.git("rev-parse", "HEAD").strip()).files
    listed = {}
    for line in history.git("ls-tree", "-r", "HEAD").decode().splitlines():
        meta, path = line.split("\t")
        mode, _, oid = meta.split()
        listed[path.encode()] = (int(mode, 8), bytes.fromhex(oid))
    assert {p: (value_mode(v), value_oid(v)) for p, v in files.items()} == listed
    # the id alone for a 100644 file (value_oid gives that very object), the id and a mode byte for the others
    assert {len(v) for v in files.values()} == {20, 21}
    assert all(v is value_oid(v) for p, v in files.items() if listed[p][0] == 0o100644)
    # and its .gitattributes files apart, for the attributes read after the files are let go
    assert repo.tree_of(history.git("rev-parse", "HEAD").strip()).attributes == {
        b"d/.gitattributes": listed[b"d/.gitattributes"][1]}
    repo.close()


@pytest.mark.parametrize("name", [b"0" * 40, b"z" * 40, b"abc", b"0" * 64, b""])
def test_object_key_error_for_no_object(history, name):
    repo = Repository.open(str(history.path))
    with pytest.raises(KeyError):
        repo.object(name)
    repo.close()


def test_object_checks_its_id(history):
    """A loose object whose bytes are another object's: refused, as the store refuses it."""
    head = history.git("rev-parse", "HEAD").strip().decode()
    other = history.git("rev-parse", "other").strip().decode()
    path = history.path / ".git" / "objects" / head[:2] / head[2:]
    raw = history.git("cat-file", "commit", other)
    os.chmod(path, 0o644)
    path.write_bytes(zlib.compress(b"commit %d\0" % len(raw) + raw))
    repo = Repository.open(str(history.path))
    with pytest.raises(ObjectHashMismatch, match=f"hash mismatch {head}"):
        repo.object(head.encode())
    with Repo(str(history.path)) as d, pytest.raises(ChecksumMismatch):
        d.object_store[head.encode()]
    repo.close()


def test_revisions_resolve_without_the_object_store(history):
    """Refs, peeled tags, parents and tree paths: the answers git gives, with
    dulwich's object store never opened."""
    repo = Repository.open(str(history.path))
    for rev in ("HEAD", "HEAD~1", "HEAD^1", "v1^{commit}", "v1^{}", "v1^{tree}", "HEAD:d", "other",
                "refs/tags/v1", "main"):
        want = history.git("rev-parse", "--verify", "-q", rev).strip()
        assert get_oid(repo, rev) == want, rev
    assert repo.odb._store is None and repo._dulwich is None
    repo.close()


def test_common_commands_import_no_repo_or_object_store(history, git_env, tmp_path):
    history.git("repack", "-adq")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(history.path), str(clone)], env=git_env,
                   check=True)

    def run(*argv):
        code = f"""
import sys
from git_checkout_helper import cli
code = cli.checkout_main({list(argv)!r})
print(code, sorted(m for m in sys.modules if m in {HEAVY!r}))
"""
        p = subprocess.run([sys.executable, "-c", code], cwd=clone, env=git_env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    assert run("-q", "-j", "2", "--threshold", "0", "-f", "HEAD") == "0 []"
    assert (clone / "a.txt").read_bytes() == b"changed\n"
    # A branch made from a remote-tracking one: its ref and its upstream
    # config are written through dulwich, which may be imported then only.
    code, imported = run("-q", "-j", "2", "--threshold", "0", "other").split(" ", 1)
    assert code == "0" and set(ast.literal_eval(imported)) <= {*WRITERS, "logging", "dataclasses", "pathlib",
                                                                     "dulwich", "typing", "contextlib",
                                                                     "importlib.util", "importlib.machinery",
                                                                     "threading", "hashlib", "_hashlib", "copy"}
    assert (clone / "a.txt").read_bytes() == b"one\n"
    assert run("-q", "-j", "2", "--threshold", "0", "v1") == "0 []"
    assert run("-q", "-j", "2", "--threshold", "0", "main") == "0 []"
    # -j auto reads the filesystem's statfs(2) type through ctypes, without
    # ctypes.util's library search (which runs ldconfig in a subprocess).
    assert run("-q", "-j", "auto", "--threshold", "0", "-f", "HEAD") == "0 []"
    assert (clone / "a.txt").read_bytes() == b"changed\n"
    assert subprocess.run(["git", "status", "--porcelain"], cwd=clone, env=git_env, capture_output=True,
                          check=True).stdout == b""
