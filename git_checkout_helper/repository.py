"""One repository opened for a checkout: its directories, config, objects,
trees and refs.

Mirrors what git's ``the_repository`` gives the checkout code: ``get_oid``
for revisions (``refs.c``/``object-name.c``, the common forms: full and
abbreviated ids, ``HEAD``, branch, tag, remote-tracking names, ``^{tree}``-free),
``read_tree`` flattening (``tree-walk.c``) and ``HEAD`` updates with a reflog
entry (``refs/files-backend.c``).

Objects are read through our own :class:`~odb.ObjectDatabase` and parsed by
:mod:`objects`; refs by :mod:`refs`. Neither dulwich's ``Repo`` nor its
object store is opened unless something only they do is asked for (an
alternate's objects, a version 1 pack index): importing them costs
a checkout about 40 ms before its first file, as much as git's whole set-up
of a 5,000-file tree.
"""

from __future__ import annotations

import os
from binascii import unhexlify
from collections.abc import Callable, Mapping

from . import packed_refs
from .attr import GITATTRIBUTES_FILE
from .config import read_config
from .discovery import SetupEnv
from .index import create_ce_mode
from .objects import Commit, GitObject, Tag, Tree, parse_object, parse_tree
from .odb import GitDirs, ObjectDatabase, discover, object_format_name
from .refs import Refs
from .tree import EMPTY, TreeFiles, tree_value
from .wrapper import list_dir, write_locked

__all__ = ["Repository", "RevisionError"]

S_IFDIR = 0o040000
#: Trees read between two releases of the pack pages a tree walk has mapped
#: (at most 64 MiB mapped in between; a release costs 2 µs per 64 KiB).
TREES_PER_RELEASE = 1024


class _TreeWalk:
    """:meth:`Repository.read_tree`'s walk: the files (path -> :func:`tree.tree_value`),
    the subtrees for cache-tree and the ``.gitattributes`` files of a tree
    (a class, not a recursive closure: :func:`cli.start_program`)."""

    __slots__ = ("odb", "read_raw", "rawsz", "files", "trees", "attributes", "tags", "walked")

    def __init__(self, odb: ObjectDatabase) -> None:
        self.odb, self.read_raw, self.rawsz = odb, odb.read_raw, odb.git_hash_algo.oid_length
        self.files: dict[bytes, bytes] = {}
        self.trees: dict[bytes, tuple[bytes, list[bytes], int]] = {}
        self.attributes: dict[bytes, bytes] = {}
        # The mode byte of each distinct tree mode (after create_ce_mode; none
        # for 100644): a tree has three or four.
        self.tags: dict[int, bytes] = {}
        self.walked = 0

    def walk(self, tree_id: bytes, prefix: bytes) -> int:
        """The tree ``tree_id`` at ``prefix`` and those below it: how many files."""
        self.walked += 1
        if not self.walked % TREES_PER_RELEASE:
            self.odb.release_pages()
        type_num, raw = self.read_raw(tree_id)
        if type_num != 2:
            raise RevisionError(f"object {tree_id.hex()} is not a tree")
        files, tags, attributes = self.files, self.tags, self.attributes
        subs = []
        count = 0
        for name, mode, sha in parse_tree(raw, self.rawsz):
            path = prefix + name
            if mode & 0o170000 == S_IFDIR:
                subs.append(name)
                count += self.walk(unhexlify(sha), path + b"/")
            else:
                oid = unhexlify(sha)
                tag = tags.get(mode)
                if tag is None:
                    tag = tags[mode] = tree_value(create_ce_mode(mode), b"")
                files[path] = oid + tag if tag else oid
                if name == GITATTRIBUTES_FILE:
                    attributes[path] = oid
                count += 1
        self.trees[prefix[:-1]] = (tree_id, subs, count)
        return count


class RevisionError(Exception):
    pass


_UNREAD = object()  # (Repository.sparse_checkout not asked yet)


def _open_dulwich(dirs: GitDirs, store):
    """dulwich's ``Repo`` on directories :mod:`discovery` has already checked
    as git does. While it opens, it sees no config: its own format checks
    are stricter than git's (v0 extensions such as ``partialClone`` or
    ``preciousObjects``, unknown ones in a version 0 repository, core.bare
    with core.worktree) and would refuse repositories git works in."""
    from dulwich.config import ConfigFile
    from dulwich.repo import Repo

    class _DulwichRepo(Repo):
        _opening = False

        def get_config(self):
            return ConfigFile() if self._opening else super().get_config()

    r = _DulwichRepo.__new__(_DulwichRepo)
    r._opening = True
    Repo.__init__(r, controldir=dirs.gitdir, commondir=dirs.commondir, worktree=dirs.worktree,
                  object_store=store, bare=dirs.worktree is None)
    r._opening = False
    packed_refs.install(r.refs)
    return r


class Repository:
    """The repository a checkout runs in."""

    def __init__(self, dirs: GitDirs, environ: Mapping[str, str] | None = None) -> None:
        self.dirs = dirs
        self.environ = dict(environ or {})
        self.config = read_config(dirs, self.environ)
        self.odb = ObjectDatabase(dirs.objects, object_format_name(self.config),
                                  getattr(dirs, "alternates", None))
        self.hash_name = self.odb.git_hash_algo.name
        self.worktree = dirs.worktree
        self._dulwich = None
        self._refs = None
        self._trees: dict[bytes, TreeFiles] = {}
        self._sparse = _UNREAD
        self._walk = None  # commit_walk's
        #: Where a partial clone's lazy fetch warns (a checkout sets its error
        #: stream: git's lazy fetch is a ``git fetch`` that ``-q`` does not quiet).
        self.fetch_warning: Callable[[str], None] | None = None

    @classmethod
    def open(cls, path: str, environ: Mapping[str, str] | None = None, git_dir: str | None = None,
             setup: SetupEnv | None = None) -> Repository:
        """Discover the repository from ``path`` (:func:`discovery.discover`);
        ``setup`` carries the ``GIT_*`` discovery settings the CLI read."""
        dirs = discover(path, git_dir, env=setup or SetupEnv(environ=environ))
        return cls(dirs, environ)

    @property
    def store(self):
        """dulwich's object store of these objects (:attr:`odb.ObjectDatabase.store`)."""
        return self.odb.store

    @property
    def dulwich(self):
        """A dulwich ``Repo`` on the same directories, for what only it does (commit walks)."""
        if self._dulwich is None:
            self._dulwich = _open_dulwich(self.dirs, self.store)
        return self._dulwich

    @property
    def refs(self) -> Refs:
        """This repository's refs (:class:`refs.Refs`: shared refs in the
        common dir, per-worktree ones in the git dir). No reflog logger:
        every ref update here passes no message, and the reflog lines are
        ours (:meth:`update_head`)."""
        if self._refs is None:
            self._refs = Refs(self.dirs.commondir, self.dirs.gitdir)
        return self._refs

    def object(self, hexsha: bytes) -> GitObject:
        """The object ``hexsha`` names (:func:`objects.parse_object`: its id
        checked against its bytes), read through our object database.
        KeyError when there is no such object."""
        fmt = self.odb.git_hash_algo
        if len(hexsha) != fmt.hex_length:
            raise KeyError(hexsha)
        try:
            oid = unhexlify(hexsha)
        except ValueError:
            raise KeyError(hexsha) from None
        type_num, raw = self.odb.read_raw(oid)
        return parse_object(type_num, raw, hexsha, fmt.name)

    def close(self) -> None:
        if self._dulwich is not None:
            self._dulwich.close()
        self.odb.close()

    # --- revisions ---------------------------------------------------------

    def _peel_to_commit(self, sha_hex: bytes) -> bytes:
        obj = self.object(sha_hex)
        while isinstance(obj, Tag):
            obj = self.object(obj.object[1])
        if isinstance(obj, Commit):
            return obj.id
        raise RevisionError(f"reference is not a tree: {sha_hex.decode()}")

    def commit_walk(self):
        """The :class:`revwalk.CommitWalk` over this repository's commits,
        with the parents the graft file (``info/grafts``, or
        ``GIT_GRAFT_FILE``) and ``shallow`` give (``prepare_commit_graft``).
        One for the process, as git's parsed commits are: a second walk
        sees the parents the first one read."""
        if self._walk is None:
            from .revwalk import CommitWalk
            from .shallow import commit_grafts

            read_raw, hexsz = self.odb.read_raw, self.odb.git_hash_algo.hex_length

            def read(hexsha: bytes) -> bytes:
                try:
                    type_num, raw = read_raw(unhexlify(hexsha))
                except ValueError:
                    raise KeyError(hexsha) from None
                if type_num != 1:
                    raise KeyError(hexsha)
                return raw

            grafts = commit_grafts(self.dirs.commondir, self.environ.get("GIT_GRAFT_FILE"), hexsz)
            self._walk = CommitWalk(read, hexsz, grafts)
        return self._walk

    def head_ref(self) -> bytes | None:
        """The branch HEAD points at (``refs/heads/x``), or None when detached."""
        chain, _ = self.refs.follow(b"HEAD")
        return chain[1] if len(chain) > 1 else None

    def head_commit(self) -> bytes | None:
        try:
            sha = self.refs[b"HEAD"]
        except KeyError:
            return None  # unborn branch
        return self._peel_to_commit(sha)

    def resolve(self, rev: str) -> tuple[bytes, bytes | None, bytes | None]:
        """(commit hex id, branch ref or None, remote-tracking ref to create from)."""
        refs = self.refs
        name = rev.encode()
        if rev == "HEAD" or rev == "@":
            c = self.head_commit()
            if c is None:
                raise RevisionError("You are on a branch yet to be born")
            return c, self.head_ref(), None
        if name.startswith(b"refs/heads/") and name in refs:
            return self._peel_to_commit(refs[name]), name, None
        branch = b"refs/heads/" + name
        if branch in refs:
            return self._peel_to_commit(refs[branch]), branch, None
        for ref in (name, b"refs/" + name, b"refs/tags/" + name, b"refs/remotes/" + name):
            if ref.startswith(b"refs/") and ref in refs:
                return self._peel_to_commit(refs[ref]), None, None
        # DWIM: exactly one remote has this branch -> create a tracking branch.
        remote_matches = [r for r in refs.keys(base=b"refs/remotes/") if r.split(b"/", 1)[-1] == name]
        if len(remote_matches) == 1:
            full = b"refs/remotes/" + remote_matches[0]
            return self._peel_to_commit(refs[full]), branch, full
        hexlen = self.odb.git_hash_algo.hex_length
        if 4 <= len(name) <= hexlen and all(c in b"0123456789abcdef" for c in name.lower()):
            if len(name) == hexlen:
                try:
                    return self._peel_to_commit(name.lower()), None, None
                except KeyError:
                    pass
            else:
                found = list(self._abbrev(name.lower()))
                if len(found) == 1:
                    return self._peel_to_commit(found[0]), None, None
                if len(found) > 1:
                    raise RevisionError(f"short object ID {rev} is ambiguous")
        raise RevisionError(f"pathspec '{rev}' did not match any file(s) known to git")

    def _abbrev(self, prefix: bytes):
        """The hex ids of the objects whose ids start with ``prefix`` (hex)."""
        own = self.odb.ids_with_prefix(prefix)
        if own is not None:
            yield from own
            return
        seen = set()
        for sha in self.store.iter_prefix(prefix):  # dulwich wants the hex prefix
            hexsha = sha if len(sha) == self.odb.git_hash_algo.hex_length else sha.hex().encode()
            if hexsha.startswith(prefix) and hexsha not in seen:
                seen.add(hexsha)
                yield hexsha

    # --- the index ---------------------------------------------------------

    def read_index(self, warn=None):
        """This work tree's index (:func:`index_state.read_index_state`), a
        sparse index expanded from its trees (``ensure_full_index``)."""
        from .index_state import read_index_state

        return read_index_state(self.dirs.index_path, self.odb.git_hash_algo, warn,
                                lambda oid: self.read_tree(oid.hex().encode()).files)

    def sparse_checkout(self):
        """The sparse-checkout patterns in effect (:func:`sparse.load_sparse_checkout`), or None.
        Read once, as :attr:`config` is: a switch asks for them in its
        attributes, its merge and its index write."""
        if self._sparse is _UNREAD:
            from .sparse import load_sparse_checkout

            self._sparse = load_sparse_checkout(self.config, self.dirs.gitdir)
        return self._sparse

    def ensure_tree(self, oid: bytes, content: bytes) -> None:
        """Store tree ``oid`` unless the object store has it (a sparse index's directories)."""
        self.odb.ensure_object(oid, b"tree", content)

    def tree_of(self, commit_hex: bytes | None, fetch: bool = True) -> TreeFiles:
        """The flattened tree of a commit (or of a tree); ``fetch``: see :meth:`read_tree`."""
        if commit_hex is None:
            return EMPTY
        obj = self.object(commit_hex)
        if isinstance(obj, Commit):
            return self.read_tree(obj.tree, fetch)
        if isinstance(obj, Tree):
            return self.read_tree(obj.id, fetch)
        raise RevisionError(f"reference is not a tree: {commit_hex.decode()}")

    def read_tree(self, tree_hex: bytes, fetch: bool = True) -> TreeFiles:
        """Flatten a tree (``read_tree``) and remember its subtrees for cache-tree.

        Raw tree bytes are parsed by dulwich's C ``parse_tree`` instead of
        building ``Tree`` objects: half the cost on a tree of 2,000 directories.
        Results are cached per tree id (a checkout may ask for HEAD's twice).
        The pack pages the walk maps are let go every ``TREES_PER_RELEASE``
        trees and at its end, with the pack index's (:meth:`odb.ObjectDatabase.release_pages`):
        at 100,000 files they were most of the coordinator's peak memory.
        A tree a partial clone lacks is fetched, unless ``fetch`` is false
        (KeyError then: a :mod:`treeahead` child leaves that to the coordinator).
        """
        cached = self._trees.get(tree_hex)
        if cached is not None:
            return cached
        root = unhexlify(tree_hex)
        walk = _TreeWalk(self.odb)
        try:
            walk.walk(root, b"")
        except KeyError:  # a partial clone lacks trees: fetched, or refused (promisor.py)
            if not fetch:
                raise
            from .promisor import prefetch_trees

            prefetch_trees(self.config, self.store, root, environ=self.environ, warn=self.fetch_warning)
            self.odb.rescan_packs()
            walk = _TreeWalk(self.odb)
            walk.walk(root, b"")
        self.odb.release_pages(finished=True)
        return self.remember_tree(TreeFiles(walk.files, walk.trees, root, walk.attributes))

    def remember_tree(self, tree: TreeFiles) -> TreeFiles:
        """Keep ``tree`` for :meth:`read_tree`'s next call with its id (read
        here, or by a :mod:`treeahead` child)."""
        self._trees[tree.tree_id.hex().encode()] = tree
        return tree

    def release_tree(self, tree: TreeFiles, trees: bool = False) -> None:
        """Let go of ``tree``'s files (emptied, where every holder sees it) and
        forget it: for a caller that knows no one will look at them again. At
        100,000 files they are 11 MiB of the coordinator's memory beside the
        new index's entries, which share their paths and ids. ``trees``: its
        subtrees too, once the cache tree is made of them (1.7 MiB there)."""
        key = tree.tree_id.hex().encode() if tree.tree_id is not None else None
        if self._trees.get(key) is tree:
            del self._trees[key]
        tree.files.clear()
        if trees:
            tree.trees.clear()

    # --- HEAD ----------------------------------------------------------------

    def update_head(self, commit_hex: bytes, branch: bytes | None, message: bytes, clone: bool = False) -> None:
        """Point HEAD at ``branch`` (symbolic) or at ``commit_hex`` (detached).

        Written like the files backend does: ``HEAD.lock`` then rename, and
        one reflog line in ``logs/HEAD`` when reflogs are kept. ``clone``:
        the clone's first HEAD; as ``cmd_clone`` writes them, HEAD, the
        branch and ``refs/remotes/<remote>/HEAD`` each get a reflog that
        starts from nothing.
        """
        refs = self.refs
        if branch is not None and branch not in refs:
            refs.set_if_equals(branch, None, commit_hex)
        old = None if clone else self.head_commit()
        if clone and self._keeps_reflogs():
            remote_heads = [os.path.join("refs", "remotes", n, "HEAD")
                            for n in sorted(list_dir(os.path.join(self.dirs.commondir, "refs", "remotes")))]
            for ref in ([os.fsdecode(branch)] if branch is not None else []) + remote_heads:
                if ref.startswith("refs/remotes/"):
                    target = self._remote_head_commit(ref)
                    if target is None:
                        continue
                else:
                    target = commit_hex
                self._append_reflog(ref, None, target, message)
        write_locked(os.path.join(self.dirs.gitdir, "HEAD"),
                     (b"ref: " + branch if branch is not None else commit_hex) + b"\n")
        if self._keeps_reflogs() or os.path.exists(os.path.join(self.dirs.gitdir, "logs", "HEAD")):
            self._append_reflog("HEAD", old, commit_hex, message)

    def _keeps_reflogs(self) -> bool:
        """``core.logAllRefUpdates`` (default: true with a work tree)."""
        try:
            return self.config.get_boolean((b"core",), b"logallrefupdates", self.worktree is not None)
        except (KeyError, ValueError):
            return self.worktree is not None

    def _append_reflog(self, ref: str, old: bytes | None, new: bytes, message: bytes) -> None:
        """One line of ``logs/<ref>`` (HEAD in the git dir, others in the common dir)."""
        base = self.dirs.gitdir if ref == "HEAD" else self.dirs.commondir
        path = os.path.join(base, "logs", ref)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        zero = b"0" * self.odb.git_hash_algo.hex_length
        with open(path, "ab") as f:
            # (log_ref_write_fd: no tab before an empty message)
            f.write(b"%s %s %s%s\n" % (old or zero, new, self._ident_with_date(), b"\t" + message if message else b""))

    def _remote_head_commit(self, ref: str) -> bytes | None:
        try:
            return self.refs[ref.encode()]
        except KeyError:
            return None

    def set_upstream(self, branch: bytes, remote_ref: bytes) -> str:
        """``--track`` set-up for a branch made from ``refs/remotes/<remote>/<name>``."""
        from .configset import set_branch_upstream

        remote, _, name = remote_ref[len(b"refs/remotes/") :].partition(b"/")
        short = branch[len(b"refs/heads/") :]
        set_branch_upstream(self.dirs.config_path, short, remote, b"refs/heads/" + name)
        return f"branch '{short.decode()}' set up to track '{remote.decode()}/{name.decode()}'."

    def tracking_info(self, branch: bytes) -> str | None:
        """``format_tracking_info`` for ``refs/heads/<name>`` (what checkout
        prints on stdout after switching to a branch with an upstream)."""
        from fnmatch import fnmatchcase

        short = branch[len(b"refs/heads/") :]
        config = read_config(self.dirs, self.environ)  # set_upstream may just have written it
        try:
            remote = config.get((b"branch", short), b"remote")
            merge = config.get((b"branch", short), b"merge")
        except KeyError:
            return None
        if remote == b".":
            base = merge
        else:
            base = None
            try:
                specs = list(config.get_multivar((b"remote", remote), b"fetch"))
            except KeyError:
                specs = []
            for spec in specs:
                src, _, dst = spec.lstrip(b"+").partition(b":")
                if b"*" in src and fnmatchcase(merge.decode("latin-1"), src.decode("latin-1")):
                    star = src.index(b"*")
                    base = dst.replace(b"*", merge[star : len(merge) - (len(src) - star - 1)], 1)
                    break
                if src == merge and dst:
                    base = dst
                    break
            if base is None:
                return None
        hints = True
        try:
            hints = config.get_boolean((b"advice",), b"statushints", True)
        except (KeyError, ValueError):
            pass
        name = base
        for p in (b"refs/heads/", b"refs/remotes/", b"refs/tags/", b"refs/"):
            if base.startswith(p):
                name = base[len(p) :]
                break
        name_s = name.decode("utf-8", "replace")
        refs = self.refs
        if base not in refs:
            return (f"Your branch is based on '{name_s}', but the upstream is gone.\n"
                    + ("  (use \"git branch --unset-upstream\" to fixup)\n" if hints else ""))
        a, b = self._peel_to_commit(refs[branch]), self._peel_to_commit(refs[base])
        if a == b:
            return f"Your branch is up to date with '{name_s}'.\n"
        limited = self.commit_walk().limited
        ours, theirs = len(limited([a], [b])), len(limited([b], [a]))
        if not theirs:
            return (f"Your branch is ahead of '{name_s}' by {ours} commit{'s' if ours != 1 else ''}.\n"
                    + ("  (use \"git push\" to publish your local commits)\n" if hints else ""))
        if not ours:
            return (f"Your branch is behind '{name_s}' by {theirs} commit{'s' if theirs != 1 else ''}, "
                    "and can be fast-forwarded.\n"
                    + ("  (use \"git pull\" to update your local branch)\n" if hints else ""))
        return (f"Your branch and '{name_s}' have diverged,\nand have {ours} and {theirs} different "
                f"commit{'s' if ours + theirs != 1 else ''} each, respectively.\n"
                + ("  (use \"git pull\" to merge the remote branch into yours)\n" if hints else ""))

    def _ident_with_date(self) -> bytes:
        """``git_committer_info``: name, email and date as a reflog line wants them."""
        import time

        env = self.environ

        def conf(key: bytes, fallback: str) -> str:
            try:
                return self.config.get((b"user",), key).decode()
            except KeyError:
                return fallback

        name = env.get("GIT_COMMITTER_NAME") or conf(b"name", "unknown")
        email = env.get("GIT_COMMITTER_EMAIL") or conf(b"email", "unknown")
        date = env.get("GIT_COMMITTER_DATE", "").strip()
        parts = date.lstrip("@").split()
        if not (len(parts) == 2 and parts[0].isdigit()):
            off = -time.timezone if not time.localtime().tm_isdst else -time.altzone
            sign = "+" if off >= 0 else "-"
            off = abs(off) // 60
            parts = [str(int(time.time())), f"{sign}{off // 60:02d}{off % 60:02d}"]
        return f"{name} <{email}> {parts[0]} {parts[1]}".encode()


