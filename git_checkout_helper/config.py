"""Settings, read as git reads them.

Mirrors ``config.c`` for where values come from (system, global, the
repository, then the command line: ``GIT_CONFIG_COUNT`` and
``GIT_CONFIG_PARAMETERS``, i.e. ``git -c``, which win), its
``git_config_from_parameters`` (with ``parse_config_env_list``,
``git_config_parse_parameter``, ``git_config_parse_key`` and their
messages) for the command line, and ``parallel-checkout.c:
get_parallel_checkout_configs`` for the worker count and threshold. Files are
parsed by :mod:`configfile` (git's parser; dulwich's is not imported on this
path: it cost every checkout ~20 ms of start-up).

Nothing here looks at ``os.environ``: callers pass the environment in, so the
CLI layer stays the only reader of the process environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from .configfile import ConfigFile, ConfigParseError, StackedConfig, read_config_file, split_key
from .convert import EolConfig
from .parse import git_parse_maybe_bool

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:  # (discovery reads the global config for safe.directory: only a type here)
    from .discovery import GitDirs

__all__ = [
    "AUTO_WORKERS",
    "DEFAULT_NUM_WORKERS",
    "DEFAULT_THRESHOLD_FOR_PARALLELISM",
    "ConfigError",
    "eol_config",
    "is_auto",
    "parallel_checkout_configs",
    "parse_config_parameters",
    "read_config",
    "threshold_setting",
]

DEFAULT_THRESHOLD_FOR_PARALLELISM = 100
DEFAULT_NUM_WORKERS = 1
#: ``checkout.workers=auto``: chosen per checkout by :mod:`autoworkers`.
AUTO_WORKERS = "auto"

CONFIG_DATA_ENVIRONMENT = "GIT_CONFIG_PARAMETERS"
CONFIG_COUNT_ENVIRONMENT = "GIT_CONFIG_COUNT"
#: What git dies with after any error in the command-line config.
CMDLINE_CONFIG_FATAL = "unable to parse command-line config"
_INT_MAX = (1 << 31) - 1
_ULONG_MAX = (1 << 64) - 1


class ConfigError(Exception):
    """A bad setting; the message names it and its value. ``error``, when
    set, is the line git prints (``error: ...``) before its ``fatal:`` one."""

    def __init__(self, message: str, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


def _cmdline_error(message: str) -> ConfigError:
    """git's ``error()`` in the command-line config, then its death."""
    return ConfigError(CMDLINE_CONFIG_FATAL, error=message)


def _isspace(c: str) -> bool:
    """git's ``isspace``."""
    return c in " \t\n\r"


def _iskeychar(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


def git_config_parse_key(key: str) -> str:
    """``git_config_parse_key``: the key with its section and variable name
    lowercased (the subsection as it is), or git's error."""
    last_dot = key.rfind(".")
    if last_dot <= 0:
        raise _cmdline_error(f"key does not contain a section: {key}")
    if last_dot == len(key) - 1:
        raise _cmdline_error(f"key does not contain variable name: {key}")
    first_dot = key.find(".")
    section, middle, name = key[:first_dot], key[first_dot:last_dot + 1], key[last_dot + 1:]
    # (checked from left to right, as git does: the first fault is the one named)
    if not all(_iskeychar(c) for c in section):
        raise _cmdline_error(f"invalid key: {key}")
    if "\n" in middle:
        raise _cmdline_error(f"invalid key (newline): {key}")
    if not all(_iskeychar(c) for c in name) or not (name[0].isascii() and name[0].isalpha()):
        raise _cmdline_error(f"invalid key: {key}")
    return section.lower() + middle + name.lower()


def _config_parse_pair(key: str, value: str | None) -> tuple[str, str | None]:
    """``config_parse_pair``."""
    if not key:
        raise _cmdline_error("empty config key")
    return git_config_parse_key(key), value


def _sq_dequote_step(text: str, i: int) -> tuple[str | None, int | None]:
    """``sq_dequote_step``: the '...' token at ``i`` (``'\\''`` and ``'\\!'``
    standing for the character), and where the rest starts (None at the
    end); (None, None) when there is no such token."""
    if i >= len(text) or text[i] != "'":
        return None, None
    out = []
    i += 1
    while True:
        j = text.find("'", i)
        if j == -1:
            return None, None
        out.append(text[i:j])
        i = j + 1
        if i == len(text):
            return "".join(out), None
        if text[i] == "\\" and text[i + 1:i + 2] in ("'", "!") and text[i + 2:i + 3] == "'":
            out.append(text[i + 1])
            i += 3
            continue
        return "".join(out), i


def _git_config_parse_parameter(text: str) -> tuple[str, str | None]:
    """``git_config_parse_parameter``: an old-style ``key=value`` token (a
    key alone is a variable without ``=``)."""
    key, eq, value = text.partition("=")
    key = key.strip(" \t\n\r")
    if not key:
        raise _cmdline_error(f"bogus config parameter: {text}")
    return _config_parse_pair(key, value if eq else None)


def _new_style_value(text: str, i: int) -> tuple[str | None, int | None]:
    """The value of a new-style ``'key'='value'`` pair, after its ``=``."""
    bogus = _cmdline_error(f"bogus format in {CONFIG_DATA_ENVIRONMENT}")
    if i < len(text) and text[i] == "'":
        value, nxt = _sq_dequote_step(text, i)
        if value is None or (nxt is not None and not _isspace(text[nxt])):
            raise bogus
        return value, nxt
    if i >= len(text) or _isspace(text[i]):
        return None, (i if i < len(text) else None)  # an implicit bool: 'key'=
    raise bogus


def parse_config_parameters(text: str) -> list[tuple[str, str | None]]:
    """``parse_config_env_list``: (key, value) of ``GIT_CONFIG_PARAMETERS``,
    both the ``'k=v'`` and the ``'k'='v'`` forms, keys as
    :func:`git_config_parse_key` gives them; git's error as a ConfigError."""
    out: list[tuple[str, str | None]] = []
    cur: int | None = 0
    while cur is not None and cur < len(text):
        key, cur = _sq_dequote_step(text, cur)
        if key is None:
            raise _cmdline_error(f"bogus format in {CONFIG_DATA_ENVIRONMENT}")
        if cur is None or _isspace(text[cur]):
            out.append(_git_config_parse_parameter(key))
        elif text[cur] == "=":
            value, cur = _new_style_value(text, cur + 1)
            out.append(_config_parse_pair(key, value))
        else:
            raise _cmdline_error(f"bogus format in {CONFIG_DATA_ENVIRONMENT}")
        while cur is not None and cur < len(text) and _isspace(text[cur]):
            cur += 1
    return out


_STRTOUL = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")


def _strtoul(text: str) -> tuple[int, str]:
    """C's ``strtoul(text, &end, 10)``: the number and what follows it."""
    m = _STRTOUL.match(text)
    if m is None:
        return 0, text
    digits = m.group(2).lstrip("0")
    n = int(digits or "0") if len(digits) <= 20 else _ULONG_MAX + 1  # (int() refuses huge strings)
    if n > _ULONG_MAX:
        n = _ULONG_MAX
    elif m.group(1) == "-":
        n = -n & _ULONG_MAX
    return n, text[m.end():]


def _config_count_pairs(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The ``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_KEY_<n>`` /
    ``GIT_CONFIG_VALUE_<n>`` settings (git_config_from_parameters)."""
    raw = environ.get(CONFIG_COUNT_ENVIRONMENT)
    if raw is None:
        return []
    count, rest = _strtoul(raw)
    if rest:
        raise _cmdline_error(f"bogus count in {CONFIG_COUNT_ENVIRONMENT}")
    if count > _INT_MAX:
        raise _cmdline_error(f"too many entries in {CONFIG_COUNT_ENVIRONMENT}")
    out = []
    for i in range(count):
        key = environ.get(f"GIT_CONFIG_KEY_{i}")
        if key is None:
            raise _cmdline_error(f"missing config key GIT_CONFIG_KEY_{i}")
        value = environ.get(f"GIT_CONFIG_VALUE_{i}")
        if value is None:
            raise _cmdline_error(f"missing config value GIT_CONFIG_VALUE_{i}")
        out.append(_config_parse_pair(key, value))
    return out


def _params_config(environ: Mapping[str, str]) -> ConfigFile | None:
    """``git_config_from_parameters``: the command line's settings as one
    config, ``GIT_CONFIG_COUNT``'s first, then ``GIT_CONFIG_PARAMETERS``'
    (read last, they win); None when there are none."""
    pairs = _config_count_pairs(environ)
    text = environ.get(CONFIG_DATA_ENVIRONMENT)
    if text:
        pairs += parse_config_parameters(text)
    if not pairs:
        return None
    cf = ConfigFile()
    for key, value in pairs:
        section, name = split_key(os.fsencode(key))
        cf.add(section, name, None if value is None else os.fsencode(value))
    return cf


def read_config(dirs: GitDirs | None, environ: Mapping[str, str]) -> StackedConfig:
    """The config stack git would see: the command line first, then the
    worktree's config, the repository's, global, system."""
    backends: list[ConfigFile] = []
    params = _params_config(environ)
    if params is not None:
        backends.append(params)
    if dirs is not None:
        wt_config = getattr(dirs, "worktree_config_path", None)  # extensions.worktreeConfig
        if wt_config:
            _append_file(backends, wt_config)
        _append_file(backends, dirs.config_path)
    for path in _global_config_paths(environ):
        _append_file(backends, path)
    return StackedConfig(backends)


def _append_file(backends: list[ConfigFile], path: str) -> None:
    try:
        backends.append(read_config_file(path))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        pass
    except ConfigParseError as e:
        raise ConfigError(str(e)) from None
    except ValueError as e:  # dulwich's verdict on a file with includes
        raise ConfigError(f"bad config file: {path}: {e}") from None


def _global_config_paths(environ: Mapping[str, str]) -> list[str]:
    """Global then system config files, most important first (config.c)."""
    paths = []
    if "GIT_CONFIG_GLOBAL" in environ:
        paths.append(environ["GIT_CONFIG_GLOBAL"])
    else:
        home = environ.get("HOME")
        if home:
            paths.append(os.path.join(home, ".gitconfig"))
        xdg = environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
        if xdg:
            paths.append(os.path.join(xdg, "git", "config"))
    if "GIT_CONFIG_SYSTEM" in environ:
        paths.append(environ["GIT_CONFIG_SYSTEM"])
    elif not environ.get("GIT_CONFIG_NOSYSTEM"):
        paths.append("/etc/gitconfig")
    return [p for p in paths if p]


def _get(config, section: bytes, name: bytes) -> bytes | None:
    return get_exact(config, (section,), name)


def get_exact(config, section: tuple[bytes, ...], name: bytes) -> bytes | None:
    """``section.name`` from the highest-priority file that has it, or None
    (a name missing from ``[section "sub"]`` is missing: no fallback to
    ``[section]``, which git never makes)."""
    try:
        return config.get(section, name)
    except KeyError:
        return None


def git_config_bool(key: str, value: bytes | None) -> bool:
    """``git_config_bool``: a bad value is fatal."""
    b = git_parse_maybe_bool(value)
    if b is None:
        raise ConfigError(f"bad boolean config value '{value.decode()}' for '{key}'")
    return b


def eol_config(config) -> EolConfig:
    """``core.autocrlf`` and ``core.eol`` (environment.c / config.c)."""
    raw = _get(config, b"core", b"autocrlf")
    if raw is not None and raw.strip().lower() == b"input":
        autocrlf = "input"
    else:
        autocrlf = "true" if raw is not None and git_config_bool("core.autocrlf", raw) else "false"
    eol_raw = _get(config, b"core", b"eol")
    eol = None
    if eol_raw is not None:
        v = eol_raw.strip().lower()
        if v in (b"lf", b"crlf", b"native"):
            eol = v.decode()
        # Anything else is EOL_UNSET for git, without a word (config.c).
    return EolConfig(autocrlf, eol)


def git_config_int(key: str, value: bytes | None) -> int:
    """``git_config_int``: decimal with optional k/m/g suffix."""
    if value is None:
        raise ConfigError(f"bad numeric config value '' for '{key}': invalid unit")
    v = value.strip().lower()
    mult = 1
    if v[-1:] in (b"k", b"m", b"g"):
        mult = {b"k": 1 << 10, b"m": 1 << 20, b"g": 1 << 30}[v[-1:]]
        v = v[:-1]
    try:
        return int(v, 0 if v.startswith((b"0x", b"-0x")) else 10) * mult
    except ValueError:
        raise ConfigError(f"bad numeric config value '{value.decode()}' for '{key}': invalid unit") from None


def online_cpus() -> int:
    """git's ``online_cpus``: the processors online (``_SC_NPROCESSORS_ONLN``),
    not this process's affinity mask."""
    try:
        n = os.sysconf("SC_NPROCESSORS_ONLN")
    except (ValueError, OSError, AttributeError):
        n = 0
    return n if n > 0 else (os.cpu_count() or 1)


def parallel_checkout_configs(
    config, test_workers: str | None, online_cpus: int
) -> tuple[int | str, int]:
    """``get_parallel_checkout_configs``: (workers, threshold); workers is
    :data:`AUTO_WORKERS` for ``checkout.workers=auto``.

    ``test_workers`` is ``GIT_TEST_CHECKOUT_WORKERS``: when non-empty it
    overrides the config and drops the threshold to 0.
    """
    if test_workers:
        # strtol_i(s, 10): leading blanks and a sign, then digits to the end,
        # within an int; Python's int() would also take "2 ", "2_0" or "２".
        m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", test_workers)
        n = int(m.group(1)) if m else None
        if n is None or not -(1 << 31) <= n < 1 << 31:
            raise ConfigError(
                f"invalid value for 'GIT_TEST_CHECKOUT_WORKERS': '{test_workers}'"
            )
        return (n if n >= 1 else online_cpus), 0
    raw = _get(config, b"checkout", b"workers")
    workers: int | str
    if is_auto(raw):
        workers = AUTO_WORKERS
    else:
        workers = DEFAULT_NUM_WORKERS if raw is None else git_config_int("checkout.workers", raw)
        if workers < 1:
            workers = online_cpus
    explicit = threshold_setting(config)
    threshold = DEFAULT_THRESHOLD_FOR_PARALLELISM if explicit is None else explicit
    return workers, threshold


def is_auto(value: bytes | str | None) -> bool:
    """``checkout.workers=auto`` / ``-j auto`` (any case): our extension, see
    :mod:`autoworkers`. git's ``git_config_int`` rejects the word, so a
    repository using it is ours alone; ``GIT_TEST_CHECKOUT_WORKERS`` stays
    numeric, as in git."""
    if value is None:
        return False
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return value.strip().lower() == AUTO_WORKERS


def threshold_setting(config) -> int | None:
    """An explicit ``checkout.thresholdForParallelism``, or None when unset
    (git's default then; ``auto`` has its own per filesystem)."""
    raw = _get(config, b"checkout", b"thresholdforparallelism")
    return None if raw is None else git_config_int("checkout.thresholdForParallelism", raw)


#: ``checkout.distribution``: how the queue is handed to our own helpers.
DISTRIBUTIONS = ("dynamic", "static")


def distribution_setting(config) -> str:
    """``checkout.distribution`` (ours): ``dynamic`` (the default: work
    sharing in shrinking chunks, workers.Chunker) or ``static`` (git's one
    contiguous batch per worker). Helpers named by ``--helper-cmd`` always
    get the static split, whatever this says: they may be git's worker."""
    raw = _get(config, b"checkout", b"distribution")
    if raw is None:
        return "dynamic"
    value = raw.strip().lower().decode("latin-1")
    if value not in DISTRIBUTIONS:
        raise ConfigError(f"bad checkout.distribution value '{raw.decode('utf-8', 'replace')}' "
                          f"(dynamic or static)")
    return value


def _count_setting(config, name: str, least: int) -> int | None:
    """A setting of ours that counts something, at least ``least``; None when unset."""
    section, _, key = name.lower().partition(".")
    raw = _get(config, section.encode(), key.encode())
    if raw is None:
        return None
    n = git_config_int(name, raw)
    if n < least:
        bound = "0 or more" if least == 0 else f"at least {least}"
        raise ConfigError(f"bad {name} value '{raw.decode('utf-8', 'replace')}' ({bound})")
    return n


def helper_threads_setting(config) -> int | None:
    """``checkout.helperThreads`` (ours): I/O threads in each of our helpers
    (``git checkout--helper --threads K``); None when unset."""
    return _count_setting(config, "checkout.helperThreads", 1)


def coordinator_threads_setting(config) -> int | None:
    """``checkout.coordinatorThreads`` (ours): how many of the coordinator's
    own lstat and unlink requests are in flight at once (:mod:`iopool`);
    0 or 1: one at a time, as git; None when unset (chosen from the
    filesystem)."""
    return _count_setting(config, "checkout.coordinatorThreads", 0)


def submodule_jobs_setting(config, cpus: int) -> int:
    """``checkout.submoduleJobs`` (ours): how many submodules a recursive
    checkout moves at once, beside the superproject's own helpers; 0 means
    one per processor. Unset: 1, one after another as git moves them."""
    n = _count_setting(config, "checkout.submoduleJobs", 0)
    return 1 if n is None else n or cpus
