"""Finding the repository, as git's ``setup.c`` does.

One discovery for the coordinator and the helper alike:

* :func:`discover` is ``setup_git_directory``: an explicit git dir
  (``GIT_DIR``, ``setup_explicit_git_dir``) or a walk up from the current
  directory (``setup_git_directory_gently_1``) through ``.git`` directories,
  ``gitdir:`` files and bare repositories, stopping at
  ``GIT_CEILING_DIRECTORIES`` and at a filesystem boundary; then the work tree
  (``GIT_WORK_TREE``, ``core.worktree`` relative to the git dir, ``core.bare``)
  and the prefix (where the command was started, relative to the top).
* Linked worktrees: a git dir with a ``commondir`` file (``get_common_dir``)
  shares objects, refs and config with the main one; HEAD, the index,
  ``logs/HEAD`` and ``info/sparse-checkout`` are its own (``path.c``'s
  ``common_list``; see :meth:`GitDirs.git_path`). ``GIT_COMMON_DIR``,
  ``GIT_INDEX_FILE``, ``GIT_OBJECT_DIRECTORY`` and
  ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` are honoured as in ``environment.c``.
* The refusals git makes before it reads any repository config that could
  name a program: dubious ownership (``ensure_valid_ownership``, with
  ``safe.directory`` read from the protected config only: system, global
  and command line), ``safe.bareRepository=explicit``, and the repository
  format (``check_repository_format_gently``: version above 1, unknown
  extensions, v1-only extensions in a version 0 repository).
* ``extensions.worktreeConfig``: ``core.bare``/``core.worktree`` read from
  the worktree's ``config.worktree`` (and :attr:`GitDirs.worktree_config_path`
  for the config stack).

The list of a repository's worktrees and the branch-checked-out-elsewhere
check are :mod:`worktree` (git's ``worktree.c``).

Nothing here reads the process environment: the CLI layer hands every
``GIT_*`` value in as a parameter (:class:`SetupEnv`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping

from .configfile import ConfigParseError, read_config_file
from .hash_algo import HASH_ALGOS
from .parse import git_parse_maybe_bool

__all__ = [
    "BadRepositoryFormat",
    "DubiousOwnership",
    "GitDirs",
    "NotAGitRepository",
    "RepositoryFormat",
    "SetupEnv",
    "discover",
    "is_git_directory",
    "read_gitfile",
    "setup_env",
    "sq_quote_pretty",
]

#: ``GIT_REPO_VERSION_READ``: the highest core.repositoryformatversion git reads.
REPO_VERSION_READ = 1


class NotAGitRepository(Exception):
    """Discovery failed; the message is git's (without ``fatal: ``)."""

    code = 128


class DubiousOwnership(NotAGitRepository):
    """``die_upon_dubious_ownership``: the repository belongs to someone else."""


class BadRepositoryFormat(NotAGitRepository):
    """``verify_repository_format``: a version or extension we must not touch."""


class SetupEnv:
    """The environment values discovery depends on, read by the CLI layer.

    ``environ`` is the mapping the config stack is read with (``HOME``,
    ``GIT_CONFIG_*``) for the protected config (``safe.*``).
    """

    __slots__ = ("git_dir", "work_tree", "common_dir", "index_file", "object_directory", "alternates",
                 "ceiling_directories", "across_filesystem", "implicit_work_tree", "sudo_uid",
                 "assume_different_owner", "environ")

    def __init__(self, git_dir: str | None = None, work_tree: str | None = None,
                 common_dir: str | None = None, index_file: str | None = None,
                 object_directory: str | None = None, alternates: list[str] | None = None,
                 ceiling_directories: str | None = None, across_filesystem: bool = False,
                 implicit_work_tree: bool = True, sudo_uid: str | None = None,
                 assume_different_owner: bool = False, environ: Mapping[str, str] | None = None) -> None:
        self.git_dir = git_dir or None
        self.work_tree = work_tree or None
        self.common_dir = common_dir or None
        self.index_file = index_file or None
        self.object_directory = object_directory or None
        self.alternates = list(alternates or [])
        self.ceiling_directories = ceiling_directories
        self.across_filesystem = across_filesystem
        self.implicit_work_tree = implicit_work_tree
        self.sudo_uid = sudo_uid
        self.assume_different_owner = assume_different_owner
        self.environ = dict(environ or {})


def _env_bool(value: str | None, default: bool) -> bool:
    """``git_env_bool``."""
    if value is None:
        return default
    v = value.strip().lower()
    if v in ("true", "yes", "on"):
        return True
    if v in ("false", "no", "off", ""):
        return False
    try:
        return int(v) != 0
    except ValueError:
        return default


def setup_env(environ: Mapping[str, str]) -> SetupEnv:
    """A :class:`SetupEnv` from an environment mapping (the CLI passes its own)."""
    alternates = [p for p in environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES", "").split(":") if p]
    return SetupEnv(
        git_dir=environ.get("GIT_DIR"),
        work_tree=environ.get("GIT_WORK_TREE"),
        common_dir=environ.get("GIT_COMMON_DIR"),
        index_file=environ.get("GIT_INDEX_FILE"),
        object_directory=environ.get("GIT_OBJECT_DIRECTORY"),
        alternates=alternates,
        ceiling_directories=environ.get("GIT_CEILING_DIRECTORIES"),
        across_filesystem=_env_bool(environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM"), False),
        implicit_work_tree=_env_bool(environ.get("GIT_IMPLICIT_WORK_TREE"), True),
        sudo_uid=environ.get("SUDO_UID"),
        assume_different_owner=_env_bool(environ.get("GIT_TEST_ASSUME_DIFFERENT_OWNER"), False),
        environ=environ,
    )


class RepositoryFormat:
    """``struct repository_format``: what ``check_repo_format`` reads from a config."""

    __slots__ = ("version", "is_bare", "work_tree", "worktree_config", "object_format",
                 "unknown_extensions", "v1_only_extensions", "partial_clone")

    def __init__(self) -> None:
        self.version = -1
        self.is_bare: bool | None = None
        self.work_tree: str | None = None
        self.worktree_config = False
        self.object_format = "sha1"
        self.unknown_extensions: list[str] = []
        self.v1_only_extensions: list[str] = []
        self.partial_clone: str | None = None

    def verify(self) -> str | None:
        """``verify_repository_format``: git's message, or None when fine."""
        if self.version > REPO_VERSION_READ:
            return f"Expected git repo version <= {REPO_VERSION_READ}, found {self.version}"
        if self.version >= 1 and self.unknown_extensions:
            head = ("unknown repository extension found:" if len(self.unknown_extensions) == 1
                    else "unknown repository extensions found:")
            return head + "".join(f"\n\t{e}" for e in self.unknown_extensions)
        if self.version == 0 and self.v1_only_extensions:
            head = ("repo version is 0, but v1-only extension found:" if len(self.v1_only_extensions) == 1
                    else "repo version is 0, but v1-only extensions found:")
            return head + "".join(f"\n\t{e}" for e in self.v1_only_extensions)
        return None


def _config_items(path: str) -> list[tuple[str, bytes | None]] | None:
    """Every ``section[.sub].name`` = value of one config file, in file order,
    as git's config callbacks get them (value None for a variable without
    ``=``); None when there is no such file. Parsing only: nothing is run.
    A syntax error is git's ``bad config line N in file PATH``."""
    try:
        cf = read_config_file(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None
    except ConfigParseError as e:
        raise NotAGitRepository(str(e)) from None
    except ValueError as e:  # dulwich's verdict on a file with includes
        raise NotAGitRepository(f"bad config file: {path}: {e}") from None
    return [(key.decode("utf-8", "replace"), value) for key, value in cf.entries()]


def _bool(key: str, value: bytes | None) -> bool:
    b = git_parse_maybe_bool(value)
    if b is None:
        raise NotAGitRepository(f"bad boolean config value '{value.decode('utf-8', 'replace')}' "
                                f"for '{key}'")
    return b


def _int(key: str, value: bytes | None) -> int:
    text = (value or b"").strip().decode("utf-8", "replace")
    try:
        return int(text)
    except ValueError:
        raise NotAGitRepository(f"bad numeric config value '{text}' for '{key}': invalid unit") from None


def _read_worktree_config(fmt: RepositoryFormat, key: str, value: bytes | None) -> None:
    """``read_worktree_config``: core.bare and core.worktree."""
    if key == "core.bare":
        fmt.is_bare = _bool(key, value)
    elif key == "core.worktree":
        if value is None:
            raise NotAGitRepository(f"missing value for '{key}'")
        fmt.work_tree = os.fsdecode(value)


_V0_EXTENSIONS = ("noop", "preciousobjects", "partialclone", "worktreeconfig")


def read_repository_format(config_path: str) -> RepositoryFormat:
    """``read_repository_format`` (``check_repo_format`` over one file)."""
    fmt = RepositoryFormat()
    for key, value in _config_items(config_path) or []:
        if key == "core.repositoryformatversion":
            fmt.version = _int(key, value)
        elif key.startswith("extensions."):
            ext = key[len("extensions."):]
            if ext in _V0_EXTENSIONS:
                if ext == "worktreeconfig":
                    fmt.worktree_config = _bool(key, value)
                elif ext == "partialclone":
                    fmt.partial_clone = os.fsdecode(value or b"")
                elif ext == "preciousobjects":
                    _bool(key, value)
            elif ext == "noop-v1":
                fmt.v1_only_extensions.append(ext)
            elif ext == "objectformat":
                if value is None:
                    raise NotAGitRepository(f"missing value for '{key}'")
                name = value.decode("utf-8", "replace").strip().lower()
                if name not in HASH_ALGOS:
                    raise NotAGitRepository(f"invalid value for 'extensions.objectformat': '{name}'")
                fmt.object_format = name
                fmt.v1_only_extensions.append(ext)
            else:
                fmt.unknown_extensions.append(ext)
        else:
            _read_worktree_config(fmt, key, value)
    if fmt.version == -1:
        return RepositoryFormat()  # no version: nothing else counts either
    return fmt


class GitDirs:
    """The directories of one repository, as discovery found them.

    ``gitdir`` is this worktree's git dir, ``commondir`` the shared one (the
    same directory outside linked worktrees), ``worktree`` the top of the
    work tree (None when bare), ``prefix`` where the command was started
    relative to that top (``"sub/dir/"``, ``""`` at the top, None outside it).
    """

    __slots__ = ("gitdir", "commondir", "worktree", "prefix", "gitfile", "index_file", "object_directory",
                 "alternates", "format", "bare")

    def __init__(self, gitdir: str, commondir: str, worktree: str | None, *, prefix: str | None = None,
                 gitfile: str | None = None, index_file: str | None = None,
                 object_directory: str | None = None, alternates: list[str] | None = None,
                 format: RepositoryFormat | None = None) -> None:
        self.gitdir = gitdir
        self.commondir = commondir
        self.worktree = worktree
        self.prefix = prefix
        self.gitfile = gitfile
        self.index_file = index_file
        self.object_directory = object_directory
        self.alternates = list(alternates or [])
        self.format = format or RepositoryFormat()
        self.bare = worktree is None

    def __repr__(self) -> str:
        return f"GitDirs({self.gitdir!r}, {self.commondir!r}, {self.worktree!r})"

    @property
    def objects(self) -> str:
        return self.object_directory or os.path.join(self.commondir, "objects")

    @property
    def config_path(self) -> str:
        return os.path.join(self.commondir, "config")

    @property
    def worktree_config_path(self) -> str | None:
        """``config.worktree`` of this worktree when extensions.worktreeConfig is on."""
        if not self.format.worktree_config:
            return None
        return os.path.join(self.gitdir, "config.worktree")

    @property
    def index_path(self) -> str:
        return self.index_file or os.path.join(self.gitdir, "index")

    @property
    def is_linked_worktree(self) -> bool:
        return os.path.normpath(self.gitdir) != os.path.normpath(self.commondir)

    def git_path(self, name: str) -> str:
        """``git_path``: a per-worktree file in the git dir, anything else in the
        common dir (``path.c``'s ``common_list``, the entries a checkout uses)."""
        if name in ("HEAD", "index", "logs/HEAD", "info/sparse-checkout", "ORIG_HEAD", "FETCH_HEAD",
                    "MERGE_HEAD", "REBASE_HEAD", "BISECT_START", "config.worktree"):
            return os.path.join(self.gitdir, name)
        if name.startswith(("rebase-merge", "rebase-apply", "refs/bisect", "refs/worktree", "refs/rewritten",
                            "logs/refs/bisect", "logs/refs/worktree", "logs/refs/rewritten")):
            return os.path.join(self.gitdir, name)
        return os.path.join(self.commondir, name)


def sq_quote_pretty(text: str) -> str:
    """``sq_quote_buf_pretty``: quoted for a shell only when it must be."""
    if not text:
        return "''"
    if all(c.isascii() and (c.isalnum() or c in "+,-./:=@_^") for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


# --- files ------------------------------------------------------------------

_GITFILE_STAT_FAILED = "stat"
_GITFILE_NOT_A_FILE = "not-a-file"


def read_gitfile(path: str, common_dir: str | None = None,
                 object_directory: str | None = None) -> tuple[str | None, str | None]:
    """``read_gitfile_gently``: (real path of the git dir a ``gitdir:`` file
    names, None) or (None, why not). ``why`` is ``"stat"``/``"not-a-file"``
    (not a gitfile at all, no error) or git's message for a broken one."""
    try:
        st = os.stat(path)
    except OSError:
        return None, _GITFILE_STAT_FAILED
    if not stat.S_ISREG(st.st_mode):
        return None, _GITFILE_NOT_A_FILE
    if st.st_size > 1 << 20:
        return None, f"too large to be a .git file: '{path}'"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, f"error opening '{path}': {e.strerror}"
    if not data.startswith(b"gitdir: "):
        return None, f"invalid gitfile format: {path}"
    data = data.rstrip(b"\r\n")
    if len(data) < 9:
        return None, f"no path in gitfile: {path}"
    target = os.fsdecode(data[8:])
    if not os.path.isabs(target) and "/" in path:
        target = path[: path.rindex("/") + 1] + target
    if not is_git_directory(target, common_dir, object_directory):
        return None, f"not a git repository: {target}"
    return os.path.realpath(target), None


def _validate_headref(path: str) -> bool:
    """``validate_headref``: HEAD is a symlink into refs/, ``ref: refs/...`` or an id."""
    try:
        if os.path.islink(path):
            return os.readlink(path).startswith("refs/")
        with open(path, "rb") as f:
            data = f.read(256)
    except OSError:
        return False
    if data.startswith(b"ref:"):
        return data[4:].lstrip(b" \t").startswith(b"refs/")
    head = data.rstrip(b"\r\n")
    return len(head) in (40, 64) and all(c in b"0123456789abcdefABCDEF" for c in head)


def get_common_dir(gitdir: str, common_dir: str | None = None) -> tuple[str, bool]:
    """``get_common_dir``: (common dir, whether it is not the git dir itself)."""
    if common_dir:
        return common_dir, True
    path = os.path.join(gitdir, "commondir")
    if not os.path.exists(path):
        return gitdir, False
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise NotAGitRepository(f"failed to read {path}: {e.strerror}") from None
    if not data:
        raise NotAGitRepository(f"failed to read {path}")
    rel = os.fsdecode(data.rstrip(b"\r\n"))
    return os.path.realpath(rel if os.path.isabs(rel) else os.path.join(gitdir, rel)), True


def is_git_directory(path: str, common_dir: str | None = None, object_directory: str | None = None) -> bool:
    """``is_git_directory``: a valid HEAD here, objects/ and refs/ in its common dir."""
    if not _validate_headref(os.path.join(path, "HEAD")):
        return False
    try:
        common, _ = get_common_dir(path, common_dir)
    except NotAGitRepository:
        return False
    objects = object_directory or os.path.join(common, "objects")
    return os.access(objects, os.X_OK) and os.access(os.path.join(common, "refs"), os.X_OK)


# --- ownership ----------------------------------------------------------------

def _owned_by_current_user(path: str, sudo_uid: str | None) -> bool:
    """``is_path_owned_by_current_uid``: lstat's owner is us; for root, a
    root-owned path or (under sudo) one owned by ``SUDO_UID``."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    euid = os.geteuid()
    if euid == 0:
        if st.st_uid == 0:
            return True
        if sudo_uid and sudo_uid.isdigit():
            euid = int(sudo_uid)
    return st.st_uid == euid


def protected_config(environ: Mapping[str, str]) -> list[tuple[str, bytes | None]]:
    """``git_protected_config``: system, global and command-line settings, in
    the order git reads them; never the repository's own config."""
    from .config import _global_config_paths, _params_config

    items: list[tuple[str, bytes | None]] = []
    for path in reversed(_global_config_paths(environ)):
        items.extend(_config_items(os.path.expanduser(path)) or [])
    # The command line's settings as read_config reads them (one parser,
    # git's checks and messages: git dies on a bad one here too).
    params = _params_config(environ)
    if params is not None:
        items.extend((key.decode("utf-8", "replace"), value) for key, value in params.entries())
    return items


def _interpolate_path(value: str, environ: Mapping[str, str]) -> str | None:
    """``interpolate_path`` for ``~``, ``~user`` (``%(prefix)/`` is not ours)."""
    if value.startswith("~"):
        user, slash, rest = value[1:].partition("/")
        if not user:
            home = environ.get("HOME")
            if not home:
                return None
            return home + slash + rest
        try:
            import pwd

            return pwd.getpwnam(user).pw_dir + slash + rest
        except KeyError:
            return None
    return value


def ensure_valid_ownership(gitfile: str | None, worktree: str | None, gitdir: str | None,
                           env: SetupEnv, protected: Callable[[], list] | None = None) -> bool:
    """``ensure_valid_ownership``: every path ours, or listed in ``safe.directory``."""
    if (not env.assume_different_owner
            and (not gitfile or _owned_by_current_user(gitfile, env.sudo_uid))
            and (not worktree or _owned_by_current_user(worktree, env.sudo_uid))
            and (not gitdir or _owned_by_current_user(gitdir, env.sudo_uid))):
        return True
    path = worktree if worktree else gitdir
    safe = False
    for key, value in (protected or (lambda: protected_config(env.environ)))():
        if key != "safe.directory":
            continue
        if not value:
            safe = False
            continue
        text = os.fsdecode(value)
        if text == "*":
            safe = True
            continue
        interpolated = _interpolate_path(text, env.environ)
        if interpolated is not None and interpolated == path:
            safe = True
    return safe


def _dubious(path: str) -> DubiousOwnership:
    return DubiousOwnership(
        f"detected dubious ownership in repository at '{path}'\n"
        "To add an exception for this directory, call:\n"
        "\n"
        f"\tgit config --global --add safe.directory {sq_quote_pretty(path)}")


def _allowed_bare_repo(env: SetupEnv) -> str:
    """``get_allowed_bare_repo``: safe.bareRepository from the protected config."""
    result = "all"
    for key, value in protected_config(env.environ):
        if key == "safe.barerepository":
            v = (value or b"").decode("utf-8", "replace")
            if v in ("explicit", "all"):
                result = v
            else:
                raise NotAGitRepository(f"bad config variable 'safe.bareRepository' value '{v}'")
    return result


# --- discovery ----------------------------------------------------------------

def _check_format(gitdir: str, env: SetupEnv) -> tuple[RepositoryFormat, bool]:
    """``check_repository_format_gently``: the format of the common config,
    refused as git refuses it; then core.bare/core.worktree, which count
    only outside linked worktrees or from config.worktree. Returns the
    format and whether those two settings apply."""
    common, has_common = get_common_dir(gitdir, env.common_dir)
    fmt = read_repository_format(os.path.join(common, "config"))
    if fmt.version < 0:
        return fmt, False
    err = fmt.verify()
    if err is not None:
        raise BadRepositoryFormat(err)
    if fmt.worktree_config:
        # extensions.worktreeConfig: core.bare and core.worktree from config.worktree (as well).
        for key, value in _config_items(os.path.join(gitdir, "config.worktree")) or []:
            _read_worktree_config(fmt, key, value)
        has_common = False
    return fmt, not has_common


def _abspath(path: str, base: str) -> str:
    return os.path.normpath(os.path.join(base, path))


def _finish(gitdir: str, worktree: str | None, cwd: str, env: SetupEnv, fmt: RepositoryFormat,
            gitfile: str | None = None) -> GitDirs:
    """The result: the prefix, and the environment's paths made absolute
    against the directory git would be in (the top of the work tree when it
    started inside it)."""
    prefix = None
    here = cwd
    if worktree is not None:
        if cwd == worktree:
            prefix = ""
        elif cwd.startswith(worktree.rstrip("/") + "/"):
            prefix = cwd[len(worktree.rstrip("/")) + 1:] + "/"
        if prefix is not None:
            here = worktree
    common, _ = get_common_dir(gitdir, env.common_dir and _abspath(env.common_dir, cwd))
    return GitDirs(
        gitdir, os.path.normpath(common), worktree, prefix=prefix, gitfile=gitfile,
        index_file=_abspath(env.index_file, here) if env.index_file else None,
        object_directory=_abspath(env.object_directory, here) if env.object_directory else None,
        alternates=[_abspath(a, here) for a in env.alternates],
        format=fmt,
    )


def _explicit(gitdirenv: str, cwd: str, env: SetupEnv, implicit_work_tree: bool,
              shown: str | None = None) -> GitDirs:
    """``setup_explicit_git_dir``."""
    path = _abspath(gitdirenv, cwd)
    common_dir = env.common_dir and _abspath(env.common_dir, cwd)
    objdir = env.object_directory and _abspath(env.object_directory, cwd)
    gitfile = None
    target, why = read_gitfile(path, common_dir, objdir)
    if target is not None:
        gitfile, path = path, target
    elif why not in (_GITFILE_STAT_FAILED, _GITFILE_NOT_A_FILE):
        raise NotAGitRepository(why)
    if not is_git_directory(path, common_dir, objdir):
        raise NotAGitRepository(f"not a git repository: '{shown or gitdirenv}'")
    fmt, applies = _check_format(path, _with_common(env, common_dir))
    bare = fmt.is_bare if applies else None
    work_tree_cfg = fmt.work_tree if applies else None
    if env.work_tree:
        worktree: str | None = _abspath(env.work_tree, cwd)
        if os.path.exists(worktree):
            worktree = os.path.realpath(worktree)  # set_git_work_tree: real_pathdup
    elif bare:
        worktree = None  # (core.bare and core.worktree: git warns; the bare side wins)
    elif work_tree_cfg:
        worktree = _abspath(work_tree_cfg, path)
        worktree = os.path.realpath(worktree) if os.path.isdir(worktree) else worktree
        if not os.path.isdir(worktree):
            raise NotAGitRepository(f"cannot chdir to '{work_tree_cfg}': No such file or directory")
    elif not implicit_work_tree:
        worktree = None
    else:
        worktree = cwd
    return _finish(path, worktree, cwd, _with_common(env, common_dir), fmt, gitfile)


def _with_common(env: SetupEnv, common_dir: str | None) -> SetupEnv:
    if common_dir == env.common_dir:
        return env
    out = SetupEnv.__new__(SetupEnv)
    for name in SetupEnv.__slots__:
        setattr(out, name, getattr(env, name))
    out.common_dir = common_dir
    return out


def _ceiling_offset(cwd: str, ceilings: str | None) -> int:
    """``longest_ancestor_length`` over ``GIT_CEILING_DIRECTORIES`` (canonicalized
    as ``canonicalize_ceiling_entry``: until an empty entry)."""
    if not ceilings or cwd == "/":
        return -1
    best = -1
    no_realpath = False
    for ceil in ceilings.split(":"):
        if not ceil:
            no_realpath = True
            continue
        if not os.path.isabs(ceil):
            continue
        if not no_realpath:
            ceil = os.path.realpath(ceil)
        n = len(ceil.rstrip("/"))
        if cwd.startswith(ceil[:n]) and cwd[n:n + 1] == "/" and cwd[n + 1:]:
            best = max(best, n)
    return best


def discover(cwd: str, git_dir: str | None = None, work_tree: str | None = None,
             env: SetupEnv | None = None) -> GitDirs:
    """``setup_git_directory`` from ``cwd``: an explicit git dir, else the walk up.

    ``git_dir``/``work_tree`` (kept for callers that have only these) win over
    the ones in ``env``. Raises :class:`NotAGitRepository` (or one of its
    kinds) with git's message; nothing is written, and no config but the
    repository format (and the protected ``safe.*`` settings) is read.
    """
    env = env or SetupEnv()
    if git_dir is not None or work_tree is not None:
        env = _with_common(env, env.common_dir)
        if git_dir is not None:
            env.git_dir = git_dir or None
        if work_tree is not None:
            env.work_tree = work_tree or None
    cwd = os.path.abspath(cwd)
    if env.git_dir:
        return _explicit(env.git_dir, cwd, env, env.implicit_work_tree)
    ceil = _ceiling_offset(cwd, env.ceiling_directories)
    common_dir = env.common_dir and _abspath(env.common_dir, cwd)
    objdir = env.object_directory and _abspath(env.object_directory, cwd)
    try:
        device = os.stat(cwd).st_dev
    except OSError as e:
        raise NotAGitRepository(f"failed to stat '{cwd}': {e.strerror}") from None
    d = cwd
    while True:
        dotgit = os.path.join(d, ".git")
        gitdir, why = read_gitfile(dotgit, common_dir, objdir)
        gitfile = None
        if gitdir is not None:
            gitfile = dotgit
        elif why in (_GITFILE_STAT_FAILED, _GITFILE_NOT_A_FILE):
            if is_git_directory(dotgit, common_dir, objdir):
                gitdir = dotgit
        else:
            raise NotAGitRepository(why)
        if gitdir is not None:
            if not ensure_valid_ownership(gitfile, d, gitdir, env):
                raise _dubious(d)
            return _discovered(gitdir, gitfile, d, cwd, env)
        if is_git_directory(d, common_dir, objdir):
            if _allowed_bare_repo(env) == "explicit":
                raise NotAGitRepository(f"cannot use bare repository '{d}' (safe.bareRepository is 'explicit')")
            if not ensure_valid_ownership(None, None, d, env):
                raise _dubious(d)
            return _bare(d, cwd, env)
        parent = os.path.dirname(d)
        # The parent is looked at only below the longest ceiling ("/" is offset 0).
        if parent == d or (len(parent) if parent != "/" else 0) <= ceil:
            raise NotAGitRepository("not a git repository (or any of the parent directories): .git")
        d = parent
        if not env.across_filesystem:
            try:
                dev = os.stat(d).st_dev
            except OSError as e:
                raise NotAGitRepository(f"failed to stat '{d}': {e.strerror}") from None
            if dev != device:
                raise NotAGitRepository(
                    f"not a git repository (or any parent up to mount point {d})\n"
                    "Stopping at filesystem boundary (GIT_DISCOVERY_ACROSS_FILESYSTEM not set).")


def _discovered(gitdir: str, gitfile: str | None, top: str, cwd: str, env: SetupEnv) -> GitDirs:
    """``setup_discovered_git_dir``."""
    fmt, applies = _check_format(gitdir, env)
    if env.work_tree or (applies and fmt.work_tree):
        return _explicit(gitdir, cwd, env, env.implicit_work_tree)
    if applies and fmt.is_bare:
        return _finish(gitdir, None, cwd, env, fmt, gitfile)
    return _finish(gitdir, top, cwd, env, fmt, gitfile)


def _bare(gitdir: str, cwd: str, env: SetupEnv) -> GitDirs:
    """``setup_bare_git_dir``: no implicit work tree from here on."""
    fmt, applies = _check_format(gitdir, env)
    if env.work_tree or (applies and fmt.work_tree):
        return _explicit(gitdir, cwd, env, False)
    return _finish(gitdir, None, cwd, env, fmt)
