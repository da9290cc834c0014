"""discovery.discover against ``git rev-parse`` in the same set-ups (setup.c's cases)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_git

from git_checkout_helper.discovery import (
    BadRepositoryFormat,
    DubiousOwnership,
    NotAGitRepository,
    discover,
    setup_env,
)
from git_checkout_helper.worktree import list_worktrees


def git_view(cwd: Path, env: dict[str, str]) -> dict:
    """What git says of the repository seen from ``cwd``."""
    out = run_git(cwd, "rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
                  "--is-bare-repository",
                  "--is-inside-work-tree", "--git-path", "index", "--git-path", "objects",
                  env=env, text=True).stdout.splitlines()
    gitdir, common, bare, inside, index, objects = out
    top = run_git(cwd, "rev-parse", "--show-toplevel", env=env, check=False, text=True).stdout.strip() or None
    if bare == "true":
        top = None
    prefix = (run_git(cwd, "rev-parse", "--show-prefix", env=env, text=True).stdout.strip()
              if inside == "true" else None)
    return {
        "gitdir": os.path.realpath(gitdir),
        "commondir": os.path.realpath(common),
        "worktree": top,
        "prefix": prefix,
        "index": os.path.realpath(index),
        "objects": os.path.realpath(objects),
    }


def our_view(cwd: Path, env: dict[str, str]) -> dict:
    d = discover(str(cwd), env=setup_env(env))
    return {
        "gitdir": os.path.realpath(d.gitdir),
        "commondir": os.path.realpath(d.commondir),
        "worktree": d.worktree,
        "prefix": d.prefix,
        "index": os.path.realpath(d.index_path),
        "objects": os.path.realpath(d.objects),
    }


def same_as_git(cwd: Path, env: dict[str, str]) -> dict:
    ours, theirs = our_view(cwd, env), git_view(cwd, env)
    assert ours == theirs
    return ours


@pytest.fixture
def repo(make_repo):
    r = make_repo("main")
    (r.path / "a" / "b").mkdir(parents=True)
    (r.path / "a" / "b" / "f").write_text("f\n")
    r.git("add", ".")
    r.git("commit", "-qm", "one")
    r.git("branch", "side")
    return r


def test_walk_up_from_a_subdirectory(repo):
    v = same_as_git(repo.path / "a" / "b", repo.env)
    assert v["prefix"] == "a/b/"


def test_linked_worktree_shares_the_common_dir(repo, tmp_path):
    repo.git("worktree", "add", "-q", str(tmp_path / "linked"), "side")
    v = same_as_git(tmp_path / "linked" / "a", repo.env)
    assert v["gitdir"] != v["commondir"]
    assert v["index"].startswith(v["gitdir"] + "/")
    assert v["objects"] == os.path.realpath(repo.git_dir / "objects")
    env = dict(repo.env, GIT_DIR=v["gitdir"])  # as git starts its worker
    same_as_git(tmp_path / "linked", env)
    wts = list_worktrees(discover(str(tmp_path / "linked"), env=setup_env(repo.env)))
    assert [w.path for w in wts] == [str(repo.path), str(tmp_path / "linked")]
    assert [w.is_current for w in wts] == [False, True]


def test_core_worktree_in_common_config_does_not_apply_to_linked_worktrees(repo, tmp_path):
    repo.git("worktree", "add", "-q", str(tmp_path / "linked"), "side")
    (tmp_path / "elsewhere").mkdir()
    repo.git("config", "core.worktree", str(tmp_path / "elsewhere"))
    v = same_as_git(tmp_path / "linked", repo.env)
    assert v["worktree"] == str(tmp_path / "linked")


def test_explicit_git_dir_with_core_worktree_relative_to_git_dir(repo, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    repo.git("config", "core.worktree", "../a")
    env = dict(repo.env, GIT_DIR=str(repo.git_dir))
    v = same_as_git(out, env)
    assert v["worktree"] == str(repo.path / "a") and v["prefix"] is None
    v = same_as_git(repo.path / "a" / "b", env)
    assert v["prefix"] == "b/"


def test_git_work_tree_and_relative_index_file(repo):
    env = dict(repo.env, GIT_DIR="../../.git", GIT_WORK_TREE="../..", GIT_INDEX_FILE="alt-index")
    v = same_as_git(repo.path / "a" / "b", env)
    assert v["index"] == os.path.realpath(repo.path / "alt-index")


def test_common_dir_and_object_directory(repo, tmp_path):
    objects = tmp_path / "objects"
    (objects / "pack").mkdir(parents=True)
    env = dict(repo.env, GIT_OBJECT_DIRECTORY=str(objects))
    assert same_as_git(repo.path, env)["objects"] == str(objects)


def test_gitfile_and_bare_and_core_bare(repo, tmp_path):
    sep = tmp_path / "sep"
    git(tmp_path, "clone", "-q", "--separate-git-dir", str(tmp_path / "sep.git"), str(repo.path),
        str(sep), env=repo.env)
    same_as_git(sep / "a", repo.env)
    assert discover(str(sep), env=setup_env(repo.env)).gitfile == str(sep / ".git")
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(tmp_path / "b.git"), env=repo.env)
    assert same_as_git(tmp_path / "b.git" / "refs", repo.env)["worktree"] is None
    repo.git("config", "core.bare", "true")
    assert same_as_git(repo.path / "a", repo.env)["worktree"] is None


def test_ceiling_directories(repo):
    env = dict(repo.env, GIT_CEILING_DIRECTORIES=str(repo.path))
    with pytest.raises(NotAGitRepository, match=r"^not a git repository \(or any of the parent"):
        discover(str(repo.path / "a"), env=setup_env(env))
    same_as_git(repo.path, env)  # the ceiling itself is not a parent of itself
    env = dict(repo.env, GIT_CEILING_DIRECTORIES=str(repo.path / "a"))
    same_as_git(repo.path / "a", env)


def test_format_refusals_are_git_messages(repo):
    cfg = str(repo.git_dir / "config")
    git(repo.path, "config", "-f", cfg, "core.repositoryformatversion", "1", env=repo.env)
    git(repo.path, "config", "-f", cfg, "extensions.fancy", "x", env=repo.env)
    with pytest.raises(BadRepositoryFormat) as e:
        discover(str(repo.path), env=setup_env(repo.env))
    theirs = run_git(repo.path, "checkout", "side", env=repo.env, check=False, text=True)
    assert theirs.returncode == 128
    assert theirs.stderr == f"fatal: {e.value}\n"
    # Without a format version nothing in the file counts (read_repository_format).
    git(repo.path, "config", "-f", cfg, "--unset", "core.repositoryformatversion", env=repo.env)
    git(repo.path, "config", "-f", cfg, "core.worktree", "/nonexistent", env=repo.env)
    same_as_git(repo.path, repo.env)


def test_dubious_ownership_message(repo):
    env = dict(repo.env, GIT_TEST_ASSUME_DIFFERENT_OWNER="1")
    with pytest.raises(DubiousOwnership) as e:
        discover(str(repo.path / "a"), env=setup_env(env))
    theirs = run_git(repo.path / "a", "checkout", "side", env=env, check=False, text=True)
    assert theirs.stderr == f"fatal: {e.value}\n"
    ok = dict(env, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="safe.directory", GIT_CONFIG_VALUE_0=str(repo.path))
    same_as_git(repo.path / "a", ok)
    same_as_git(repo.path / "a", dict(env, GIT_CONFIG_PARAMETERS=f"'Safe.Directory={repo.path}'"))
    # A malformed command-line setting: git's verdict on it, before the ownership's.
    import sys

    bad = dict(env, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="safe.directory")
    ours = subprocess.run([os.path.join(os.path.dirname(sys.executable), "git-parallel-checkout"), "side"],
                          cwd=repo.path / "a", env=bad, capture_output=True, text=True)
    theirs = run_git(repo.path / "a", "checkout", "side", env=bad, check=False, text=True)
    assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr) == (
        128, "error: missing config value GIT_CONFIG_VALUE_0\nfatal: unable to parse command-line config\n")
    # The explicit GIT_DIR is trusted, as in git.
    same_as_git(repo.path, dict(env, GIT_DIR=str(repo.git_dir)))


def test_alternate_object_directories_from_the_environment(repo, tmp_path):
    """Objects only in GIT_ALTERNATE_OBJECT_DIRECTORIES: our checkout as git's."""
    import sys

    head = repo.git("rev-parse", "HEAD").decode().strip()
    env = dict(repo.env, GIT_ALTERNATE_OBJECT_DIRECTORIES=str(repo.git_dir / "objects"))
    twins = {}
    for who in ("ours", "git"):
        d = tmp_path / who
        git(None, "init", "-q", str(d), env=repo.env)
        git(d, "update-ref", "refs/heads/main", head, env=env)
        twins[who] = d
    ours = subprocess.run([os.path.join(os.path.dirname(sys.executable), "git-parallel-checkout"), "-q", "-f",
                           "main"], cwd=twins["ours"], env=env, capture_output=True, text=True)
    theirs = run_git(twins["git"], "checkout", "-q", "-f", "main", env=env, check=False, text=True)
    assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr) == (0, "")
    assert (twins["ours"] / "a" / "b" / "f").read_text() == "f\n"
    assert (run_git(twins["ours"], "ls-files", "-s", env=env, text=True).stdout
            == run_git(twins["git"], "ls-files", "-s", env=env, text=True).stdout)
    assert run_git(twins["ours"], "status", "--porcelain", env=env, text=True).stdout == ""
