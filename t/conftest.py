"""Shared pytest fixtures: an isolated git environment and small repositories.

``run_git(cwd, *args)`` runs git for a test, ``git(cwd, *args)`` the same for just its
stdout. Like t/test-lib.sh for the shell tests: git run by a test sees no user or
system configuration (``HOME`` is the test's own directory,
``GIT_CONFIG_NOSYSTEM=1``), no ``GIT_*`` variable from the caller, fixed
author/committer identities and dates, and ``PYTHONPATH`` pointing at this
checkout so helper processes import the code under test.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def isolated_git_env(home: str | os.PathLike) -> dict[str, str]:
    """The environment for a git (or helper) process that must see nothing of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=os.path.join(home, ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="A U Thor",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_AUTHOR_DATE="1112354055 +0200",
        GIT_COMMITTER_NAME="C O Mitter",
        GIT_COMMITTER_EMAIL="committer@example.com",
        GIT_COMMITTER_DATE="1112354055 +0200",
        PYTHONPATH=str(ROOT),
    )
    return env


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """An isolated environment (see :func:`isolated_git_env`), HOME in tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[user]\n\tname = A U Thor\n\temail = author@example.com\n"
    )
    return isolated_git_env(home)


@pytest.fixture
def helpers_at_merge(monkeypatch) -> list[int]:
    """How many helpers each switch of this test had running when its merge
    began (``start_helpers_ahead``): one number per merge."""
    from git_checkout_helper.checkout import switch

    seen: list[int] = []
    merge_trees = switch._merge_trees

    def spy(co, *a, **k):
        seen.append(len(co.pool) if co.pool is not None else 0)
        return merge_trees(co, *a, **k)

    monkeypatch.setattr(switch, "_merge_trees", spy)
    return seen


def twin_env(home) -> dict[str, str]:
    """The environment of a twin test's git: this process's, without its
    trace, test and config variables, HOME at ``home``, a fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_TRACE", "GIT_TEST_", "GIT_CONFIG"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="A", GIT_AUTHOR_EMAIL="a@example.com", GIT_COMMITTER_NAME="A",
               GIT_COMMITTER_EMAIL="a@example.com")
    return env


def isolate_api_env(monkeypatch, home) -> None:
    """This process's environment as :func:`twin_env`'s, for ours run through the API."""
    for k in list(os.environ):
        if k.startswith(("GIT_TRACE", "GIT_TEST_", "GIT_CONFIG")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)


def files_repo(src: Path, n: int, dirs: int, branches: dict[str, range], env: dict[str, str]) -> None:
    """``git init`` at ``src`` a main of ``n`` files ``dNN/f<i>`` in ``dirs``
    directories; each of ``branches`` made from main with its files
    ``f<i>`` changed; main checked out."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(src)], check=True, env=env)
    for i in range(n):
        d = src / f"d{i % dirs:02d}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}").write_text(f"file {i}\n")
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "main", env=env)
    for branch, changed in branches.items():
        git(src, "checkout", "-qb", branch, "main", env=env)
        for i in changed:
            (src / f"d{i % dirs:02d}" / f"f{i}").write_text(f"changed {i}\n")
        git(src, "commit", "-qam", branch, env=env)
    git(src, "checkout", "-q", "main", env=env)


def clone_twins(source: Path, env: dict[str, str], where: Path, branch: str,
                prepare: Callable[[Path], None] | None = None) -> tuple[Path, Path]:
    """Two clones of ``source`` in ``where`` (ours, git's), each with a local
    ``branch`` from origin's and its index written two seconds after its
    files (none racily clean, as after a checkout a while ago), then
    ``prepare(path)`` run in it."""
    twins = []
    for name in ("ours", "git"):
        path = where / name
        git(None, "clone", "-q", str(source), str(path), env=env)
        git(path, "branch", "-q", branch, f"origin/{branch}", env=env)
        index = path / ".git" / "index"
        later = os.stat(index).st_mtime + 2
        os.utime(index, (later, later))
        if prepare is not None:
            prepare(path)
        twins.append(path)
    return twins[0], twins[1]


def run_git(cwd, *args: str, env: dict[str, str] | None = None, input: bytes | str | None = None,
            check: bool = True, text: bool = False) -> subprocess.CompletedProcess:
    """Run git in ``cwd``, its stdout and stderr captured; the finished process.
    ``env``: the process's environment when None, else e.g. :func:`isolated_git_env`'s.
    ``check``: when git fails, raise an AssertionError naming the command and git's stderr.
    ``text``: stdout and stderr (and ``input``) as str, as subprocess's ``text=True`` gives them,
    not bytes."""
    p = subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, text=text)
    if check and p.returncode:
        stderr = p.stderr if text else p.stderr.decode(errors="replace")
        cmd = " ".join(map(str, args))
        raise AssertionError(f"git {cmd} (in {cwd}) failed with {p.returncode}: {stderr}")
    return p


def git(cwd, *args: str, env: dict[str, str] | None = None, input: bytes | None = None) -> bytes:
    """Run git in ``cwd``; its stdout (raises AssertionError on failure, see :func:`run_git`)."""
    return run_git(cwd, *args, env=env, input=input).stdout


class Repo:
    """A repository made by real git, with a way to run git in it."""

    def __init__(self, path: Path, env: dict[str, str]) -> None:
        self.path = path
        self.git_dir = path / ".git"
        self.env = env

    def git(self, *args: str, input: bytes | None = None) -> bytes:
        """Run git in the repository; its stdout (raises on failure)."""
        return git(self.path, *args, env=self.env, input=input)

    def blob(self, content: bytes) -> bytes:
        """Store ``content`` as a blob; its raw object id."""
        return bytes.fromhex(self.git("hash-object", "-w", "--stdin", input=content).decode().strip())


@pytest.fixture
def make_repo(git_env: dict[str, str], tmp_path: Path) -> Callable[..., Repo]:
    """``make_repo(name="repo", object_format="sha1")``: ``git init`` a new repository."""

    def make(name: str = "repo", object_format: str = "sha1") -> Repo:
        path = tmp_path / name
        subprocess.run(
            ["git", "init", "-q", f"--object-format={object_format}", str(path)],
            env=git_env, check=True,
        )
        return Repo(path, git_env)

    return make
