"""hooks.py: where post-checkout is found, how its path is spelled, its
environment and the exit code it leaves (twins with git in t2096)."""

from __future__ import annotations

import io
import os

from git_checkout_helper.hooks import exit_code, find_hook, hook_environment, run_hook
from git_checkout_helper.repository import Repository


def _hook(path, body="#!/bin/sh\nexit 0\n", mode=0o755):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, mode)


def test_find_hook_spelling_and_hooks_path(make_repo):
    r = make_repo()
    repo = Repository.open(str(r.path), {})
    try:
        assert find_hook(repo, "post-checkout") is None
        _hook(os.path.join(r.git_dir, "hooks", "post-checkout"))
        full, shown = find_hook(repo, "post-checkout")
        assert shown == ".git/hooks/post-checkout" and os.path.isabs(full)
        assert find_hook(repo, "post-checkout", git_dir_env=str(r.git_dir))[1] == \
            os.path.join(str(r.git_dir), "hooks", "post-checkout")
        r.git("config", "core.hooksPath", "mine")
        repo2 = Repository.open(str(r.path), {})
        assert find_hook(repo2, "post-checkout") is None  # mine/ has none: .git/hooks is not looked at
        _hook(os.path.join(r.path, "mine", "post-checkout"))
        assert find_hook(repo2, "post-checkout")[1] == "mine/post-checkout"
        repo2.close()
    finally:
        repo.close()


def test_not_executable_hint_and_advice(make_repo):
    r = make_repo()
    _hook(os.path.join(r.git_dir, "hooks", "post-checkout"), mode=0o644)
    repo = Repository.open(str(r.path), {})
    err = io.StringIO()
    assert find_hook(repo, "post-checkout", err=err) is None
    assert err.getvalue() == (
        "hint: The '.git/hooks/post-checkout' hook was ignored because it's not set as executable.\n"
        "hint: You can disable this warning with `git config advice.ignoredHook false`.\n")
    repo.close()
    r.git("config", "advice.ignoredHook", "false")
    repo = Repository.open(str(r.path), {})
    err = io.StringIO()
    assert find_hook(repo, "post-checkout", err=err) is None and err.getvalue() == ""
    repo.close()


def test_environment_prefix_and_clone(make_repo):
    r = make_repo()
    repo = Repository.open(str(r.path), {})
    env = hook_environment(repo, {"X": "1"}, "sub/", clone=False)
    assert env == {"X": "1", "GIT_PREFIX": "sub/"}  # a plain .git directory: GIT_DIR not exported
    env = hook_environment(repo, {"X": "1"}, None, clone=True)
    assert env == {"X": "1", "GIT_DIR": os.path.abspath(repo.dirs.gitdir)}
    repo.close()


def test_run_hook_status_cwd_and_stdin(make_repo, tmp_path):
    r = make_repo()
    log = tmp_path / "log"
    _hook(os.path.join(r.git_dir, "hooks", "post-checkout"),
          f'#!/bin/sh\necho "$0 $* $(pwd)" >{log}\nread x && echo "stdin: $x" >>{log}\nexit 7\n')
    repo = Repository.open(str(r.path), {})
    rc = run_hook(repo, "post-checkout", ["a", "b", "1"], environ=dict(os.environ), prefix="",
                  err=io.StringIO(), out=io.StringIO())
    assert rc == 7
    assert log.read_text() == f".git/hooks/post-checkout a b 1 {r.path}\n"
    repo.close()


def test_exit_codes_as_git():
    assert exit_code("switch", 0) == 0
    assert exit_code("switch", 7) == 1  # ret || writeout_error
    assert exit_code("paths", 7) == 7  # errs |= status
    assert exit_code("clone", 5) == 5
