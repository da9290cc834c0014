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
import stat
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


def _commit_all(path, env, msg):
    git(path, "add", "-A", env=env)
    git(path, "commit", "-q", "-m", msg, env=env)


def far_switch_source(src: Path, env: dict[str, str]) -> None:
    """A repository at ``src`` for far switches with everything in the way.
    main: 12 directories of 25 files, a symlink ``lnk`` to d00, a file
    ``todir``, a directory ``tofile``, a directory ``gone``; other: a third
    of the files changed, 20 deleted, 24 added in old and new directories,
    ``lnk`` a directory, ``todir`` a directory, ``tofile`` a file, ``gone``
    gone, an executable bit flipped, a symlink retargeted, and two paths
    that match the ignore rules (``out.o``, ``gen.o/f``)."""
    git(None, "init", "-q", "-b", "main", str(src), env=env)
    for d in range(12):
        (src / f"d{d:02}").mkdir()
        for f in range(25):
            (src / f"d{d:02}" / f"f{f}").write_text(f"{d} {f}\n")
    os.symlink("d00", src / "lnk")
    os.symlink("d01/f1", src / "link")
    (src / "todir").write_text("a file\n")
    (src / "tofile").mkdir()
    (src / "tofile" / "x").write_text("x\n")
    (src / "gone").mkdir()
    for f in ("a", "b"):
        (src / "gone" / f).write_text(f + "\n")
    (src / ".gitignore").write_text("*.o\n")
    _commit_all(src, env, "main")
    git(src, "checkout", "-q", "-b", "other", env=env)
    for d in range(12):
        for f in range(0, 25, 3):
            (src / f"d{d:02}" / f"f{f}").write_text(f"changed {d} {f}\n")
        (src / f"d{d:02}" / "new").write_text(f"new {d}\n")
    for d in range(0, 12, 3):
        for f in (1, 2, 4, 5, 7):
            os.unlink(src / f"d{d:02}" / f"f{f}")
    for f in range(12):
        (src / "added").mkdir(exist_ok=True)
        (src / "added" / f"n{f}").write_text(f"{f}\n")
    os.unlink(src / "lnk")
    (src / "lnk").mkdir()
    (src / "lnk" / "f0").write_text("not d00's\n")
    os.unlink(src / "todir")
    (src / "todir").mkdir()
    (src / "todir" / "f").write_text("below\n")
    for p in ("tofile/x", "gone/a", "gone/b"):
        os.unlink(src / p)
    os.rmdir(src / "tofile")
    (src / "tofile").write_text("now a file\n")
    os.chmod(src / "d02" / "f3", 0o755)
    os.unlink(src / "link")
    os.symlink("d03/f3", src / "link")
    (src / "out.o").write_text("a tracked file an ignored directory may stand on\n")
    (src / "gen.o").mkdir()
    (src / "gen.o" / "f").write_text("below a path an ignored file may stand on\n")
    git(src, "add", "-f", "out.o", "gen.o/f", env=env)
    _commit_all(src, env, "other")
    git(src, "checkout", "-q", "main", env=env)


def tree_snapshot(top) -> dict:
    """Every path below ``top`` but .git: its kind, mode and bytes or target."""
    out = {}
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, top)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", st.st_mode & 0o111 != 0, f.read())
    return out
