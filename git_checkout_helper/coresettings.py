"""The ``core.*`` settings that change how the work tree is written and
compared: ``core.symlinks``, ``core.fileMode``, ``core.checkStat``,
``core.trustctime`` and ``core.preloadIndex``.

Mirrors the globals of git's ``environment.c`` (``has_symlinks``,
``trust_executable_bit``, ``check_stat``, ``trust_ctime``,
``core_preload_index``) as
``git_default_core_config`` (config.c) sets them, and where they are used:

* ``has_symlinks`` (``core.symlinks``, default true): false makes
  ``write_entry`` (entry.c) write a symlink blob as a regular file holding
  the link's target, and ``ce_match_stat_basic`` (read-cache.c) accept a
  regular file for a symlink entry (its content is then compared with the
  blob: ``ce_compare_data``).
* ``trust_executable_bit`` (``core.fileMode``, default true): false ignores
  the owner's x bit when comparing a file with its index entry.
* ``check_stat`` (``core.checkStat``: ``default`` or ``minimal``): minimal
  compares only the mtime seconds and the size (``match_stat_data``).
* ``trust_ctime`` (``core.trustctime``, default true): false ignores ctime.
* ``core_preload_index`` (``core.preloadIndex``, default true): false makes
  a switch refresh the index without preloading it first (:mod:`preload`).
* ``ignore_case`` (``core.ignoreCase``, default false): true makes ignore
  rules, sparse-checkout patterns and attributes match case-insensitively
  (``fspathncmp``, ``WM_CASEFOLD``: :mod:`wildmatch`).

Every git command reads them (``git_default_config``), so a bad boolean is
fatal before anything is touched, as in git; an unknown ``core.checkStat``
is ignored, as git 2.39 ignores it.
"""

from __future__ import annotations

from .config import _get, git_config_bool
from .record import Record

__all__ = ["CoreSettings", "DEFAULT_CORE", "core_settings"]


class CoreSettings(Record, frozen=True):
    """The settings (git's defaults)."""

    symlinks: bool = True
    filemode: bool = True
    check_stat: bool = True
    trust_ctime: bool = True
    preload_index: bool = True
    ignore_case: bool = False


DEFAULT_CORE = CoreSettings()


def core_settings(config) -> CoreSettings:
    """Read the settings from a (stacked) config as git_default_core_config."""

    def boolean(name: bytes, default: bool) -> bool:
        raw = _get(config, b"core", name)
        return default if raw is None else git_config_bool("core." + name.decode(), raw)

    # config.c (2.39): "default" or "minimal", any case; another value is
    # ignored without a word, so the last valid one in git's reading order
    # (system, global, repository, then -c) wins.
    check_stat = True
    for raw in _values_in_git_order(config, b"core", b"checkstat"):
        v = (raw or b"").lower()
        if v == b"default":
            check_stat = True
        elif v == b"minimal":
            check_stat = False
    return CoreSettings(
        symlinks=boolean(b"symlinks", True),
        filemode=boolean(b"filemode", True),
        check_stat=check_stat,
        trust_ctime=boolean(b"trustctime", True),
        preload_index=boolean(b"preloadindex", True),
        ignore_case=ignore_case(config),
    )


def ignore_case(config) -> bool:
    """``core.ignoreCase`` (default false): ignore rules, sparse-checkout
    patterns and attributes then match case-insensitively (:mod:`wildmatch`)."""
    raw = _get(config, b"core", b"ignorecase")
    return False if raw is None else git_config_bool("core.ignorecase", raw)


def _values_in_git_order(config, section: bytes, name: bytes) -> list[bytes]:
    """Every value of ``section.name``, in the order git reads them (the
    stacked config's backends are kept highest priority first)."""
    backends = getattr(config, "backends", None)
    if backends is None:
        raw = _get(config, section, name)
        return [] if raw is None else [raw]
    out: list[bytes] = []
    for backend in reversed(backends):
        try:
            out.extend(backend.get_multivar((section,), name))
        except KeyError:
            pass
    return out
