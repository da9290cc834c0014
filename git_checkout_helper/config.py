"""Settings, read as git reads them.

Mirrors ``config.c`` for where values come from (system, global, the
repository, then ``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_PARAMETERS``, i.e. ``git
-c``, which win) and ``parallel-checkout.c:get_parallel_checkout_configs``
for the worker count and threshold. Files are parsed by dulwich's
``ConfigFile``; the two environment forms of ``-c`` are parsed here because
dulwich only knows ``GIT_CONFIG_COUNT``.

Nothing here looks at ``os.environ``: callers pass the environment in, so the
CLI layer stays the only reader of the process environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from dulwich.config import ConfigFile, StackedConfig, env_config

from .convert import EolConfig
from .parse import git_parse_maybe_bool

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


class ConfigError(Exception):
    """A bad setting; the message names it and its value."""


def _sq_token(text: str, i: int) -> tuple[str, int]:
    """``sq_dequote_step``: one '...' token, with '\\'' standing for a quote."""
    if i >= len(text) or text[i] != "'":
        raise ConfigError(f"bogus format in GIT_CONFIG_PARAMETERS: {text!r}")
    out = []
    i += 1
    while True:
        j = text.find("'", i)
        if j == -1:
            raise ConfigError(f"bogus format in GIT_CONFIG_PARAMETERS: {text!r}")
        out.append(text[i:j])
        i = j + 1
        if text.startswith("\\''", i):
            out.append("'")
            i += 3
            continue
        return "".join(out), i


def parse_config_parameters(text: str) -> list[tuple[str, str | None]]:
    """Parse ``GIT_CONFIG_PARAMETERS`` (both ``'k=v'`` and ``'k'='v'`` forms)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    n = len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return out
        tok, i = _sq_token(text, i)
        if i < n and text[i] == "=":
            i += 1
            if i < n and text[i] == "'":
                value, i = _sq_token(text, i)
                out.append((tok, value))
            else:
                out.append((tok, None))
        else:
            key, eq, value = tok.partition("=")
            out.append((key, value if eq else None))


def _split_key(key: str) -> tuple[tuple[bytes, ...], bytes]:
    first, last = key.find("."), key.rfind(".")
    if first <= 0 or last == len(key) - 1:
        raise ConfigError(f"invalid config key: {key}")
    section = key[:first].lower().encode()
    name = key[last + 1 :].lower().encode()
    if first == last:
        return (section,), name
    return (section, key[first + 1 : last].encode()), name


def _params_config(environ: Mapping[str, str]) -> ConfigFile | None:
    text = environ.get("GIT_CONFIG_PARAMETERS")
    if not text:
        return None
    cf = ConfigFile()
    for key, value in parse_config_parameters(text):
        section, name = _split_key(key)
        cf.set(section, name, b"true" if value is None else value.encode())
    return cf


def read_config(dirs: GitDirs | None, environ: Mapping[str, str]) -> StackedConfig:
    """The config stack git would see: ``-c`` first, then repo, global, system."""
    backends: list[ConfigFile] = []
    params = _params_config(environ)
    if params is not None:
        backends.append(params)
    try:
        counted = env_config(environ)
    except (KeyError, ValueError) as e:
        raise ConfigError(str(e).strip("'\"")) from None
    if counted is not None:
        backends.append(counted)
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
        backends.append(ConfigFile.from_path(path))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        pass


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
    try:
        return config.get((section,), name)
    except KeyError:
        return None


def get_exact(config, section: tuple[bytes, ...], name: bytes) -> bytes | None:
    """``section.name`` from the highest-priority file that has exactly that
    section: dulwich's ``get`` falls back from ``submodule.<name>.active`` to
    ``submodule.active``, which git never does."""
    for backend in getattr(config, "backends", [config]):
        try:
            return backend[section][name]
        except KeyError:
            continue
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


def helper_threads_setting(config) -> int | None:
    """``checkout.helperThreads`` (ours): I/O threads in each of our helpers
    (``git checkout--helper --threads K``); None when unset."""
    raw = _get(config, b"checkout", b"helperthreads")
    if raw is None:
        return None
    n = git_config_int("checkout.helperThreads", raw)
    if n < 1:
        raise ConfigError(f"bad checkout.helperThreads value '{raw.decode('utf-8', 'replace')}' (at least 1)")
    return n


def submodule_jobs_setting(config, cpus: int) -> int:
    """``checkout.submoduleJobs`` (ours): how many submodules a recursive
    checkout moves at once, beside the superproject's own helpers; 0 means
    one per processor. Unset: 1, one after another as git moves them."""
    raw = _get(config, b"checkout", b"submodulejobs")
    if raw is None:
        return 1
    n = git_config_int("checkout.submoduleJobs", raw)
    if n < 0:
        raise ConfigError(f"bad checkout.submoduleJobs value '{raw.decode('utf-8', 'replace')}' (0 or more)")
    return n or cpus
