"""samplerepo.make_sample_repo: deterministic, shaped as documented.

The shape is checked with git itself (ls-tree, diff, verify-pack): the
repository is test infrastructure made by git, read by everyone.
"""

import posixpath
import statistics

import pytest
from conftest import run_git

from bench.samplerepo import HEAD_BRANCH, OLD_TAG, RECENT_TAG, make_sample_repo

FILES = 500


def tree_of(path, rev=HEAD_BRANCH):
    return run_git(path, "rev-parse", f"{rev}^{{tree}}", text=True).stdout.strip()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "repo.git"
    info = make_sample_repo(path, files=FILES, seed=7)
    return path, info


def ls_tree(path):
    rows = []
    for line in run_git(path, "ls-tree", "-r", "-l", HEAD_BRANCH, text=True).stdout.splitlines():
        meta, name = line.split("\t", 1)
        mode, _typ, oid, size = meta.split()
        rows.append((mode, oid, int(size) if size != "-" else 0, name))
    return rows


def test_shape_of_head(sample):
    path, info = sample
    rows = ls_tree(path)
    regular = [r for r in rows if r[0] in ("100644", "100755")]
    links = [r for r in rows if r[0] == "120000"]
    assert len(regular) == FILES == info["files"]
    assert len(links) == info["symlinks"] >= 3
    execs = sum(1 for r in regular if r[0] == "100755")
    assert execs == info["executables"]
    assert 0.18 < execs / FILES < 0.32
    dirs = {name.rpartition("/")[0] for *_, name in rows}
    assert len(dirs) > 10
    sizes = [r[2] for r in regular]
    assert 2000 < statistics.median(sizes) < 8000  # log-normal around 4 KB
    assert max(sizes) > 1024 * 1024  # a multi-MB file
    names = {r[3] for r in regular}
    for _mode, oid, _size, name in links:  # relative symlinks to files of the tree
        target = run_git(path, "cat-file", "blob", oid, text=True).stdout
        assert not target.startswith("/")
        assert posixpath.normpath(posixpath.join(posixpath.dirname(name), target)) in names


def test_history_is_stored_as_deltas(sample):
    path, _ = sample
    packs = list((path / "objects" / "pack").glob("pack-*.idx"))
    assert len(packs) == 1  # repacked into one pack
    out = run_git(path, "verify-pack", "-v", str(packs[0]), text=True).stdout
    deltas = [line for line in out.splitlines() if len(line.split()) == 7 and line.split()[1] == "blob"]
    assert len(deltas) > FILES // 4
    head_blobs = {r[1] for r in ls_tree(path)}
    assert head_blobs & {line.split()[0] for line in deltas}  # HEAD's own blobs too


def name_status(path, rev):
    counts = {"A": 0, "M": 0, "D": 0}
    out = run_git(path, "diff", "--name-status", "--no-renames", rev, HEAD_BRANCH, text=True).stdout
    for line in out.splitlines():
        counts[line[0]] = counts.get(line[0], 0) + 1
    return counts


def test_tags_differ_from_head_by_the_intended_shares(sample):
    path, info = sample
    assert info["tags"] == {"old": OLD_TAG, "recent": RECENT_TAG}
    assert info["commits"]["head"] == run_git(path, "rev-parse", HEAD_BRANCH, text=True).stdout.strip()
    far = name_status(path, OLD_TAG)
    near = name_status(path, RECENT_TAG)
    n = FILES + info["symlinks"]
    assert 0.55 < (far["A"] + far["M"]) / n < 0.85  # "most files"
    assert 0.22 < (near["A"] + near["M"]) / n < 0.45  # "about a third"
    assert far["D"] > near["D"] > 0
    assert far["A"] > near["A"] > 0
    # the old tag is older than the recent one, and both are ancestors of HEAD
    run_git(path, "merge-base", "--is-ancestor", OLD_TAG, RECENT_TAG)
    run_git(path, "merge-base", "--is-ancestor", RECENT_TAG, HEAD_BRANCH)


def test_same_seed_same_repository(tmp_path):
    a = make_sample_repo(tmp_path / "a", files=200, seed=3)
    b = make_sample_repo(tmp_path / "b", files=200, seed=3)
    assert a["commits"] == b["commits"]
    assert tree_of(tmp_path / "a") == tree_of(tmp_path / "b")
    # Without history: the same HEAD tree in one commit; another seed: another tree.
    c = make_sample_repo(tmp_path / "c", files=200, seed=3, with_history=False)
    assert c["tags"] == {} and c["old"] is None
    assert tree_of(tmp_path / "c") == tree_of(tmp_path / "a")
    make_sample_repo(tmp_path / "d", files=200, seed=4, with_history=False)
    assert tree_of(tmp_path / "d") != tree_of(tmp_path / "a")


def test_non_bare_and_refuses_a_non_empty_directory(tmp_path):
    info = make_sample_repo(tmp_path / "w", files=40, seed=1, with_history=False, bare=False)
    assert (tmp_path / "w" / ".git").is_dir()
    assert info["files"] == 40
    run_git(tmp_path / "w", "checkout", "-q", "-f", HEAD_BRANCH)
    assert run_git(tmp_path / "w", "status", "--porcelain", text=True).stdout == ""
    with pytest.raises(FileExistsError):
        make_sample_repo(tmp_path / "w", files=40)
