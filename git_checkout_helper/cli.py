"""Command-line entry points; the only module that reads the environment.

* ``git-checkout--helper``: the helper process (``builtin/checkout--worker.c``).
* ``git-parallel-checkout`` / ``git-parallel-clone``: the coordinator.

Everything below this layer takes its settings as parameters.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["helper_main"]

HELPER_USAGE = ("usage: git checkout--helper [--prefix=<string>] [--wire=git|rfc] [--threads=<k>]\n"
                "                           [--filters [--filter-ref=<ref>] [--filter-treeish=<oid>]]")


def _die(msg: str, code: int = 128) -> int:
    sys.stderr.write(f"fatal: {msg}\n")
    sys.stderr.flush()
    return code


def _threads_arg(argv: list[str]) -> tuple[int, list[str]] | int:
    """``--threads=<k>`` (ours, ``checkout.helperThreads``): I/O threads
    writing each batch (helper.ThreadedWriter); the other arguments back."""
    threads, rest = 1, []
    it = iter(argv)
    for arg in it:
        if arg == "--threads" or arg.startswith("--threads="):
            value = arg[len("--threads="):] if "=" in arg else next(it, None)
            if value is None or not value.isdigit() or int(value) < 1:
                return _die(f"--threads expects a positive number, not '{value or ''}'", 129)
            threads = int(value)
        else:
            rest.append(arg)
    return threads, rest


def _helper_args(argv: list[str]) -> tuple[str | None, str, dict | None] | int:
    """``--filters`` (ours, not git's worker's): items may name a
    ``filter.<driver>`` after their path (wire.GIT_FILTERS_LAYOUT) whose
    smudge this helper runs itself; the drivers are read from the
    repository's config (``git -c`` ones arrive in GIT_CONFIG_PARAMETERS).
    ``--filter-ref``/``--filter-treeish``: the checkout's metadata that a
    process filter is told (git's ``ref=``/``treeish=``). Returns (prefix,
    wire, None or the filter settings)."""
    prefix = None
    wire = "git"
    filters: dict | None = None
    meta: dict[str, bytes] = {}
    it = iter(argv)
    for arg in it:
        if arg == "--filters":
            filters = {}
            continue
        if arg.startswith(("--filter-ref=", "--filter-treeish=")):
            key, _, value = arg[2:].partition("=")
            meta[key[7:]] = os.fsencode(value)
            continue
        if arg.startswith("--prefix="):
            prefix = arg[len("--prefix=") :]
        elif arg == "--prefix":
            prefix = next(it, None)
            if prefix is None:
                return _die("option `prefix' requires a value", 129)
        elif arg.startswith("--wire="):
            wire = arg[len("--wire=") :]
            if wire not in ("git", "rfc"):
                return _die(f"--wire: unknown dialect '{wire}' (git or rfc)", 129)
        elif arg in ("-h", "--help"):
            sys.stdout.write(HELPER_USAGE + "\n")
            return 129
        else:
            sys.stderr.write(f"error: unknown option `{arg}'\n{HELPER_USAGE}\n")
            return 129
    if filters is not None and wire != "git":
        return _die("--filters needs --wire=git", 129)
    if meta and filters is None:
        return _die("--filter-ref and --filter-treeish need --filters", 129)
    if filters is not None:
        filters.update(meta)
    return prefix, wire, filters


def _sanitize_stdfds() -> None:
    """git's ``sanitize_stdfds``: a closed fd 0, 1 or 2 becomes /dev/null.

    Otherwise the first file the helper opens could land on fd 1, and the
    results would be written into it (a work-tree file, a trace file).
    """
    fd = os.open(os.devnull, os.O_RDWR)
    while fd < 2:
        fd = os.dup(fd)
    if fd > 2:
        os.close(fd)
    if sys.stdout is None:
        sys.stdout = open(1, "w", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False)


def _no_op(signum, frame) -> None:
    pass


def helper_main(argv: list[str] | None = None) -> int:
    """``git checkout--helper``: serve checkout items from stdin."""
    _sanitize_stdfds()
    threads = _threads_arg(sys.argv[1:] if argv is None else argv)
    if isinstance(threads, int):
        return threads
    threads, argv = threads
    parsed = _helper_args(argv)
    if isinstance(parsed, int):
        return parsed
    prefix, wire, filters = parsed
    env = os.environ
    # Set by git during --recurse-submodules; it must not leak into anything
    # repository-aware we run (see shared notes: pitfalls).
    env.pop("GIT_INTERNAL_SUPER_PREFIX", None)

    from dulwich.index import get_path_element_validator

    from .config import ConfigError, eol_config, read_config
    from .entry import CheckoutState
    from .helper import HelperTerminated, ProtocolError, raise_terminated, serve
    from .odb import NotAGitRepository, ObjectDatabase, discover, object_format_name
    from .trace2 import Trace2
    from .wire import GIT_FILTERS_LAYOUT, REQUEST_LAYOUTS, WireError, native_stat_layout

    trace = None
    runner = None
    died_of = 0
    stops: list[int] = []
    try:
        stat_layout = native_stat_layout()
        git_dir = env.get("GIT_DIR")
        dirs = discover(os.getcwd(), git_dir, env.get("GIT_WORK_TREE"))
        if not git_dir and dirs.worktree and dirs.worktree != os.getcwd():
            os.chdir(dirs.worktree)  # setup_git_directory: run at the top
        config = read_config(dirs, env)
        alternates = [p for p in env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES", "").split(":") if p]
        odb = ObjectDatabase(
            env.get("GIT_OBJECT_DIRECTORY") or dirs.objects,
            object_format_name(config),
            alternates,
        )
        trace = Trace2(env.get("GIT_TRACE2_EVENT"), env.get("GIT_TRACE2"), env.get("GIT_TRACE2_PARENT_SID"))
        state = CheckoutState(
            odb,
            base_dir=os.fsencode(prefix) if prefix else b"",
            eol=eol_config(config),  # read at start, as git_default_config: a bad value is fatal first
            trace=trace.data if trace.enabled else None,
            validate_element=get_path_element_validator(config),
        )
        if filters is not None:
            from .attributes import read_convert_drivers
            from .filters import FilterRunner

            # One runner for this process: a process filter is started on
            # its first path and never shared with another helper.
            state.drivers = read_convert_drivers(config)
            state.filters = runner = FilterRunner(os.getcwd(), ref=filters.get("ref"),
                                                  treeish=filters.get("treeish"))
        # The first signal wins: a second one (the coordinator's SIGTERM
        # after the terminal's SIGINT) must not interrupt the clean-up.
        stops = [signal.SIGTERM, signal.SIGHUP]
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            stops.append(signal.SIGINT)

        def terminated(signum, frame):
            for sig in stops:
                signal.signal(sig, _no_op)  # (not SIG_IGN: Python warns of a pending one)
            raise_terminated(signum, frame)

        for sig in stops:
            signal.signal(sig, terminated)
        serve(0, 1, state, GIT_FILTERS_LAYOUT if filters is not None else REQUEST_LAYOUTS[wire], stat_layout, odb.hash_algo,
              threads)
    except (ProtocolError, NotAGitRepository, ConfigError, WireError) as e:
        return _die(str(e))
    except BrokenPipeError:
        return _die("checkout helper: the coordinator closed the pipe")
    except OSError as e:  # the pipes themselves (EBADF, EIO) or the repository
        where = f": '{os.fsdecode(e.filename)}'" if isinstance(e.filename, (str, bytes)) else ""
        return _die(f"checkout helper: {e.strerror or e}{where}")
    except KeyboardInterrupt:
        return 130
    except HelperTerminated as e:
        died_of = e.signum  # the item in progress was removed on the way out
    except Exception as e:  # never a traceback: one line, and a non-zero exit
        msg = " ".join(str(e).split())
        return _die(f"checkout helper: internal error: {type(e).__name__}: {msg}")
    finally:
        for sig in stops:  # done or dying: a late signal changes nothing now
            signal.signal(sig, _no_op)
        if runner is not None:
            runner.close(terminate=died_of != 0)  # process filters: end of input, then reaped
        if trace is not None:
            trace.close()
    if died_of:
        # Like git's sigchain: clean up, then die of the same signal.
        signal.signal(died_of, signal.SIG_DFL)
        os.kill(os.getpid(), died_of)
        return 128 + died_of
    return 0


CHECKOUT_USAGE = """\
usage: git parallel-checkout [<options>] <branch|commit>
   or: git parallel-checkout [<options>] --all [--prefix=<dir>/]
   or: git parallel-checkout [<options>] [<tree-ish>] -- <pathspec>...

    -j, --jobs <n>        number of helper processes (default: checkout.workers; 0 = one per CPU;
                          auto = chosen from the filesystem, CPUs and items)
    --threshold <n>       fewer items than this are written sequentially
                          (default: checkout.thresholdForParallelism)
    -f, --force           throw away local changes; overwrite untracked files
    -q, --quiet           no progress, no messages
    --progress            show progress even when stderr is not a terminal
    --no-progress         never show progress
    --helper-cmd <cmd>    run <cmd> as the helper (e.g. 'git checkout--worker')
    -v, --verbose         print a JSON report of what was done
"""

CLONE_USAGE = """\
usage: git parallel-clone [<options>] <repository> [<directory>]

    -j, --jobs <n>        number of helper processes (default: checkout.workers; auto)
    --threshold <n>       fewer items than this are written sequentially
    -b, --branch <name>   check out <name> instead of the remote's HEAD
    -q, --quiet           no progress, no messages
    --progress / --no-progress
    --helper-cmd <cmd>    run <cmd> as the helper
    -v, --verbose         print a JSON report of what was done
"""


class _Usage(Exception):
    pass


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
        if arg in ("-h", "--help"):
            sys.stdout.write(usage)
            raise _Usage()
        key, eq, val = arg.partition("=")
        if key in values:
            if not eq:
                val = next(it, None)
                if val is None:
                    sys.stderr.write(f"error: option `{key.lstrip('-')}' requires a value\n{usage}")
                    raise _Usage()
            opts[values[key]] = val
        elif arg.startswith("-j") and len(arg) > 2 and "jobs" in values.values():
            opts["jobs"] = arg[2:]
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


def _options(opts, env):
    import shlex

    from .checkout import CheckoutOptions
    from .config import online_cpus

    return CheckoutOptions(
        workers=opts.get("jobs"),
        threshold=opts.get("threshold"),
        force=bool(opts.get("force")),
        quiet=bool(opts.get("quiet")),
        progress=True if opts.get("progress") else (False if opts.get("no_progress") else None),
        helper_cmd=shlex.split(opts["helper_cmd"]) if opts.get("helper_cmd") else None,
        test_workers=env.get("GIT_TEST_CHECKOUT_WORKERS"),
        online_cpus=online_cpus(),
    )


def _trace(env):
    from .trace2 import Trace2

    return Trace2(env.get("GIT_TRACE2_EVENT"), env.get("GIT_TRACE2"), env.get("GIT_TRACE2_PARENT_SID"))


def _run_coordinated(fn) -> int:
    """Map the coordinator's exceptions to git's messages and exit codes."""
    import signal

    from .attributes import AttributeValueError
    from .checkout import CheckoutError
    from .clone import CloneError
    from .config import ConfigError
    from .index import IndexLockedError, IndexWriteError
    from .index_file import IndexFormatError
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
    except (NotAGitRepository, ConfigError, CloneError, AttributeValueError) as e:
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


def checkout_main(argv: list[str] | None = None) -> int:
    """``git parallel-checkout``."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts, rest, pathspec = _parse_common(
            argv, CHECKOUT_USAGE, {"-f": "force", "--force": "force", "--all": "all", "-a": "all"},
            {"--prefix": "prefix"},
        )
    except _Usage:
        return 129
    env = dict(os.environ)

    def run():
        from .checkout import run_checkout, run_checkout_all, run_checkout_paths
        from .repository import Repository

        repo = Repository.open(os.getcwd(), env, env.get("GIT_DIR"))
        if env.get("GIT_WORK_TREE"):
            repo.worktree = os.path.abspath(env["GIT_WORK_TREE"])
        trace = _trace(env)
        try:
            o = _options(opts, env)
            if opts.get("all"):
                if rest or pathspec:
                    sys.stderr.write(f"fatal: --all takes no paths\n{CHECKOUT_USAGE}")
                    return 129
                report = run_checkout_all(repo, o, opts.get("prefix"), trace=trace)
            elif pathspec is not None:
                if len(rest) > 1:
                    sys.stderr.write(f"fatal: only one tree-ish before '--'\n{CHECKOUT_USAGE}")
                    return 129
                prefix = os.path.relpath(os.getcwd(), repo.worktree) if repo.worktree else "."
                report = run_checkout_paths(repo, rest[0] if rest else None, pathspec, prefix, o, trace=trace)
            else:
                if len(rest) != 1:
                    sys.stderr.write(CHECKOUT_USAGE)
                    return 129
                report = run_checkout(repo, rest[0], o, trace=trace)
            _print_report(opts, report)
        finally:
            trace.close()
            repo.close()
        return 0

    return _run_coordinated(run)


def _print_report(opts, report) -> None:
    """``-v``: the checkout's report as one JSON line on stdout."""
    if opts.get("verbose"):
        import msgspec

        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")


def clone_main(argv: list[str] | None = None) -> int:
    """``git parallel-clone``."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts, rest, after = _parse_common(argv, CLONE_USAGE, {}, {"-b": "branch", "--branch": "branch"})
    except _Usage:
        return 129
    rest += after or []
    if not 1 <= len(rest) <= 2:
        sys.stderr.write(CLONE_USAGE)
        return 129
    env = dict(os.environ)

    def run():
        from .checkout import run_checkout
        from .clone import prepare_clone
        from .odb import discover
        from .repository import Repository

        source = rest[0]

        def announce(directory: str) -> None:
            if not opts.get("quiet"):
                sys.stderr.write(f"Cloning into '{directory}'...\n")

        worktree, ref = prepare_clone(source, rest[1] if len(rest) > 1 else None, opts.get("branch"),
                                      announce=announce)
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        repo = Repository(discover(worktree), env)
        trace = _trace(env)
        try:
            if ref is None:
                sys.stderr.write("warning: You appear to have cloned an empty repository.\n")
                return 0
            origin = os.path.abspath(source) if os.path.exists(source) else source
            o = _options(opts, env)
            if o.quiet:
                o.progress = False  # clone: verbose_update = !quiet, whatever --progress says
            report = run_checkout(repo, ref, o, trace=trace, clone=origin)
            _print_report(opts, report)
        finally:
            trace.close()
            repo.close()
        return 0

    return _run_coordinated(run)

