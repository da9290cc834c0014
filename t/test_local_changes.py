"""What a switch that is not ``--quiet`` says of the local changes it
carries (``show_local_changes``, checkout/switch.py), against git's own words.

Twins on ``main`` (a clone, a linked worktree, a clone with
``core.fileMode=false``) get one local change of each kind on paths ``other``
keeps: a modified file, a deleted one, one replaced by a symlink, an
executable bit, a staged new file and a staged deletion, next to a file
touched but unchanged; both switch to ``other``. Ours must print git's lines
(``M``, ``D``, ``T``, ``A``) and messages, leave git's index and status, and
look at no file of an entry it knows up to date (as diff-lib.c's
``get_stat_data``): only the changed ones.
"""

from __future__ import annotations

import io
import os

import pytest
from conftest import files_repo, git, isolate_api_env, run_git, twin_env

from git_checkout_helper.checkout import switch
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.repository import Repository

N_FILES = 60


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """main of N_FILES files dNN/f<i> in three directories; other changes f0, f3, ..., f27."""
    path = tmp_path_factory.mktemp("local") / "src"
    env = twin_env(path.parent)
    files_repo(path, N_FILES, 3, {"other": range(0, 30, 3)}, env)
    return path, env


def _twin(src, env, path, setup: str):
    """A clone of ``src`` with the local changes; ``setup``: "plain", "linked"
    (they are made in a linked worktree on main, and switched there) or
    "filemode-false" (``core.fileMode=false``: an x bit is no change)."""
    git(None, "clone", "-q", str(src), str(path), env=env)
    if setup == "filemode-false":
        git(path, "config", "core.fileMode", "false", env=env)
    elif setup == "linked":
        git(path, "checkout", "-q", "--detach", env=env)
        git(path, "worktree", "add", "-q", str(path) + ".wt", "main", env=env)
        path = path.parent / (path.name + ".wt")
    (path / "d01" / "f1").write_text("changed here\n")
    (path / "d02" / "f2").unlink()
    (path / "d01" / "f4").unlink()
    (path / "d01" / "f4").symlink_to("f1")
    (path / "d01" / "f13").chmod(0o755)
    (path / "d00" / "new").write_text("new\n")
    git(path, "add", "d00/new", env=env)
    git(path, "rm", "-q", "--cached", "d01/f7", env=env)
    st = os.stat(path / "d02" / "f5")
    os.utime(path / "d02" / "f5", ns=(st.st_atime_ns, st.st_mtime_ns - 10_000_000_000))
    return path


@pytest.mark.parametrize("setup", ["plain", "linked", "filemode-false"])
def test_local_changes_as_git(src, tmp_path, monkeypatch, setup):
    path, env = src
    ours, theirs = _twin(path, env, tmp_path / "ours", setup), _twin(path, env, tmp_path / "git", setup)
    looked: list[bytes] = []
    lstat_or_none = switch._lstat_or_none
    monkeypatch.setattr(switch, "_lstat_or_none", lambda p: looked.append(p) or lstat_or_none(p))
    isolate_api_env(monkeypatch, env["HOME"])
    out, err = io.StringIO(), io.StringIO()
    run_checkout(Repository.open(str(ours), dict(os.environ)), "other",
                 CheckoutOptions(workers=2, threshold=0, online_cpus=2, quiet=False), err=err, out=out)
    theirs_run = run_git(theirs, "-c", "checkout.workers=2", "checkout", "other", env=env, text=True)
    assert (out.getvalue(), err.getvalue()) == (theirs_run.stdout, theirs_run.stderr)
    x_bit = [] if setup == "filemode-false" else ["d01/f13"]  # (else refreshed: its ctime changed, not its content)
    assert [line for line in out.getvalue().splitlines() if "\t" in line] == [
        "A\td00/new", "M\td01/f1", *(f"M\t{p}" for p in x_bit), "T\td01/f4", "D\td01/f7", "D\td02/f2"]
    # Only the entries the refresh did not find up to date; not the 50-odd others.
    top = os.fsencode(ours) + b"/"
    assert sorted(p.removeprefix(top) for p in looked) == sorted(
        [b"d01/f1", *(p.encode() for p in x_bit), b"d01/f4", b"d02/f2"])
    for args in (["ls-files", "-s"], ["status", "--porcelain"], ["rev-parse", "HEAD"]):
        assert git(ours, *args, env=env) == git(theirs, *args, env=env), args
