"""Revisions and the branch options of ``git checkout``, as git has them.

Mirrors:

* ``object-name.c:get_oid`` for the forms a checkout takes: full and
  abbreviated ids, ``@``/``HEAD``, refs by ``ref_rev_parse_rules``
  (``x``, ``refs/x``, ``refs/tags/x``, ``refs/heads/x``, ``refs/remotes/x``,
  ``refs/remotes/x/HEAD``), ``@{-N}`` (``interpret_nth_prior_checkout``, from
  HEAD's reflog), suffixes ``~N``, ``^N``, ``^{commit}``, ``^{tree}``,
  ``^{tag}``, ``^{}``, and ``<rev>:<path>``; other forms (``@{u}``, ``@{N}``,
  ``^{/text}``, ``A...B``) are refused before anything is touched.
* ``checkout.c:unique_tracking_name`` (``--guess``): the remote-tracking
  branch ``refs/heads/<name>`` maps to through each remote's fetch refspecs,
  ``checkout.defaultRemote`` breaking ties.
* ``builtin/checkout.c:parse_branchname_arg``: ``-`` is ``@{-1}``; the
  first argument is a revision, a DWIM'd new branch, or the first path;
  ``--`` after it makes it a revision for sure; a name that is both a file
  and a remote branch is refused (git's words), as is a revision that is
  also a file when paths follow.
* ``branch.c:create_branch`` / ``setup_tracking`` for ``-b``/``-B``/``-t``
  (reflog ``branch: Created from <start>``/``Reset to``, upstream config
  and git's "set up to track" line); ``checkout/switch.py``'s
  ``update_refs_for_switch`` calls them after the work tree.
"""

from __future__ import annotations

import os
import re

from .objects import Commit, Tag, Tree
from .record import Record
from .repository import Repository, RevisionError

__all__ = ["BranchOptions", "Target", "Unsupported", "get_oid", "parse_checkout_args", "unique_tracking_name"]

_HEX = re.compile(rb"[0-9a-f]{4,64}")


class Unsupported(RevisionError):
    """A revision form git knows but we do not: refused, nothing touched (128)."""

    code = 128


class Fatal(RevisionError):
    """git's ``die()`` during argument parsing: ``fatal: ...``, exit 128."""

    code = 128


class BranchOptions(Record, kw_only=True):
    """The branch options of ``git checkout`` (builtin/checkout.c's opts)."""

    new_branch: str | None = None  # -b / -B / --orphan / DWIM
    force: bool = False  # -B
    orphan: bool = False  # --orphan
    detach: bool = False  # --detach
    track: str | None = None  # None: unspecified; "direct", "inherit"; "no": --no-track
    guess: bool | None = None  # --guess / --no-guess; None: checkout.guess
    exists: bool = False  # the new branch exists already (-B): set by validate_new_branch


class Target(Record, kw_only=True):
    """What ``parse_checkout_args`` made of the command line."""

    #: The switch, when it is one: the commit (hex), None for HEAD.
    commit: bytes | None = None
    #: The name as git keeps it (``new_branch_info->name``), for the reflog and messages.
    name: str | None = None
    #: ``refs/heads/<x>`` when the argument names an existing branch.
    path: bytes | None = None
    #: Paths to restore (a restore when not None), and the tree (hex) to take them from.
    pathspec: list[str] | None = None
    source: bytes | None = None
    #: Whether git counts the restored paths ("Updated N paths from ...").
    count_paths: bool = False
    #: Remote-tracking ref a DWIM'd branch starts from.
    dwim_from: bytes | None = None


# --- revisions -------------------------------------------------------------


def _read_ref(repo: Repository, ref: bytes) -> bytes | None:
    try:
        return repo.refs[ref]
    except KeyError:
        return None


def dwim_ref(repo: Repository, name: str) -> tuple[bytes, bytes] | None:
    """``dwim_ref``: (full ref name, hex id) by ref_rev_parse_rules, first hit."""
    b = name.encode()
    if not b or b.endswith(b"/") or b".." in b:
        return None
    for ref in (b, b"refs/" + b, b"refs/tags/" + b, b"refs/heads/" + b, b"refs/remotes/" + b,
                b"refs/remotes/" + b + b"/HEAD"):
        if ref != b"HEAD" and not ref.startswith(b"refs/"):
            continue
        sha = _read_ref(repo, ref)
        if sha is not None:
            return ref, sha
    return None


def nth_prior_checkout(repo: Repository, n: int) -> str | None:
    """``interpret_nth_prior_checkout``: the branch (or id) left by the Nth
    last "checkout: moving from X to Y" in HEAD's reflog."""
    try:
        with open(os.path.join(repo.dirs.gitdir, "logs", "HEAD"), "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        _, _, msg = line.partition(b"\t")
        m = re.match(rb"checkout: moving from (.*) to (.*)$", msg)
        if m is None:
            continue
        n -= 1
        if n == 0:
            return m.group(1).decode("utf-8", "surrogateescape")
    return None


def _object(repo: Repository, sha: bytes):
    try:
        return repo.object(sha)
    except KeyError:
        return None


def _peel(repo: Repository, sha: bytes, want: type | None):
    """``peel_to_type``: follow tags (and commit -> tree) to ``want``; None: all tags."""
    obj = _object(repo, sha)
    while obj is not None:
        if want is not None and isinstance(obj, want):
            return obj.id
        if isinstance(obj, Tag):
            obj = _object(repo, obj.object[1])
        elif isinstance(obj, Commit) and want is Tree:
            obj = _object(repo, obj.tree)
        else:
            return obj.id if want is None else None
    return None


def _base(repo: Repository, name: str) -> bytes | None:
    """A name without suffixes: HEAD, @{-N}, a ref, a full or short id."""
    if name in ("HEAD", "@"):
        return _read_ref(repo, b"HEAD")
    m = re.fullmatch(r"@\{-(\d+)\}", name)
    if m is not None:
        prior = nth_prior_checkout(repo, int(m.group(1)))
        if prior is None:
            return None
        return _base(repo, prior)
    if "@{" in name:
        raise Unsupported(f"revision syntax not supported: '{name}'")
    found = dwim_ref(repo, name)
    if found is not None:
        return found[1]
    b = name.encode().lower()
    hexlen = repo.odb.git_hash_algo.hex_length
    if _HEX.fullmatch(b) and len(b) <= hexlen:
        if len(b) == hexlen:
            return b if _object(repo, b) is not None else None
        hits = list(repo._abbrev(b))
        if len(hits) > 1:
            commits = [h for h in hits if isinstance(_object(repo, h), Commit | Tag)]
            if len(commits) == 1:  # get_oid_mb wants a committish: the others do not count
                return commits[0]
            raise Fatal(f"short object ID {name} is ambiguous")
        return hits[0] if hits else None
    return None


_SUFFIX = re.compile(r"(\^\{[^}]*\}|~\d*|\^\d*)")


def get_oid(repo: Repository, text: str) -> bytes | None:
    """``get_oid`` for a checkout's argument: the object's hex id, or None
    when it names nothing. Raises :class:`Unsupported` for forms we do not do."""
    if "..." in text or (".." in text and not text.startswith("refs/")):
        if "..." in text:
            raise Unsupported(f"revision syntax not supported: '{text}'")
        return None
    colon = text.find(":")
    if colon > 0 and not text.startswith(":"):
        treeish = get_oid(repo, text[:colon])
        if treeish is None:
            return None
        tree = _peel(repo, treeish, Tree)
        return None if tree is None else _tree_path(repo, tree, text[colon + 1:])
    if text.startswith(":"):
        return None  # an index entry: a blob, never a commit or tree for checkout
    m = re.search(r"[~^]", text)
    base_name = text if m is None else text[: m.start()]
    rest = "" if m is None else text[m.start():]
    if m is not None and not base_name:
        return None
    sha = _base(repo, base_name)
    while sha is not None and rest:
        s = _SUFFIX.match(rest)
        if s is None:
            return None
        tok, rest = s.group(1), rest[s.end():]
        if tok.startswith("^{"):
            kind = tok[2:-1]
            if kind == "commit":
                sha = _peel(repo, sha, Commit)
            elif kind == "tree":
                sha = _peel(repo, sha, Tree)
            elif kind == "tag":
                sha = sha if isinstance(_object(repo, sha), Tag) else None
            elif kind == "":
                sha = _peel(repo, sha, None)
            elif kind == "object":
                pass
            else:
                raise Unsupported(f"revision syntax not supported: '{text}'")
            continue
        n = int(tok[1:]) if len(tok) > 1 else 1
        commit = _peel(repo, sha, Commit)
        if commit is None:
            return None
        if tok[0] == "~":
            for _ in range(n):
                parents = repo.object(commit).parents
                if not parents:
                    return None
                commit = parents[0]
            sha = commit
        elif n == 0:
            sha = commit
        else:
            parents = repo.object(commit).parents
            sha = parents[n - 1] if len(parents) >= n else None
    return sha


def _tree_path(repo: Repository, tree: bytes, path: str) -> bytes | None:
    """``<tree>:<path>``: the entry at ``path`` (the tree itself for an empty path)."""
    sha = tree
    for part in [p for p in path.split("/") if p]:
        obj = _object(repo, sha)
        if not isinstance(obj, Tree):
            return None
        try:
            _mode, sha = obj[part.encode()]
        except KeyError:
            return None
    return sha


def commit_of(repo: Repository, sha: bytes | None) -> bytes | None:
    return None if sha is None else _peel(repo, sha, Commit)


# --- remote-tracking branches ------------------------------------------------


def _remotes(repo: Repository) -> list[tuple[str, list[bytes]]]:
    """Each configured remote with its fetch refspecs, in config order."""
    out: list[tuple[str, list[bytes]]] = []
    seen = set()
    for backend in reversed(getattr(repo.config, "backends", [])):
        for section in backend.sections():
            if len(section) == 2 and section[0] == b"remote":
                name = section[1].decode("utf-8", "surrogateescape")
                if name in seen:
                    continue
                seen.add(name)
                try:
                    specs = list(repo.config.get_multivar(section, b"fetch"))
                except KeyError:
                    specs = []
                out.append((name, specs))
    return out


def _map_refspec(spec: bytes, src: bytes) -> bytes | None:
    """``remote_find_tracking`` for one fetch refspec: where ``src`` lands."""
    s, _, d = spec.lstrip(b"+").partition(b":")
    if not d:
        return None
    if b"*" in s:
        pre, _, post = s.partition(b"*")
        if src.startswith(pre) and src.endswith(post) and len(src) >= len(pre) + len(post):
            mid = src[len(pre): len(src) - len(post)]
            return d.replace(b"*", mid, 1)
        return None
    return d if s == src else None


def unique_tracking_name(repo: Repository, name: str) -> tuple[bytes | None, int]:
    """(the remote-tracking ref for ``name``, or None; how many remotes have it)."""
    src = b"refs/heads/" + name.encode()
    try:
        default_remote = repo.config.get((b"checkout",), b"defaultremote").decode()
    except KeyError:
        default_remote = None
    matches: list[tuple[str, bytes]] = []
    for remote, specs in _remotes(repo):
        for spec in specs:
            dst = _map_refspec(spec, src)
            if dst is not None and _read_ref(repo, dst) is not None:
                matches.append((remote, dst))
                break
    if len(matches) == 1:
        return matches[0][1], 1
    for remote, dst in matches:
        if remote == default_remote:
            return dst, len(matches)
    return None, len(matches)


def tracked_by(repo: Repository, ref: bytes) -> tuple[str, bytes] | None:
    """``find_tracked_branch``: (remote, its branch) whose fetch refspec maps to ``ref``."""
    for remote, specs in _remotes(repo):
        for spec in specs:
            s, _, d = spec.lstrip(b"+").partition(b":")
            if not d:
                continue
            src = _map_refspec(d + b":" + s, ref)  # the refspec read backwards
            if src is not None:
                return remote, src
    return None


# --- the command line ----------------------------------------------------------


def _no_wildcard(s: str) -> bool:
    return not any(c in s for c in "*?[\\")


def _is_file(cwd: str, path: str) -> bool:
    """``check_filename`` for a plain path: it exists (a symlink counts)."""
    return os.path.lexists(os.path.join(cwd, path))


AMBIGUOUS_REMOTE_ADVICE = (
    "hint: If you meant to check out a remote tracking branch on, e.g. 'origin',\n"
    "hint: you can do so by fully qualifying the name with the --track option:\n"
    "hint: \n"
    "hint:     git checkout --track origin/<name>\n"
    "hint: \n"
    "hint: If you'd like to always have checkouts of an ambiguous <name> prefer\n"
    "hint: one remote, e.g. the 'origin' remote, consider setting\n"
    "hint: checkout.defaultRemote=origin in your config.\n"
)


def _advice(repo: Repository, key: bytes) -> bool:
    try:
        return repo.config.get_boolean((b"advice",), key, True)
    except (KeyError, ValueError):
        return True


def _tracked_branch_name(args: list[str]) -> str:
    """checkout_main's ``--track`` without ``-b``: the branch name from the
    remote-tracking one the first argument names."""
    if not args or args[0] == "--":
        raise Fatal("--track needs a branch name")
    a = args[0]
    for p in ("refs/", "remotes/"):
        if a.startswith(p):
            a = a[len(p):]
    slash = a.find("/")
    if slash == -1 or slash == len(a) - 1:
        raise Fatal("missing branch name; try -b")
    return a[slash + 1:]


def parse_checkout_args(repo: Repository, args: list[str], bo: BranchOptions, cwd: str,
                        quiet: bool, err) -> Target:
    """``parse_branchname_arg`` and what checkout_main does around it.

    ``args`` keeps ``--`` (PARSE_OPT_KEEP_DASHDASH). Raises :class:`Fatal`
    (128) or RevisionError (1, "pathspec did not match") as git would.
    """
    if bo.new_branch is None and bo.track not in (None, "no"):
        bo.new_branch = _tracked_branch_name(args)
    t = Target()
    if not args:
        return t
    try:
        dd = args.index("--")
    except ValueError:
        dd = -1
    if dd == 0:
        t.pathspec = args[1:] or None  # "git checkout --" alone: HEAD, as no argument
        return t
    has_dd = dd == 1
    if dd >= 2:
        raise Fatal(f"only one reference expected, {dd} given.")
    t.count_paths = not quiet and not has_dd
    arg = args[0]
    if arg == "-":
        arg = "@{-1}"
    guess = bo.guess
    if guess is None:
        try:
            guess = repo.config.get_boolean((b"checkout",), b"guess", True)
        except (KeyError, ValueError):
            guess = True
    dwim_ok = guess and bo.track is None and bo.new_branch is None
    rest = args[1:]
    sha = get_oid(repo, arg)
    if sha is not None and commit_of(repo, sha) is None and _peel(repo, sha, Tree) is None:
        sha = None  # get_oid_mb wants a tree-ish at least
    if sha is None:
        recover = dwim_ok
        could_be_paths = not has_dd and _is_file(cwd, arg)
        if not has_dd and not _no_wildcard(arg):
            recover = False
        if not (len(args) == 1 and not has_dd) and not (len(args) == 2 and has_dd):
            recover = False
        if recover:
            remote, n = unique_tracking_name(repo, arg)
            if remote is not None and could_be_paths:
                raise Fatal(f"'{arg}' could be both a local file and a tracking branch.\n"
                            "Please use -- (and optionally --no-guess) to disambiguate")
            if remote is None and n > 1:
                if _advice(repo, b"checkoutambiguousremotebranchname"):
                    err.write(AMBIGUOUS_REMOTE_ADVICE)
                raise Fatal(f"'{arg}' matched multiple ({n}) remote tracking branches")
            if remote is not None:
                bo.new_branch = arg
                t.dwim_from = remote
                arg = remote.decode()
                sha = _read_ref(repo, remote)
            else:
                recover = False
        if not recover:
            if has_dd:
                raise Fatal(f"invalid reference: {arg}")
            t.pathspec = args
            return t
    # setup_new_branch_info_and_source_tree
    name = arg
    if re.fullmatch(r"@\{-\d+\}", arg):
        prior = nth_prior_checkout(repo, int(arg[3:-1]))
        if prior is not None:
            name = prior
    path = b"refs/heads/" + name.encode()
    branch_sha = _read_ref(repo, path) if name and not name.startswith("-") else None
    if branch_sha is not None:
        sha = branch_sha
        t.path = path
    t.name = name
    commit = commit_of(repo, sha)
    if commit is None:
        tree = _peel(repo, sha, Tree)
        if tree is None:
            raise Fatal(f"reference is not a tree: {arg}")
        t.source = tree
    else:
        t.commit = commit
        t.source = repo.object(commit).tree
    if has_dd:
        rest = rest[1:]
    elif rest and _is_file(cwd, arg):
        raise Fatal(f"ambiguous argument '{arg}': both revision and filename\n"
                    "Use '--' to separate paths from revisions, like this:\n"
                    "'git <command> [<revision>...] -- [<file>...]'")
    if rest:
        t.pathspec = rest
    return t


def check_branch_options(bo: BranchOptions, t: Target) -> None:
    """``checkout_main`` / ``checkout_branch``: the combinations git refuses."""
    if t.pathspec is not None:
        if bo.new_branch is not None and len(t.pathspec) == 1 and t.commit is None:
            raise Fatal(f"'{t.pathspec[0]}' is not a commit and a branch '{bo.new_branch}' cannot be created from it")
        if bo.detach:
            raise Fatal(f"git checkout: --detach does not take a path argument '{t.pathspec[0]}'")
        if bo.new_branch is not None or bo.track not in (None,):
            raise Fatal("paths cannot be used with switching branches")  # (git: "Cannot update paths and switch")
        return
    if bo.detach and bo.new_branch is not None:
        raise Fatal("'--detach' cannot be used with '-b/-B/--orphan'")
    if bo.orphan and bo.track not in (None,):
        raise Fatal("'--orphan' cannot be used with '-t'")
    if bo.detach and bo.track not in (None,):
        raise Fatal("'--detach' cannot be used with '-t'")
    if t.name is not None and t.commit is None:
        raise Fatal(f"Cannot switch branch to a non-commit '{t.name}'")


# --- creating branches -----------------------------------------------------------


def valid_branch_name(name: str) -> bool:
    """``strbuf_check_branch_ref``: refs/heads/<name> is a valid ref name."""
    from .refs import check_ref_format

    if not name or name.startswith("-") or name == "HEAD":
        return False
    return check_ref_format(b"refs/heads/" + name.encode())


def validate_new_branch(repo: Repository, name: str, force: bool) -> bool:
    """``validate_new_branchname``: whether it exists; dies as git when refused."""
    if not valid_branch_name(name):
        raise Fatal(f"'{name}' is not a valid branch name")
    ref = b"refs/heads/" + name.encode()
    exists = _read_ref(repo, ref) is not None
    if exists and not force:
        raise Fatal(f"a branch named '{name}' already exists")
    # (-B of a branch another worktree has checked out: git 2.39 resets it;
    # the refusal came with later versions.)
    return exists


def append_reflog(repo: Repository, ref: bytes, old: bytes | None, new: bytes | None, msg: str) -> None:
    """One reflog line, as the files backend writes it (core.logAllRefUpdates)."""
    try:
        keep = repo.config.get_boolean((b"core",), b"logallrefupdates", repo.worktree is not None)
    except (KeyError, ValueError):
        keep = repo.worktree is not None
    base = repo.dirs.gitdir if ref == b"HEAD" else repo.dirs.commondir
    path = os.path.join(base, "logs", os.fsdecode(ref))
    if not (keep and (ref == b"HEAD" or ref.startswith((b"refs/heads/", b"refs/remotes/"))))\
            and not os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    zero = b"0" * repo.odb.git_hash_algo.hex_length
    line = b"%s %s %s\t%s\n" % (old or zero, new or zero, repo._ident_with_date(), msg.encode())
    with open(path, "ab") as f:
        f.write(line)


def create_branch(repo: Repository, name: str, start_name: str, commit: bytes, force: bool,
                  exists: bool) -> None:
    """``create_branch``'s ref update: the ref and its reflog ("Created
    from"/"Reset to"), HEAD's reflog too when it is the current branch."""
    ref = b"refs/heads/" + name.encode()
    old = _read_ref(repo, ref)
    msg = f"branch: Reset to {start_name}" if exists and force else f"branch: Created from {start_name}"
    if exists and old == commit:
        # The files backend skips an unchanged ref, but not the log-only
        # update of HEAD that goes with the current branch.
        if repo.head_ref() == ref:
            append_reflog(repo, b"HEAD", old, commit, msg)
        return
    if not repo.refs.set_if_equals(ref, old, commit):
        raise Fatal(f"cannot lock ref '{ref.decode()}'")
    append_reflog(repo, ref, old, commit, msg)
    if repo.head_ref() == ref:
        append_reflog(repo, b"HEAD", old, commit, msg)


def tracking_upstream(repo: Repository, start: str, start_ref: bytes | None,
                      track: str | None) -> tuple[str, bytes] | None:
    """``dwim_branch_start`` and ``setup_tracking``'s choice for ``-b``/``-B``/
    ``-t``/DWIM: (remote, merge ref) to record, or None. ``branch.autoSetupMerge``
    (default true: a remote-tracking start point is tracked; ``always``: a
    local branch too), ``-t`` forces it (dying before the branch is made when
    the start point is no branch), ``--no-track`` prevents it."""
    if track == "no":
        return None
    auto = b"true"
    try:
        auto = repo.config.get((b"branch",), b"autosetupmerge").lower()
    except KeyError:
        pass
    if track is None:
        if auto in (b"false", b"no", b"off", b"0"):
            return None
        if auto == b"inherit":
            track = "inherit"
    if start_ref is None:
        if track is not None:
            raise Fatal(f"cannot set up tracking information; starting point '{start}' is not a branch")
        return None
    upstream: tuple[str, bytes] | None = None
    if start_ref.startswith(b"refs/remotes/"):
        upstream = tracked_by(repo, start_ref)
    elif start_ref.startswith(b"refs/heads/") and (track is not None or auto == b"always"):
        upstream = (".", start_ref)
    if track == "inherit" and start_ref.startswith(b"refs/heads/"):
        raise Unsupported("--track=inherit is not supported")
    if upstream is None:
        if track is not None:
            raise Fatal(f"cannot set up tracking information; starting point '{start}' is not a branch")
        return None
    try:
        rebase = repo.config.get((b"branch",), b"autosetuprebase").lower()
    except KeyError:
        rebase = b"never"
    if rebase not in (b"never",):
        raise Unsupported("branch.autoSetupRebase is not supported")
    return upstream


def setup_tracking(repo: Repository, name: str, upstream: tuple[str, bytes] | None, quiet: bool, out) -> None:
    """Record the upstream (``install_branch_config``) with git's line on stdout."""
    if upstream is None:
        return
    from .configset import set_branch_upstream

    remote, merge = upstream
    set_branch_upstream(repo.dirs.config_path, name.encode(), remote.encode(), merge)
    if not quiet:
        short = merge[len(b"refs/heads/"):] if merge.startswith(b"refs/heads/") else merge
        friendly = short.decode() if remote == "." else f"{remote}/{short.decode()}"
        out.write(f"branch '{name}' set up to track '{friendly}'.\n")


def start_ref_of(repo: Repository, start: str) -> bytes | None:
    """The ref a start point names (for tracking), or None (an id, HEAD~1...)."""
    if start in ("HEAD", "@") or re.search(r"[~^:]", start):
        return None
    found = dwim_ref(repo, start)
    return found[0] if found is not None else None


# --- the switch itself -------------------------------------------------------------


def switch_unborn_to_new_branch(repo: Repository, bo: BranchOptions, quiet: bool, err) -> None:
    """``switch_unborn_to_new_branch``: HEAD to the new name, nothing else."""
    _write_head_symref(repo, b"refs/heads/" + bo.new_branch.encode())
    if not quiet:
        err.write(f"Switched to a new branch '{bo.new_branch}'\n")


def _write_head_symref(repo: Repository, ref: bytes) -> None:
    path = os.path.join(repo.dirs.gitdir, "HEAD")
    lock = path + ".lock"
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.write(fd, b"ref: " + ref + b"\n")
    finally:
        os.close(fd)
    os.rename(lock, path)


# --- abbreviated ids -----------------------------------------------------------------

MINIMUM_ABBREV = 4
FALLBACK_DEFAULT_ABBREV = 7


def default_abbrev(repo: Repository) -> int:
    """``core.abbrev`` as git_default_core_config reads it: ``auto`` (unset)
    is -1, a false value the full length, else a number in [4, hexsz]."""
    from .config import ConfigError, git_config_int

    hexsz = repo.odb.git_hash_algo.hex_length
    try:
        raw = repo.config.get((b"core",), b"abbrev")
    except KeyError:
        return -1
    v = (raw or b"").strip().lower()
    if v == b"auto":
        return -1
    if v in (b"false", b"no", b"off", b""):
        return hexsz
    n = git_config_int("core.abbrev", raw)
    if n < MINIMUM_ABBREV or n > hexsz:
        raise ConfigError(f"abbrev length out of range: {n}")
    return n


def approximate_object_count(repo: Repository) -> int:
    """``repo_approximate_object_count``: the objects in packs (loose ones
    are not counted, as in git)."""
    count = repo.odb.approximate_object_count()
    if count is not None:
        return count
    count = 0
    for pack in repo.store.packs:
        try:
            count += len(pack.index)
        except Exception:  # noqa: BLE001 - an unreadable index counts nothing (open_pack_index fails)
            pass
    return count


def find_unique_abbrev(repo: Repository, hexsha: bytes | str, length: int | None = None) -> str:
    """``repo_find_unique_abbrev``: the shortest prefix of at least the
    default length (auto: ceil(bits of the object count / 2), at least 7)
    that names no other object."""
    h = hexsha.decode() if isinstance(hexsha, bytes) else hexsha
    hexsz = repo.odb.git_hash_algo.hex_length
    cache = repo.__dict__.setdefault("_abbrev_len", {})
    if length is None:
        if "len" not in cache:
            n = default_abbrev(repo)
            if n < 0:
                count = approximate_object_count(repo)
                bits = count.bit_length()  # msb(count) + 1
                n = max((bits + 1) // 2, FALLBACK_DEFAULT_ABBREV)
            cache["len"] = n
        length = cache["len"]
    if length >= hexsz:
        return h
    while length < hexsz:
        prefix = h[:length].encode()
        others = 0
        for other in repo._abbrev(prefix):
            if other != h.encode():
                others += 1
                break
        if not others:
            return h[:length]
        length += 1
    return h
