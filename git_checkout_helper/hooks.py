"""Hooks, found and run as git's ``hook.c`` (``find_hook``, ``run_hooks``)
and ``run-command.c`` run them; here only ``post-checkout``.

* Where: ``core.hooksPath`` when set (a relative one is relative to the work
  tree's top, where git runs hooks), else ``hooks/`` in the common git
  directory (a linked worktree shares its main repository's hooks).
* A hook that exists but is not executable is skipped with git's hint
  (``advice.ignoredHook``).
* How: ``argv[0]`` is the path as git spells it (``.git/hooks/<name>`` in a
  plain repository, an absolute path from a ``.git`` file or a clone, the
  ``GIT_DIR`` the user gave, or ``<hooksPath>/<name>``); the working
  directory is the work tree's top; stdin is ``/dev/null`` and stdout goes
  to stderr (``stdout_to_stderr``); a script git's ``execve`` cannot run
  (``ENOEXEC``: no ``#!`` line) is run by ``/bin/sh``, as run-command.c does.
* Environment: the command's own, plus ``GIT_PREFIX`` (the directory the
  command was started in, relative to the top, with a trailing ``/``; empty
  at the top) as ``setup_git_directory`` exports it, and ``GIT_DIR`` where
  git exports it: when the git directory was found through a ``.git`` file
  (linked worktrees, submodules), and in a clone.
* ``post-checkout <old> <new> <flag>``: flag 1 after a branch switch and
  after a clone (old is the null id), 0 after paths were restored (old and
  new are both HEAD). Its exit status becomes the command's as
  builtin/checkout.c and builtin/clone.c make it (see :func:`exit_code`).
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Mapping

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["exit_code", "find_hook", "post_checkout", "run_hook"]

IGNORED_HOOK_HINT = ("hint: The '{path}' hook was ignored because it's not set as executable.\n"
                     "hint: You can disable this warning with `git config advice.ignoredHook false`.\n")


def _config_str(config, section: bytes, name: bytes) -> str | None:
    try:
        return os.fsdecode(config.get((section,), name))
    except KeyError:
        return None


def _advice(config, key: bytes) -> bool:
    try:
        return config.get_boolean((b"advice",), key, True)
    except (KeyError, ValueError):
        return True


def find_hook(repo, name: str, git_dir_env: str | None = None, err: TextIO | None = None,
              clone: bool = False) -> tuple[str, str] | None:
    """``find_hook``: (path to run, ``argv[0]`` as git shows it) or None.

    ``git_dir_env`` is ``$GIT_DIR`` as the user gave it (git keeps its
    spelling in the hook's path); ``clone``: git clone set an absolute git
    directory, so the hook's path is absolute. A hook present but not
    executable is None, with git's hint on ``err`` unless
    ``advice.ignoredHook`` is off.
    """
    top = repo.worktree or repo.dirs.gitdir
    hooks_path = _config_str(repo.config, b"core", b"hookspath")
    if hooks_path:
        shown = os.path.join(os.path.expanduser(hooks_path), name)
        full = shown if os.path.isabs(shown) else os.path.join(top, shown)
    else:
        common = repo.dirs.commondir
        full = os.path.join(common, "hooks", name)
        if git_dir_env and os.path.abspath(os.path.join(top, git_dir_env)) == os.path.abspath(common):
            shown = os.path.join(git_dir_env, "hooks", name)
        elif not clone and repo.worktree and os.path.abspath(common) == os.path.join(os.path.abspath(repo.worktree), ".git") \
                and os.path.isdir(os.path.join(repo.worktree, ".git")):
            shown = os.path.join(".git", "hooks", name)
        else:
            shown = full
    if os.access(full, os.X_OK) and os.path.isfile(full):
        return full, shown
    if os.path.exists(full) and err is not None and _advice(repo.config, b"ignoredhook"):
        err.write(IGNORED_HOOK_HINT.format(path=shown))
    return None


def _uses_gitfile(repo) -> bool:
    """Whether the git directory was reached through a ``.git`` file."""
    wt = repo.worktree
    return bool(wt) and os.path.isfile(os.path.join(wt, ".git"))


def hook_environment(repo, environ: Mapping[str, str], prefix: str | None, clone: bool) -> dict[str, str]:
    """The hook's environment (see the module docstring)."""
    env = dict(environ)
    if clone:
        env["GIT_DIR"] = os.path.abspath(repo.dirs.gitdir)
        return env
    env["GIT_PREFIX"] = prefix or ""
    if "GIT_DIR" not in environ and _uses_gitfile(repo):
        env["GIT_DIR"] = os.path.abspath(repo.dirs.gitdir)
    return env


def run_hook(repo, name: str, args: list[str], *, environ: Mapping[str, str], prefix: str | None = None,
             clone: bool = False, err: TextIO = sys.stderr, out: TextIO = sys.stdout, trace=None) -> int:
    """``run_hooks_l``: run hook ``name`` if there is one; its exit status (0 without one).
    ``trace``: the :class:`trace2.Trace2` session, which records the hook as
    ``run_processes_parallel`` does (a ``hook`` region, a child of class ``hook``)."""
    found = find_hook(repo, name, None if clone else environ.get("GIT_DIR"), err, clone)
    if found is None:
        return 0
    full, shown = found
    cwd = repo.worktree or repo.dirs.gitdir
    env = hook_environment(repo, environ, prefix, clone)
    if trace is None or not trace.enabled:
        return _run_hook(full, shown, args, name, cwd, env, err, out, None)
    env["GIT_TRACE2_PARENT_SID"] = trace.sid
    trace.region_enter("hook", name, "max:1")
    try:
        return _run_hook(full, shown, args, name, cwd, env, err, out, trace)
    finally:
        trace.region_leave("hook", name)


def _run_hook(full: str, shown: str, args: list[str], name: str, cwd, env, err: TextIO, out: TextIO, trace) -> int:
    for f in (out, err):  # our messages come first, as git's (unbuffered stderr, flushed stdout)
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    try:
        stdout = err.fileno()
    except (AttributeError, OSError, ValueError):
        stdout = 2
    argv = [shown, *args]
    import subprocess  # only when a hook runs: 4 ms of every start-up otherwise

    cid = trace.child_start(argv, hook_name=name) if trace is not None else -1
    started = time.monotonic()
    try:
        try:
            # The path as git spells it, relative to the top: a script's $0.
            proc = subprocess.Popen(argv if os.path.isabs(shown) or os.sep in shown else [full, *args],
                                    cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout)
        except OSError as e:
            if e.errno != errno.ENOEXEC:
                raise
            proc = subprocess.Popen(["/bin/sh", *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout)
    except OSError as e:
        if trace is not None:
            trace.child_exit(cid, -1, -1, time.monotonic() - started)
        err.write(f"error: cannot run {shown}: {e.strerror}\n")
        return 1
    try:
        proc.wait()
    except BaseException:  # interrupted: as subprocess.run, the hook does not outlive us
        proc.kill()
        proc.wait()
        raise
    if trace is not None:
        trace.child_exit(cid, proc.pid, proc.returncode, time.monotonic() - started)
    if proc.returncode < 0:  # wait_or_whine: died of a signal
        err.write(f"error: {shown} died of signal {-proc.returncode}\n")
        return 128 - proc.returncode
    return proc.returncode


def post_checkout(repo, old: bytes | None, new: bytes | None, changed: bool, *, environ: Mapping[str, str],
                  prefix: str | None = None, clone: bool = False, err: TextIO = sys.stderr,
                  out: TextIO = sys.stdout, trace=None) -> int:
    """``post_checkout_hook``: ``<old> <new> <1|0>``, null ids for None."""
    zero = "0" * repo.odb.git_hash_algo.hex_length
    args = [old.decode() if old else zero, new.decode() if new else zero, "1" if changed else "0"]
    return run_hook(repo, "post-checkout", args, environ=environ, prefix=prefix, clone=clone, err=err, out=out,
                    trace=trace)


def exit_code(kind: str, hook_status: int) -> int:
    """The command's exit code after a successful checkout whose hook
    returned ``hook_status``: a switch returns ``ret || writeout_error``
    (1), a path restore ``errs |= status``, a clone ``err |= status``."""
    if not hook_status:
        return 0
    return 1 if kind == "switch" else hook_status
