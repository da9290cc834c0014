"""refs.py reads refs as git resolves them (loose in the right directory,
packed, symbolic, linked worktrees) and gives what dulwich's container
gives for every name, without importing dulwich's refs module for the
names and files it reads itself."""

from __future__ import annotations

import subprocess
import sys

import pytest
from dulwich.refs import DiskRefsContainer

from git_checkout_helper.refs import Refs


def _both(repo, gitdir=None):
    commondir = str(repo.git_dir)
    gitdir = str(gitdir or repo.git_dir)
    return Refs(commondir, gitdir), DiskRefsContainer(commondir, gitdir)


NAMES = [b"HEAD", b"refs/heads/main", b"refs/heads/packed", b"refs/heads/both", b"refs/tags/v1",
         b"refs/heads/sym", b"refs/heads/dangling", b"refs/heads/none", b"refs/stash", b"refs/heads",
         b"refs/heads/a..b", b"refs/heads/.x", b"refs/heads/x.lock", b"refs/heads//main", b"main",
         b"refs/heads/x.", b"refs/heads/a@{1}", b"refs/heads/sp ace", b"../config", b"refs/../config",
         b"refs/bisect/bad", b"refs/worktree/w", b"refs/main", b"refs/remotes/main/HEAD"]


def _setup(make_repo):
    repo = make_repo()
    repo.git("commit", "-q", "--allow-empty", "-m", "one")
    repo.git("branch", "-M", "main")
    repo.git("tag", "-a", "-m", "t", "v1")
    repo.git("branch", "packed")
    repo.git("branch", "both")
    repo.git("pack-refs", "--all")
    repo.git("commit", "-q", "--allow-empty", "-m", "two")
    repo.git("branch", "-f", "both")
    repo.git("symbolic-ref", "refs/heads/sym", "refs/heads/main")
    repo.git("symbolic-ref", "refs/heads/dangling", "refs/heads/none")
    repo.git("update-ref", "refs/bisect/bad", "HEAD~1")
    return repo


def _git_resolves(repo, name: bytes, cwd=None) -> bytes | None:
    p = subprocess.run(["git", "rev-parse", "-q", "--verify", name.decode() + "^{}"],
                       cwd=cwd or repo.path, env=repo.env, capture_output=True)
    return p.stdout.strip() or None


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (dulwich's, for refs/heads//main)
def test_reads_as_dulwich_and_git_do(make_repo):
    repo = _setup(make_repo)
    ours, theirs = _both(repo)
    for name in NAMES:
        assert ours.read_ref(name) == theirs.read_ref(name), name
        assert ours.follow(name) == theirs.follow(name), name
        assert (name in ours) == (name in theirs), name
    for name in (b"HEAD", b"refs/heads/main", b"refs/heads/packed", b"refs/heads/both", b"refs/heads/sym"):
        assert ours[name] == _git_resolves(repo, name), name
    assert ours.follow(b"HEAD") == ([b"HEAD", b"refs/heads/main"], _git_resolves(repo, b"HEAD"))
    assert ours.keys(base=b"refs/heads/") == theirs.keys(base=b"refs/heads/")


def test_packed_refs_read_again_when_rewritten(make_repo):
    repo = _setup(make_repo)
    ours, _ = _both(repo)
    assert ours[b"refs/heads/packed"] == _git_resolves(repo, b"refs/heads/packed")
    repo.git("update-ref", "refs/heads/packed", "HEAD")
    repo.git("pack-refs", "--all")
    assert ours[b"refs/heads/packed"] == _git_resolves(repo, b"HEAD")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_linked_worktree_keeps_its_own_head_and_bisect_refs(make_repo, tmp_path):
    repo = _setup(make_repo)
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "--detach", str(wt), "HEAD~1")
    subprocess.run(["git", "update-ref", "refs/bisect/bad", "HEAD"], cwd=wt, env=repo.env, check=True)
    gitdir = repo.git_dir / "worktrees" / "wt"
    ours, theirs = _both(repo, gitdir)
    for name in NAMES:
        assert ours.follow(name) == theirs.follow(name), name
    assert ours[b"HEAD"] == _git_resolves(repo, b"HEAD", wt)
    assert ours[b"refs/bisect/bad"] == _git_resolves(repo, b"refs/bisect/bad", wt)
    assert ours[b"refs/heads/main"] == _git_resolves(repo, b"refs/heads/main", wt)


def test_reading_common_refs_imports_no_dulwich_refs(make_repo):
    repo = _setup(make_repo)
    code = f"""
import sys
from git_checkout_helper.refs import Refs
r = Refs({str(repo.git_dir)!r}, {str(repo.git_dir)!r})
r[b"HEAD"], r[b"refs/heads/packed"], r.read_ref(b"refs/tags/v1"), b"refs/heads/none" in r
[r.read_ref(n) for n in (b"main", b"refs/main", b"refs/heads/a..b", b"refs/heads/x.lock", b"../config")]
print("dulwich.refs" in sys.modules)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "False"


def test_check_ref_format_as_dulwich_and_git(git_env):
    from dulwich.refs import check_ref_format as theirs

    from git_checkout_helper.refs import check_ref_format

    names = [b"heads/main", b"main", b"heads/a..b", b"heads/.x", b"heads/x.lock", b"heads/x.lock/y",
             b"heads//x", b"heads/x/", b"heads/x.", b"heads/a@{1}", b"heads/a@b", b"heads/sp ace",
             b"heads/t\tab", b"heads/a~1", b"heads/a^", b"heads/a:b", b"heads/a?", b"heads/a*", b"heads/a[",
             b"heads/a\\b", b"heads/\x7f", b"heads/\xc3\xa9", b"@", b"heads/@", b"a/b/c.d", b"/heads/x",
             b"heads/-x", b"heads/x.lockx", b"heads/.lock", b"heads/x..", b"tags/v1.0"]
    for name in names:
        ours = check_ref_format(name)
        assert ours == theirs(name), name
        # (without --allow-onelevel git too wants two components)
        p = subprocess.run(["git", "check-ref-format", name.decode("utf-8", "surrogateescape")],
                           env=git_env, capture_output=True)
        assert ours == (p.returncode == 0), name
