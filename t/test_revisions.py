"""Revisions and branch options (revision.py) against real git: the same
command lines run in sequence in two clones, `git parallel-checkout` in
one and `git checkout` in the other, with the same exit codes, stdout,
stderr, HEAD, index, work tree, reflogs and branch config after each."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest
from conftest import git

from git_checkout_helper.repository import Repository
from git_checkout_helper.revision import get_oid, nth_prior_checkout, unique_tracking_name


def _run(env, cwd, argv):
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


@pytest.fixture
def twins(git_env, tmp_path):
    """An upstream with main/other/side and tags, cloned twice; a local branch topic."""
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    up = tmp_path / "up"
    git(tmp_path, "init", "-q", "-b", "main", str(up), env=env)
    (up / "a").write_text("a\n")
    (up / "d").mkdir()
    (up / "d" / "f").write_text("f\n")
    git(up, "add", ".", env=env)
    git(up, "commit", "-qm", "one", env=env)
    (up / "a").write_text("b\n")
    git(up, "commit", "-qam", "two", env=env)
    git(up, "tag", "v1", env=env)
    git(up, "tag", "-a", "-m", "annotated", "v1a", env=env)
    git(up, "checkout", "-qb", "other", env=env)
    (up / "a").write_text("c\n")
    (up / "other-only").write_text("o\n")
    git(up, "add", ".", env=env)
    git(up, "commit", "-qm", "three", env=env)
    git(up, "checkout", "-qb", "side", "main", env=env)
    (up / "d" / "f").write_text("side\n")
    git(up, "commit", "-qam", "four", env=env)
    git(up, "checkout", "-q", "main", env=env)
    out = []
    for name in ("ours", "git"):
        d = tmp_path / name
        git(tmp_path, "clone", "-q", str(up), str(d), env=env)
        git(d, "checkout", "-qb", "topic", env=env)
        git(d, "checkout", "-q", "main", env=env)
        out.append(d)
    return env, out[0], out[1]


def _state(env, d):
    logs = d / ".git" / "logs"
    reflogs = {}
    for root, _dirs, files in os.walk(logs):
        for f in files:
            p = os.path.join(root, f)
            with open(p) as fh:  # the messages and ids, not the dates
                reflogs[os.path.relpath(p, logs)] = [line.split("\t")[-1] + line[:82] for line in fh]
    head = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=d, env=env, capture_output=True).stdout
    files = {}
    for root, dirs, fs in os.walk(d):
        dirs[:] = [x for x in dirs if x != ".git"]
        for f in fs:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                files[os.path.relpath(p, d)] = fh.read()
    return {
        "head": head, "rev": git(d, "rev-parse", "-q", "--verify", "HEAD^{commit}", env=env).decode()
        if subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=d, env=env,
                          capture_output=True).returncode == 0 else None,
        "index": git(d, "ls-files", "-s", env=env).decode(), "files": files, "reflogs": reflogs,
        "branches": git(d, "for-each-ref", "refs/heads", env=env).decode(),
        "config": (d / ".git" / "config").read_text(),
    }


def _same(env, ours, theirs, cmdline, sub="."):
    args = shlex.split(cmdline)
    a = _run(env, ours / sub, ["git", "parallel-checkout", *args])
    b = _run(env, theirs / sub, ["git", "checkout", *args])
    assert a == b, cmdline
    assert _state(env, ours) == _state(env, theirs), cmdline
    return a


SEQUENCE = [
    "-", "@{-1}", "HEAD~1", "main^{commit}", "v1a", "v1a^{tree}", "HEAD:", "-b main", "-b new", "-B new",
    "--orphan orph", "--detach", "--detach main", "-t origin/other", "-b x -t origin/other", "--no-guess other",
    "main", "-b y --no-track origin/main", "--detach -b z", "-b", "nosuch", "a", "HEAD~5", "v1 -- a", "v1 a",
    "", "-b bad..name", "-B y", "-B x main", "@{-3}", "-b lt -t main", "other~1 -- a", "main:", "main^0",
    "v1^{}", "-b a1 -b a2", "--detach v1 -- a", "side -- d", "-q side", "-q -", "main^2", "HEAD^1",
    "v1a^{tag}", "--orphan o2 v1", "-f main", "-B main --no-track side", "-B main v1",
    "-b s2 origin/side", "--track=direct -b s3 origin/other", "--track=bogus -b s4", "-b s5 -t v1",
]


def test_sequence_as_git(twins):
    env, ours, theirs = twins
    for cmdline in SEQUENCE:
        _same(env, ours, theirs, cmdline)


def test_restore_by_name_without_dashes_and_from_a_subdirectory(twins):
    env, ours, theirs = twins
    for d in (ours, theirs):
        (d / "a").write_text("mine\n")
        (d / "d" / "f").write_text("mine\n")
    rc, _out, err = _same(env, ours, theirs, "a")
    assert rc == 0 and err == "Updated 1 path from the index\n"
    _same(env, ours, theirs, "f", sub="d")
    _same(env, ours, theirs, "v1 -- f", sub="d")
    rc, _out, err = _same(env, ours, theirs, "origin/other a")
    assert err.startswith("Updated 1 path from ")


def test_file_and_remote_branch_ambiguity(twins):
    env, ours, theirs = twins
    for d in (ours, theirs):
        (d / "other").write_text("a file named like the remote branch\n")
        git(d, "add", "other", env=env)
    rc, _out, err = _same(env, ours, theirs, "other")
    assert rc == 128 and "could be both a local file and a tracking branch" in err
    _same(env, ours, theirs, "other --")  # "--": the branch, made from origin/other
    _same(env, ours, theirs, "main")
    _same(env, ours, theirs, "-- other")  # "--" first: the path


def test_several_remotes_and_default_remote(twins):
    env, ours, theirs = twins
    for d in (ours, theirs):
        git(d, "remote", "add", "second", str(d.parent / "up"), env=env)
        git(d, "fetch", "-q", "second", env=env)
    rc, _out, err = _same(env, ours, theirs, "side")
    assert rc == 128 and "matched multiple (2) remote tracking branches" in err
    for d in (ours, theirs):
        git(d, "config", "checkout.defaultRemote", "second", env=env)
    rc, out, err = _same(env, ours, theirs, "side")
    assert rc == 0 and "set up to track 'second/side'" in out


def test_no_arguments_and_dash_dash_alone(twins):
    env, ours, theirs = twins
    rc, out, _err = _same(env, ours, theirs, "")
    assert rc == 0 and "up to date with 'origin/main'" in out
    _same(env, ours, theirs, "--")
    _same(env, ours, theirs, "nosuch --")
    _same(env, ours, theirs, "main -- nosuch")


def test_unborn_branch(git_env, tmp_path):
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    ds = []
    for name in ("ours", "git"):
        d = tmp_path / name
        git(tmp_path, "init", "-q", str(d), env=env)
        ds.append(d)
    ours, theirs = ds
    for cmdline in ("", "--detach", "-b fresh", "HEAD"):
        _same(env, ours, theirs, cmdline)


def test_get_oid_forms(twins):
    env, ours, _ = twins
    r = Repository.open(str(ours), {})
    try:
        for rev in ("HEAD", "@", "main", "v1", "v1a", "v1a^{}", "v1a^{commit}", "v1a^{tree}", "HEAD~1", "HEAD^",
                    "HEAD^0", "origin/other", "remotes/origin/other", "refs/heads/main", "HEAD:d", "HEAD:d/f",
                    "main~1:a", "v1a^{tag}"):
            want = git(ours, "rev-parse", "--verify", "-q", rev, env=env).decode().strip().encode()
            assert get_oid(r, rev) == want, rev
        assert get_oid(r, "HEAD~9") is None and get_oid(r, "nosuch") is None and get_oid(r, "HEAD:nosuch") is None
        assert nth_prior_checkout(r, 1) == "topic"
        assert unique_tracking_name(r, "other") == (b"refs/remotes/origin/other", 1)
        assert unique_tracking_name(r, "nosuch") == (None, 0)
        short = git(ours, "rev-parse", "--short", "HEAD~1", env=env).decode().strip()
        assert get_oid(r, short) == git(ours, "rev-parse", "HEAD~1", env=env).decode().strip().encode()
    finally:
        r.close()


def test_unsupported_forms_fail_closed(twins):
    env, ours, _ = twins
    before = _state(env, ours)
    for rev in ("HEAD@{1}", "main@{upstream}", "HEAD^{/two}", "main...other"):
        rc, _out, err = _run(env, ours, ["git", "parallel-checkout", rev])
        assert rc == 128 and err.startswith("fatal: ") and err.count("\n") == 1, rev
    assert _state(env, ours) == before


def test_abbreviation_length_as_git(twins):
    """core.abbrev (auto: from the packed object count, at least 7; a number;
    false) in "HEAD is now at", "Previous HEAD position" and "Updated N paths"."""
    env, ours, theirs = twins
    stream = "".join(f"blob\ndata {len(str(i)) + 1}\n{i}\n\n" for i in range(17000))
    for d in (ours, theirs):
        subprocess.run(["git", "fast-import", "--quiet"], cwd=d, env=env, input=stream.encode(), check=True)
    count = int(git(ours, "count-objects", "-v", env=env).decode().split("in-pack: ")[1].split()[0])
    assert count >= 1 << 14  # 15 bits: git's auto length is 8
    rc, _out, err = _same(env, ours, theirs, "HEAD~1")
    assert rc == 0 and f"HEAD is now at {git(ours, 'rev-parse', '--short', 'HEAD', env=env).decode().strip()} one" in err
    assert len(git(ours, "rev-parse", "--short", "HEAD", env=env).decode().strip()) == 8
    for d in (ours, theirs):
        (d / "a").write_text("mine\n")
    rc, _out, err = _same(env, ours, theirs, "main a")
    assert rc == 0 and err.startswith("Updated 1 path from ")
    for value in ("12", "no", "auto", "4"):
        for d in (ours, theirs):
            git(d, "config", "core.abbrev", value, env=env)
        _same(env, ours, theirs, "main~1" if value != "no" else "main")
        _same(env, ours, theirs, "v1a")


def test_recursion_passes_over_a_gitlink_gitmodules_does_not_name(make_repo, git_env):
    """``submodule_from_ce``: a gitlink without a .gitmodules entry is no
    submodule to move, with or without recursion (t2099 moves real ones)."""
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    r = make_repo()
    (r.path / "a").write_text("a\n")
    r.git("add", "a")
    r.git("update-index", "--add", "--cacheinfo", "160000," + "1" * 40 + ",sub")
    r.git("commit", "-qm", "one")
    r.git("checkout", "-qb", "other")
    (r.path / "a").write_text("b\n")
    r.git("add", "a")
    r.git("update-index", "--cacheinfo", "160000," + "2" * 40 + ",sub")
    r.git("commit", "-qm", "two")
    r.git("checkout", "-q", "main")
    for argv in (["-c", "submodule.recurse=true", "parallel-checkout", "-q", "other"],
                 ["parallel-checkout", "-q", "--recurse-submodules", "main"],
                 ["-c", "submodule.recurse=true", "parallel-checkout", "--no-recurse-submodules", "-q", "other"]):
        rc, _out, err = _run(env, r.path, ["git", *argv])
        assert rc == 0 and err == ""
    assert git(r.path, "rev-parse", "HEAD:sub", env=env).decode().strip() == "2" * 40



@pytest.mark.parametrize("value", ["off", "0", "no", "true"])
def test_checkout_guess_read_as_git_reads_a_bool(twins, value):
    """``checkout.guess`` spelled any way git accepts: off/0/no keep a branch
    only the remote has from being made, as in git."""
    env, ours, theirs = twins
    env = dict(env, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="checkout.guess", GIT_CONFIG_VALUE_0=value)
    _same(env, ours, theirs, "other")
