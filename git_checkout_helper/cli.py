"""Command-line entry points; the only module that reads the environment.

* ``git-checkout--helper``: the helper process (``builtin/checkout--worker.c``).
* ``git-parallel-checkout`` / ``git-parallel-clone``: the coordinator.

Everything below this layer takes its settings as parameters.
"""

from __future__ import annotations

import os
import sys

__all__ = ["helper_main"]

HELPER_USAGE = "usage: git checkout--helper [--prefix=<string>] [--wire=git|rfc]"


def _die(msg: str, code: int = 128) -> int:
    sys.stderr.write(f"fatal: {msg}\n")
    sys.stderr.flush()
    return code


def _helper_args(argv: list[str]) -> tuple[str | None, str] | int:
    prefix = None
    wire = "git"
    it = iter(argv)
    for arg in it:
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
    return prefix, wire


def helper_main(argv: list[str] | None = None) -> int:
    """``git checkout--helper``: serve checkout items from stdin."""
    parsed = _helper_args(sys.argv[1:] if argv is None else argv)
    if isinstance(parsed, int):
        return parsed
    prefix, wire = parsed
    env = os.environ
    # Set by git during --recurse-submodules; it must not leak into anything
    # repository-aware we run (see shared notes: pitfalls).
    env.pop("GIT_INTERNAL_SUPER_PREFIX", None)

    from dulwich.index import get_path_element_validator

    from .config import ConfigError, eol_config, read_config
    from .entry import CheckoutState
    from .helper import ProtocolError, serve
    from .odb import NotAGitRepository, ObjectDatabase, discover, object_format_name
    from .trace2 import Trace2
    from .wire import REQUEST_LAYOUTS, WireError, native_stat_layout

    trace = None
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
            eol=lambda: eol_config(config),
            trace=trace.data if trace.enabled else None,
            validate_element=get_path_element_validator(config),
        )
        serve(0, 1, state, REQUEST_LAYOUTS[wire], stat_layout, odb.hash_algo)
    except (ProtocolError, NotAGitRepository, ConfigError, WireError) as e:
        return _die(str(e))
    except BrokenPipeError:
        return _die("checkout helper: the coordinator closed the pipe")
    except KeyboardInterrupt:
        return 130
    finally:
        if trace is not None:
            trace.close()
    return 0
