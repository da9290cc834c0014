"""Command-line entry points; the only module that reads the environment.

* ``git-checkout--helper``: the helper process (helper.py, ``builtin/checkout--worker.c``).
* ``git-parallel-checkout`` / ``git-parallel-clone``: the coordinator.

Everything below this layer takes its settings as parameters.
"""

from __future__ import annotations

import gc
import os
import sys

from .help import open_manual, version_line
from .inflate import use_setting as _choose_inflater
from .wrapper import keep_mmap_threshold

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["checkout_command", "clone_command", "exit_now", "helper_command", "helper_main", "start_program"]


def exit_now(code: int) -> NoReturn:
    """Leave the process the way git's ``exit()`` does: output flushed and
    exit handlers run (``atexit``: trace2, ``weakref.finalize``), then gone,
    without the interpreter's finalization, which frees every object one by
    one: 55 ms after a 4,843-file clone here, a fifth of the time git takes
    for the whole checkout, and more the more entries were held. Whatever
    still needs the interpreter's own exit gets it: a profiler or tracer
    (``python -m cProfile``, coverage, a debugger: they write their results
    as the interpreter leaves), a thread that is not a daemon (the
    interpreter would wait for it) or a stream that cannot be flushed (the
    interpreter reports it and sets the status, as it would)."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    threading = sys.modules.get("threading")
    if threading is not None and any(t.is_alive() and not t.daemon and t is not threading.main_thread()
                                     for t in threading.enumerate()):
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:  # noqa: BLE001 - the interpreter's exit reports it
        sys.exit(code)
    os._exit(0 if code is None else code if isinstance(code, int) else 1)  # (sys.exit's reading of it)


def helper_command() -> NoReturn:
    """The ``git-checkout--helper`` program."""
    start_program(coordinator=False)
    exit_now(helper_main())


def start_program(coordinator: bool) -> None:
    """What each of our programs does before its work (the Python API does
    none of it: its caller's process is not ours to set up).

    * A coordinator runs without the cyclic garbage collector. Its heap only
      grows while it works (the tree, the index entries, the queue: tens of
      thousands of objects, the last freed by the process's exit, see
      :func:`exit_now`), so every collection scans live objects and frees
      nothing: 68 collections and 11.5 ms in a clone of git.git, 629 and
      59 ms at 100,000 files. What it makes in cycles (an exception's
      frames, a few objects per checkout) lives as long as the process
      anyway; so no recursive function in the package is a closure (one is
      a cycle, the function holding the cell that holds it, and the tree
      walk's kept a 100,000-file tree's dictionaries to the end). Forked
      helpers inherit the setting; their heap does not grow (an item's
      objects are freed by reference counting as it is written).
    * A coordinator's large transients are given back to the system when
      freed (:func:`wrapper.keep_mmap_threshold`). Its peak memory is then
      its data's: 90 -> 81 MiB in a 100,000-file clone.
    """
    if coordinator:
        gc.disable()
        keep_mmap_threshold()


def checkout_command() -> NoReturn:
    """The ``git-parallel-checkout`` program."""
    start_program(coordinator=True)
    exit_now(checkout_main())


def clone_command() -> NoReturn:
    """The ``git-parallel-clone`` program."""
    start_program(coordinator=True)
    exit_now(clone_main())


def _die(msg: str, code: int = 128) -> int:
    sys.stderr.write(f"fatal: {msg}\n")
    sys.stderr.flush()
    return code


def helper_main(argv: list[str] | None = None) -> int:
    """``git checkout--helper`` (helper.main), with this process's environment."""
    from .helper import main

    return main(sys.argv[1:] if argv is None else argv, os.environ)


CHECKOUT_USAGE = """\
usage: git parallel-checkout [<options>] <branch|commit>
   or: git parallel-checkout [<options>] --all [-u] [--prefix=<dir>/]
   or: git parallel-checkout [<options>] [<tree-ish>] -- <pathspec>...

    -j, --jobs <n>        number of helper processes (default: checkout.workers; 0 = one per CPU;
                          auto = chosen from the filesystem, CPUs and items)
    --threshold <n>       fewer items than this are written sequentially
                          (default: checkout.thresholdForParallelism)
    -f, --force           throw away local changes; overwrite untracked files
    -u, --index           with --all: update stat information in the index
                          (git checkout-index -u; not with --prefix)
    -q, --quiet           no progress, no messages
    --progress            show progress even when stderr is not a terminal
    --no-progress         never show progress
    --helper-cmd <cmd>    run <cmd> as the helper (e.g. 'git checkout--worker')
    --ignore-other-worktrees
                          switch to a branch even when another worktree has it checked out
    -v, --verbose         print a JSON report of what was done
    -C <path>             run as if started in <path> (before the other options)
    -b <branch>           create and checkout a new branch
    -B <branch>           create/reset and checkout a branch
    --orphan <new-branch>
                          new unparented branch
    --detach              detach HEAD at named commit
    -t, --track[=(direct|inherit)]
                          set branch tracking configuration
    --no-track            do not set up tracking
    --guess / --no-guess  second guess 'git checkout <no-such-branch>' (default)
    --[no-]recurse-submodules
                          control recursive updating of submodules (default:
                          submodule.recurse)
"""

#: The branch options of the checkout command (revision.BranchOptions).
BRANCH_VALUES = {"-b": "b", "-B": "B", "--orphan": "orphan"}
BRANCH_FLAGS = {"--detach": "detach", "-t": "track", "--track": "track", "--no-track": "no_track",
                "--guess": "guess", "--no-guess": "no_guess",
                "--recurse-submodules": "recurse", "--no-recurse-submodules": "no_recurse"}

CLONE_USAGE = """\
usage: git parallel-clone [<options>] <repository> [<directory>]

    -j, --jobs <n>        number of helper processes (default: checkout.workers; auto)
    --threshold <n>       fewer items than this are written sequentially
    -b, --branch <name>   check out <name> instead of the remote's HEAD
    --filter <spec>       a partial clone: blob:none, blob:limit=<n>[kmg], tree:0
    -o, --origin <name>   use <name> instead of 'origin' for the remote
    --depth <n>           a shallow clone of that many commits (file:// and remote URLs)
    --[no-]single-branch  clone only one branch (implied by --depth)
    -n, --no-checkout     no checkout of HEAD
    --sparse              a sparse checkout of the top-level files only (cone mode)
    -q, --quiet           no progress, no messages
    --progress / --no-progress
    --helper-cmd <cmd>    run <cmd> as the helper
    -v, --verbose         print a JSON report of what was done
"""


class _Usage(Exception):
    pass


class _Done(Exception):
    """An option that did all there is to do (--version): exit 0."""


def _parse_common(argv: list[str], usage: str, extra_flags: dict[str, str], extra_values: dict[str, str]):
    """A small getopt for our two commands (git's parse-options conventions)."""
    opts: dict[str, object] = {}
    rest: list[str] = []
    after_dd: list[str] | None = None
    values = {"-j": "jobs", "--jobs": "jobs", "--threshold": "threshold", "--helper-cmd": "helper_cmd",
              **extra_values}
    flags = {"-q": "quiet", "--quiet": "quiet", "--progress": "progress", "--no-progress": "no_progress",
             "-v": "verbose", "--verbose": "verbose", **extra_flags}
    it = iter(argv)
    for arg in it:
        if arg == "--":
            after_dd = list(it)
            break
        if arg == "--help":
            open_manual(usage)  # returns only when there is no git to ask
        if arg in ("-h", "--help"):
            sys.stdout.write(usage)
            raise _Usage()
        if arg == "--version":
            sys.stdout.write(version_line())
            raise _Done()
        key, eq, val = arg.partition("=")
        if key in values:
            if not eq:
                val = next(it, None)
                if val is None:
                    sys.stderr.write(f"error: {'switch' if key[1] != '-' else 'option'} `{key.lstrip('-')}' "
                                     "requires a value\n")
                    raise _Usage()
            opts[values[key]] = val
        elif arg.startswith("-j") and len(arg) > 2 and "jobs" in values.values():
            opts["jobs"] = arg[2:]
        elif arg[:2] in ("-b", "-B") and len(arg) > 2 and arg[:2] in values:
            opts[values[arg[:2]]] = arg[2:]  # -bname, as parse-options takes it
        elif key == "--track" and eq and "--track" in flags:
            if val not in ("direct", "inherit"):
                sys.stderr.write('error: option `--track\' expects "direct" or "inherit"\n')
                raise _Usage()
            opts["track"] = val
        elif arg in flags:
            opts[flags[arg]] = True
        elif arg.startswith("-") and arg != "-":
            sys.stderr.write(f"error: unknown option `{arg.lstrip('-')}'\n{usage}")
            raise _Usage()
        else:
            rest.append(arg)
    for k in ("jobs", "threshold"):
        if k in opts:
            if k == "jobs" and str(opts[k]).strip().lower() == "auto":
                opts[k] = "auto"  # checkout.workers=auto's choice (autoworkers.py)
                continue
            try:
                opts[k] = int(opts[k])
            except ValueError:
                sys.stderr.write(f"error: option `{k}' expects a numerical value\n")
                raise _Usage() from None
    return opts, rest, after_dd


def _split_command(cmd: str) -> list[str]:
    import shlex  # (only for --helper-cmd)

    return shlex.split(cmd)


def _options(opts, env):
    from .checkout import CheckoutOptions
    from .config import online_cpus
    from .progress import default_delay

    return CheckoutOptions(
        workers=opts.get("jobs"),
        threshold=opts.get("threshold"),
        force=bool(opts.get("force")),
        quiet=bool(opts.get("quiet")),
        progress=True if opts.get("progress") else (False if opts.get("no_progress") else None),
        helper_cmd=_split_command(opts["helper_cmd"]) if opts.get("helper_cmd") else None,
        test_workers=env.get("GIT_TEST_CHECKOUT_WORKERS"),
        online_cpus=online_cpus(),
        progress_delay=default_delay(env.get("GIT_PROGRESS_DELAY")),
        recurse_submodules=True if opts.get("recurse") else (False if opts.get("no_recurse") else None),
        columns=int(env["COLUMNS"]) if env.get("COLUMNS", "").isdigit() and int(env["COLUMNS"]) > 0 else None,
    )


def _trace(env):
    from .trace2 import Trace2

    return Trace2.from_env(env)


def _run_coordinated(fn) -> int:
    """Map the coordinator's exceptions to git's messages and exit codes."""
    import signal

    from .attributes import AttributeValueError
    from .checkout import CheckoutError
    from .config import ConfigError
    from .errors import CloneError
    from .index import IndexLockedError, IndexWriteError
    from .index_file import IndexFormatError
    from .objects import CorruptObject
    from .odb import NotAGitRepository
    from .plan import PlanError
    from .repository import RevisionError

    # SIGTERM and SIGHUP (a closed terminal) end us like Ctrl-C does:
    # through the cleanup paths (helpers reaped, index.lock removed), never
    # by a bare exit.
    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    try:
        return fn() or 0
    except PlanError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    except (IndexLockedError, IndexWriteError) as e:
        return _die(str(e))
    except (NotAGitRepository, ConfigError, CloneError, AttributeValueError, CorruptObject) as e:
        if getattr(e, "error", None):  # git's error() line before its death (a bad `-c`)
            sys.stderr.write(f"error: {e.error}\n")
        return _die(str(e), getattr(e, "code", 128))
    except RevisionError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    except IndexFormatError as e:
        sys.stderr.write(f"{e}\n")
        return e.code
    except CheckoutError as e:
        if str(e):
            sys.stderr.write(f"{e}\n")
        return e.code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: the index and HEAD were left as they were\n")
        return 130
    except OSError as e:
        name = os.fsdecode(e.filename) if isinstance(e.filename, bytes) else e.filename
        where = f" '{name}'" if name else ""  # (a path, never the repr of bytes)
        return _die(f"{e.strerror or e}{where}")


def _change_dirs(argv: list[str]) -> list[str] | int:
    """Leading ``-C <path>`` options (git's): each one a chdir, relative to the last."""
    while argv and (argv[0] == "-C" or (argv[0].startswith("-C") and len(argv[0]) > 2)):
        if argv[0] == "-C":
            if len(argv) < 2:
                sys.stderr.write("error: no directory given for -C\n")
                return 129
            path, argv = argv[1], argv[2:]
        else:
            path, argv = argv[0][2:], argv[1:]
        if path:
            try:
                os.chdir(path)
            except OSError as e:
                return _die(f"cannot change to '{path}': {e.strerror}")
    return argv


def checkout_main(argv: list[str] | None = None) -> int:
    """``git parallel-checkout``."""
    argv = _change_dirs(sys.argv[1:] if argv is None else argv)
    if isinstance(argv, int):
        return argv
    try:
        opts, rest, pathspec = _parse_common(
            argv, CHECKOUT_USAGE, {"-f": "force", "--force": "force", "--all": "all", "-a": "all",
                                   "-u": "index", "--index": "index",
                                   "--ignore-other-worktrees": "ignore_other_worktrees", **BRANCH_FLAGS},
            {"--prefix": "prefix", **BRANCH_VALUES},
        )
    except _Usage:
        return 129
    except _Done:
        return 0
    env = dict(os.environ)
    bad = _choose_inflater(env)
    if bad:
        return _die(bad)

    def run():
        from .checkout import run_checkout_all
        from .discovery import setup_env
        from .repository import Repository

        repo = Repository.open(os.getcwd(), env, setup=setup_env(env))
        if repo.worktree is None:
            repo.close()
            return _die("this operation must be run in a work tree")
        trace = _trace(env)
        try:
            o = _options(opts, env)
            o.ignore_other_worktrees = bool(opts.get("ignore_other_worktrees"))
            if opts.get("all"):
                if rest or pathspec:
                    sys.stderr.write(f"fatal: --all takes no paths\n{CHECKOUT_USAGE}")
                    return 129
                report = run_checkout_all(repo, o, opts.get("prefix"), trace=trace,
                                          update_index=bool(opts.get("index")))
            else:
                return _checkout_args(repo, opts, rest, pathspec, o, env, trace)
            _print_report(opts, report)
        finally:
            trace.close()
            repo.close()
        return 0

    return _run_coordinated(run)


def _branch_options(opts):
    from .revision import BranchOptions

    track = opts.get("track")
    return BranchOptions(
        new_branch=opts.get("b") or opts.get("B") or opts.get("orphan"),
        force=bool(opts.get("B")), orphan=bool(opts.get("orphan")), detach=bool(opts.get("detach")),
        track="no" if opts.get("no_track") else ("direct" if track is True else track),
        guess=False if opts.get("no_guess") else (True if opts.get("guess") else None),
    )


def _checkout_args(repo, opts, rest, pathspec, o, env, trace) -> int:
    """``git checkout [<branch options>] [<rev>] [--] [<pathspec>...]``:
    the arguments as builtin/checkout.c reads them (revision.py), then a
    path restore or a switch, then post-checkout."""
    from .checkout import run_checkout, run_checkout_paths
    from .revision import (
        RevisionError,
        check_branch_options,
        find_unique_abbrev,
        parse_checkout_args,
        switch_unborn_to_new_branch,
        validate_new_branch,
    )

    if sum(1 for k in ("b", "B", "orphan") if opts.get(k)) > 1:
        return _die("options '-b', '-B', and '--orphan' cannot be used together")
    bo = _branch_options(opts)
    args = rest + (["--", *pathspec] if pathspec is not None else [])
    try:
        t = parse_checkout_args(repo, args, bo, os.getcwd(), o.quiet, sys.stderr)
        check_branch_options(bo, t)
        if bo.new_branch is not None and t.pathspec is None:
            bo.exists = validate_new_branch(repo, bo.new_branch, bo.force or False)
    except RevisionError as e:
        code = getattr(e, "code", 1)
        sys.stderr.write(f"{'fatal' if code == 128 else 'error'}: {e}\n")
        return code
    if t.pathspec is not None:
        prefix = (repo.dirs.prefix or "").rstrip("/") or "."
        report = run_checkout_paths(repo, t.source, t.pathspec, prefix, o, trace=trace)
        _print_report(opts, report)
        if t.count_paths:
            n = report.written
            where = find_unique_abbrev(repo, t.source) if t.source else "the index"
            sys.stderr.write(f"Updated {n} path{'s' if n != 1 else ''} from {where}\n")
        head = repo.head_commit()
        return _post_checkout(repo, env, head, head, "paths", trace=trace)
    old = repo.head_commit()
    if t.commit is None and old is None and bo.new_branch is not None and not bo.detach:
        switch_unborn_to_new_branch(repo, bo, o.quiet, sys.stderr)
        return 0
    try:
        report = run_checkout(repo, None, o, trace=trace, target=t, branch_opts=bo)
    except RevisionError as e:  # create_branch's die(), after the work tree as in git
        if getattr(e, "code", 1) != 128:
            raise
        return _die(str(e))
    _print_report(opts, report)
    return _post_checkout(repo, env, old, repo.head_commit(), "switch", trace=trace)


def _git_prefix(repo) -> str:
    """``GIT_PREFIX`` as setup_git_directory exports it: the starting
    directory below the top, with a trailing slash; empty at the top."""
    cwd, top = os.getcwd(), repo.worktree
    if not top:
        return ""
    rel = os.path.relpath(cwd, top)
    return "" if rel == "." or rel.startswith("..") else rel + "/"


def _post_checkout(repo, env, old, new, kind: str, clone: bool = False, trace=None) -> int:
    """Run post-checkout (hooks.py); the command's exit code from its status."""
    from .hooks import exit_code, post_checkout

    status = post_checkout(repo, old, new, kind != "paths", environ=env,
                           prefix=None if clone else _git_prefix(repo), clone=clone, trace=trace)
    return exit_code(kind, status)


def _print_report(opts, report) -> None:
    """``-v``: the checkout's report as one JSON line on stdout."""
    if opts.get("verbose"):
        from .record import json_bytes

        sys.stdout.write(json_bytes(report).decode() + "\n")


def _clone_progress(opts) -> bool:
    """Whether a clone's fetch shows progress: ``--progress``, or stderr is a
    terminal and neither ``-q`` nor ``--no-progress`` was said (``transport.c``)."""
    if opts.get("progress"):
        return True
    return not opts.get("quiet") and not opts.get("no_progress") and sys.stderr.isatty()


def clone_main(argv: list[str] | None = None) -> int:
    """``git parallel-clone``."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts, rest, after = _parse_common(
            argv, CLONE_USAGE,
            {"--single-branch": "single_branch", "--no-single-branch": "no_single_branch",
             "-n": "no_checkout", "--no-checkout": "no_checkout", "--sparse": "sparse"},
            {"-b": "branch", "--branch": "branch", "--depth": "depth", "-o": "origin", "--origin": "origin",
             "--filter": "filter"})
    except _Usage:
        return 129
    except _Done:
        return 0
    if opts.get("filter") is not None:
        from .promisor import expand_filter

        try:
            expand_filter(opts["filter"])
        except ValueError as e:
            return _die(str(e))
        given = [f for f, key in (("--depth", "depth"), ("--origin", "origin"), ("--single-branch", "single_branch"),
                                  ("--no-single-branch", "no_single_branch")) if key in opts]
        if given:  # a partial clone takes every branch's history under the filter, into 'origin'
            return _die(f"--filter with {given[0]} is not supported by git parallel-clone")
    depth = None
    if "depth" in opts:
        text = str(opts["depth"])
        if not text.strip().lstrip("-").isdigit() or int(text) < 1:
            return _die(f"depth {text} is not a positive number")
        depth = int(text)
    single_branch = True if opts.get("single_branch") else (False if opts.get("no_single_branch") else None)
    origin_name = str(opts.get("origin") or "origin")
    rest += after or []
    if not 1 <= len(rest) <= 2:
        sys.stderr.write(CLONE_USAGE)
        return 129
    env = dict(os.environ)
    bad = _choose_inflater(env)
    if bad:
        return _die(bad)

    def run():
        from .checkout import run_checkout
        from .clone import prepare_clone
        from .discovery import SetupEnv, discover
        from .repository import Repository

        source = rest[0]

        def announce(directory: str) -> None:
            if not opts.get("quiet"):
                sys.stderr.write(f"Cloning into '{directory}'...\n")

        def warn(message: str) -> None:
            sys.stderr.write(f"warning: {message}\n")

        worktree, ref = prepare_clone(source, rest[1] if len(rest) > 1 else None, opts.get("branch"),
                                      announce=announce, filter_spec=opts.get("filter"),
                                      err=None if opts.get("quiet") else sys.stderr,
                                      progress=_clone_progress(opts), environ=env,
                                      depth=depth, single_branch=single_branch, origin=origin_name, warn=warn,
                                      done=None if opts.get("quiet") else lambda: sys.stderr.write("done.\n"),
                                      no_checkout=bool(opts.get("no_checkout")))
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        from .config import read_config
        from .templates import copy_templates, template_dir

        copy_templates(os.path.join(worktree, ".git"),
                       template_dir(env.get("GIT_TEMPLATE_DIR"), read_config(None, env)))
        if opts.get("sparse"):
            from .sparse import init_clone_sparse_checkout

            init_clone_sparse_checkout(os.path.join(worktree, ".git"))
        repo = Repository(discover(worktree, env=SetupEnv(environ=env)), env)
        trace = _trace(env)
        try:
            if ref is None:
                return 0  # (prepare_clone said why)
            origin = os.path.abspath(source) if os.path.exists(source) else source
            if opts.get("no_checkout"):
                # --no-checkout: HEAD set up as clone's update_head does, no index.
                commit, branch, _ = repo.resolve(ref)
                repo.update_head(commit, branch, f"clone: from {origin}".encode(), clone=True)
                return 0
            o = _options(opts, env)
            # clone: verbose_update = !quiet, whatever --progress or a terminal say
            o.progress = not o.quiet
            report = run_checkout(repo, ref, o, trace=trace, clone=origin)
            _print_report(opts, report)
            return _post_checkout(repo, env, None, repo.head_commit(), "clone", clone=True, trace=trace)
        finally:
            trace.close()
            repo.close()
        return 0

    return _run_coordinated(run)

