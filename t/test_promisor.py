"""Partial clones (``promisor.py``): which remotes promise objects, filter
specs, the objects upload-pack would send, the promisor pack, and the
checkout's prefetch through the Python API (fail closed: nothing touched
when an object cannot be had).

Repositories are made by real git; the partial clones by ``git clone
--filter`` from a ``file://`` URL, which needs no server.
"""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest
from dulwich.config import ConfigFile, StackedConfig
from dulwich.repo import Repo as DRepo

from git_checkout_helper import fetch_pack, list_objects_filter, promisor
from git_checkout_helper.checkout import CheckoutError, checkout


def _config(text: str) -> StackedConfig:
    from io import BytesIO

    return StackedConfig([ConfigFile.from_file(BytesIO(text.encode()))])


# --- promisor remotes as git reads them -----------------------------------------


def test_promisor_remotes_in_config_order_with_filters_and_urls():
    cfg = _config(
        '[remote "b"]\n\turl = git://h/b\n\tpromisor = true\n'
        '[remote "a"]\n\turl = /srv/a\n\tpartialCloneFilter = blob:none\n'
        '[remote "c"]\n\turl = x\n\tpromisor = false\n'
        '[remote "d"]\n\tpromisor\n'
    )
    got = [(r.name, r.url, r.partial_clone_filter) for r in promisor.promisor_remotes(cfg)]
    assert got == [("b", "git://h/b", None), ("a", "/srv/a", "blob:none"), ("d", "d", None)]


def test_extensions_partialclone_is_moved_last_or_added():
    cfg = _config('[extensions]\n\tpartialClone = a\n[remote "a"]\n\tpromisor = 1\n[remote "b"]\n\tpromisor = yes\n')
    assert [r.name for r in promisor.promisor_remotes(cfg)] == ["b", "a"]
    cfg = _config('[extensions]\n\tpartialclone = origin\n[remote "origin"]\n\turl = u\n')
    assert [(r.name, r.url) for r in promisor.promisor_remotes(cfg)] == [("origin", "u")]
    assert not promisor.has_promisor_remote(_config('[remote "origin"]\n\turl = u\n'))


def test_later_config_files_come_later():
    first = ConfigFile()
    first.set((b"remote", b"late"), b"promisor", b"true")
    system = ConfigFile()
    system.set((b"remote", b"early"), b"promisor", b"true")
    # StackedConfig lists the most important (read last) first.
    names = [r.name for r in promisor.promisor_remotes(StackedConfig([first, system]))]
    assert names == ["early", "late"]


# --- filter specs ------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "expanded"), [
    ("blob:none", "blob:none"), ("blob:limit=1k", "blob:limit=1024"), ("blob:limit=2m", "blob:limit=2097152"),
    ("blob:limit=0", "blob:limit=0"), ("tree:0", "tree:0"), ("tree:3", "tree:3"),
])
def test_expand_filter(spec, expanded):
    assert promisor.expand_filter(spec) == expanded


@pytest.mark.parametrize(("spec", "message"), [
    ("foo", "invalid filter-spec 'foo'"), ("blob:limit=abc", "invalid filter-spec 'blob:limit=abc'"),
    ("tree:x", "expected 'tree:<depth>'"), ("tree:-1", "expected 'tree:<depth>'"),
])
def test_bad_filters_say_what_git_says(spec, message):
    with pytest.raises(ValueError, match=message):
        promisor.expand_filter(spec)


# --- repositories ---------------------------------------------------------------------


@pytest.fixture
def source(make_repo):
    """main: a/x, a/b/y, big (3000 bytes), link; other: a/x changed, new."""
    r = make_repo("src")
    (r.path / "a" / "b").mkdir(parents=True)
    (r.path / "a" / "x").write_text("x\n")
    (r.path / "a" / "b" / "y").write_text("y\n")
    (r.path / "big").write_bytes(b"z" * 3000)
    os.symlink("a/x", r.path / "link")
    r.git("add", ".")
    r.git("commit", "-qm", "one")
    r.git("checkout", "-qb", "other")
    (r.path / "a" / "x").write_text("x2\n")
    (r.path / "new").write_text("new\n")
    r.git("add", ".")
    r.git("commit", "-qm", "two")
    r.git("checkout", "-q", "main")
    r.git("config", "uploadpack.allowFilter", "true")
    return r


def _clone(source, git_env, tmp_path, name, *args):
    dst = tmp_path / name
    subprocess.run(["git", "clone", "-q", *args, f"file://{source.path}", str(dst)], env=git_env, check=True)
    return dst


def _ids(repo_path, *revs):
    out = subprocess.run(["git", "-C", str(repo_path), "rev-list", "--objects", *revs],
                         capture_output=True, check=True, text=True).stdout
    return [line.split()[0].encode() for line in out.splitlines()]


@pytest.mark.parametrize(("spec", "blobs"), [(None, 4 + 2), ("blob:none", 0), ("blob:limit=100", 5), ("tree:0", 0)])
def test_select_objects_as_upload_pack(source, spec, blobs):
    with DRepo(str(source.path)) as r:
        tips = [r.refs[b"refs/heads/main"], r.refs[b"refs/heads/other"]]
        got = list_objects_filter.select_objects(r.object_store, tips, set(), spec)
        kinds = [r.object_store[o].type_name for o in got]
    assert len(set(got)) == len(got)
    assert kinds.count(b"commit") == 2
    assert kinds.count(b"blob") == blobs
    trees = 0 if spec == "tree:0" else 4  # root and a/ of each commit, a/b/ shared... counted below
    if spec != "tree:0":
        assert kinds.count(b"tree") == len({o for o in _ids(source.path, "--all")
                                             if _type(source.path, o) == "tree"})
    else:
        assert kinds.count(b"tree") == trees


def _type(path, oid: bytes) -> str:
    return subprocess.run(["git", "-C", str(path), "cat-file", "-t", oid.decode()],
                          capture_output=True, check=True, text=True).stdout.strip()


def test_select_objects_sends_named_blobs_and_trees_without_blobs(source):
    with DRepo(str(source.path)) as r:
        store = r.object_store
        tree = store[r.refs[b"refs/heads/main"]].tree
        blob = store[tree][b"big"][1]
        got = list_objects_filter.select_objects(store, [blob, tree], set(), "blob:none")
        kinds = sorted(store[o].type_name for o in got)
    assert kinds == [b"blob", b"tree", b"tree", b"tree"]


def test_fetch_objects_writes_a_promisor_pack(source, git_env, tmp_path):
    dst = _clone(source, git_env, tmp_path, "bn", "--filter=blob:none", "--no-checkout")
    with DRepo(str(source.path)) as s:
        tree = s.object_store[s.refs[b"refs/heads/other"]].tree
        wanted = [e.sha for e in s.object_store.iter_tree_contents(tree)]
    with DRepo(str(dst)) as d:
        missing = promisor.missing_objects(d.object_store, [bytes.fromhex(w.decode()) for w in wanted])
        assert missing
        pack, _ = fetch_pack.fetch_objects(d.object_store, f"file://{source.path}", [m.hex().encode() for m in missing])
        assert not promisor.missing_objects(d.object_store, missing)
    path = pack._data_path[:-len(".pack")] + ".promisor"
    assert os.path.getsize(path) == 0
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    # git agrees: nothing of other's tree is missing now, and the pack is a promisor pack
    ids = "".join(w.decode() + "\n" for w in wanted)
    out = subprocess.run(["git", "-C", str(dst), "cat-file", "--batch-check"], input=ids,
                         capture_output=True, check=True, text=True, env=git_env).stdout
    assert "missing" not in out and len(out.splitlines()) == len(wanted)
    subprocess.run(["git", "-C", str(dst), "fsck", "--connectivity-only"], check=True, env=git_env,
                   capture_output=True)


def test_a_failed_fetch_leaves_no_pack(source, git_env, tmp_path):
    dst = _clone(source, git_env, tmp_path, "bn", "--filter=blob:none", "--no-checkout")
    packs = sorted(os.listdir(dst / ".git" / "objects" / "pack"))
    with DRepo(str(dst)) as d:
        with pytest.raises(fetch_pack._Failed, match="does not appear to be a git repository"):
            fetch_pack.fetch_objects(d.object_store, f"file://{tmp_path}/nowhere", [b"1" * 40])
        with pytest.raises(fetch_pack._Failed, match="not our ref 1111111111"):
            fetch_pack.fetch_objects(d.object_store, f"file://{source.path}", [b"1" * 40])
    assert sorted(os.listdir(dst / ".git" / "objects" / "pack")) == packs


# --- the checkout through the API -------------------------------------------------------


def _state(path):
    h = hashlib.sha1()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(root, d))]):
            full = os.path.join(root, name)
            h.update(full.encode())
            if os.path.islink(full):
                h.update(os.readlink(full).encode())
            elif os.path.isfile(full):
                with open(full, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def test_api_switch_fetches_what_is_missing(source, git_env, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", git_env["HOME"])
    ours = _clone(source, git_env, tmp_path, "ours", "--filter=blob:none")
    theirs = _clone(source, git_env, tmp_path, "theirs", "--filter=blob:none")
    report = checkout(str(ours), "origin/other", workers=2, threshold=0)
    subprocess.run(["git", "-C", str(theirs), "checkout", "-q", "origin/other"], check=True, env=git_env)
    assert report.written == 2
    for name in ("new", "a/x", "a/b/y", "big"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes()
    assert os.readlink(ours / "link") == os.readlink(theirs / "link")
    ls = [subprocess.run(["git", "-C", str(p), "ls-files", "-s"], capture_output=True, check=True,
                         env=git_env).stdout for p in (ours, theirs)]
    assert ls[0] == ls[1]


def test_api_without_promisor_remote_touches_nothing(source, git_env, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", git_env["HOME"])
    ours = _clone(source, git_env, tmp_path, "ours", "--filter=blob:none")
    for key in ("remote.origin.promisor", "remote.origin.partialclonefilter"):
        subprocess.run(["git", "-C", str(ours), "config", "--unset", key], check=True, env=git_env)
    before = (_state(ours), (ours / ".git" / "index").read_bytes(), (ours / ".git" / "HEAD").read_bytes())
    with pytest.raises(CheckoutError) as e:
        checkout(str(ours), "origin/other")
    assert e.value.code == 128
    assert str(e.value).startswith("fatal: unable to read sha1 file of ")
    assert "\n" not in str(e.value)
    after = (_state(ours), (ours / ".git" / "index").read_bytes(), (ours / ".git" / "HEAD").read_bytes())
    assert before == after
    assert not (ours / ".git" / "index.lock").exists()


def test_a_corrupt_pack_is_refused_and_removed(source, git_env, tmp_path):
    dst = _clone(source, git_env, tmp_path, "bn", "--filter=blob:none", "--no-checkout")
    packs = sorted(os.listdir(dst / ".git" / "objects" / "pack"))
    with DRepo(str(dst)) as d:
        f, commit, abort = fetch_pack._new_pack(d.object_store)
        with DRepo(str(source.path)) as s:
            from dulwich.pack import write_pack_from_container

            blob = s.object_store[s.object_store[s.refs[b"refs/heads/main"]].tree][b"big"][1]
            buf = []
            write_pack_from_container(buf.append, s.object_store, [(blob, None)], s.object_store.object_format)
        data = bytearray(b"".join(bytes(b) for b in buf))
        data[-1] ^= 1  # the trailer no longer matches
        f.write(bytes(data))
        with pytest.raises(fetch_pack._Failed, match="bad checksum"):
            commit()
        abort()
    assert sorted(os.listdir(dst / ".git" / "objects" / "pack")) == packs
