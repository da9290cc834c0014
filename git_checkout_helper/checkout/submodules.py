"""``--recurse-submodules``: the submodules one checkout moves, checked as
``unpack_trees`` checks each gitlink and moved as ``submodule_move_head``
moves them, by our own checkout in each submodule (see :mod:`submodule` for
what is read there, and for the two places we keep what git loses)."""

from __future__ import annotations

import os

from ..index import S_IFGITLINK, Entry
from ..repository import Repository
from ..submodule import (
    GITMODULES_FILE,
    connect_work_tree_and_git_dir,
    has_dirty_index,
    is_submodule_active,
    parse_gitmodules,
    populated_gitdir,
    set_core_worktree,
    submodule_env,
    submodule_names,
)
from ..tree import EMPTY, TreeFiles, entry_differs, value_mode, value_oid
from ..wrapper import show_path
from .unpack import apply_sparse, ignore_matcher, write_index
from .updates import Checkout, _execute

__all__ = ["SubmoduleMoves"]

#: ``unpack_trees_error_types`` in their order (``display_error_msgs``), as
#: :class:`plan.PlanError` names them.
ERROR_KINDS = ("overwrite", "not_uptodate", "not_uptodate_dir", "untracked_overwritten", "untracked_removed",
               "submodule")

class MoveRefused(Exception):
    """A submodule that cannot be moved: its messages are already printed."""


class Move:
    """One submodule's checkout, planned before the superproject is touched
    and carried out in its turn (``submodule_move_head`` without dry run)."""

    __slots__ = ("path", "name", "new", "gitdir", "repo", "co", "old", "plan", "target", "connect", "nested",
                 "head", "head_symbolic", "fresh",
                 "absorb", "replaced")

    def __init__(self, path: bytes, name: bytes, new: bytes | None, gitdir: str) -> None:
        self.path, self.name, self.new, self.gitdir = path, name, new, gitdir
        self.repo: Repository | None = None
        self.co = self.old = self.plan = self.target = self.nested = None
        self.connect = False  # write <path>/.git and core.worktree (connect_work_tree_and_git_dir)
        self.fresh = False  # no old head: the submodule comes into being (submodule_reset_index)
        self.absorb = False  # its .git is a directory: moved to modules/<name> first
        self.replaced = False  # it leaves for a file at its path
        self.head: bytes | None = None
        self.head_symbolic = False


class SubmoduleMoves:
    """The submodules one checkout moves: planned (:meth:`plan_switch`,
    :meth:`plan_reset`), then carried out around the superproject's own
    updates (:meth:`remove`, then :meth:`update`).

    ``co`` is the superproject's :class:`checkout.updates.Checkout`;
    ``prefix`` the ``--super-prefix`` its paths are shown under.
    """

    def __init__(self, co, force: bool, prefix: bytes = b"") -> None:
        self.co, self.force, self.prefix = co, force, prefix
        self.repo: Repository = co.repo
        self.top = co.top
        self.moves: dict[bytes, Move] = {}
        self.not_uptodate: list[bytes] = []  # ERROR_NOT_UPTODATE_FILE, from verify_uptodate
        self.lose: list[bytes] = []  # ERROR_WOULD_LOSE_SUBMODULE
        self._names: dict[bytes, bytes] = {}  # the .gitmodules the checks see
        self._update_names: dict[bytes, bytes] = {}  # and the one the updates see (load_gitmodules_file)
        self._opened: dict[bytes, Repository | None] = {}
        self._indexes: dict = {}  # path -> the submodule's index, for the dry runs
        self._repos: list[Repository] = []  # every submodule opened (closed by close)
        self._pool = None  # moves under way in threads (start)
        self._jobs = 1  # checkout.submoduleJobs, read when planning
        self._futures: list = []
        self._super_index: dict[bytes, Entry] = {}  # the superproject's index entries

    # --- what git asks of each gitlink ---------------------------------------

    def _name(self, path: bytes) -> bytes | None:
        """``submodule_from_ce``: the name of the submodule at ``path``, if any."""
        return self._names.get(path)

    def _read_names(self, target: dict, index: dict[bytes, Entry], head: dict) -> None:
        """The checks see the ``.gitmodules`` there is; ``check_updates``
        writes a new one first and reads it again for the updates."""
        self._names = self._update_names = submodule_names(self.repo, index, head)
        t, cur = target.get(GITMODULES_FILE), index.get(GITMODULES_FILE)
        if t is not None and entry_differs(cur, t) and head.get(GITMODULES_FILE) != t:
            self._update_names = parse_gitmodules(self.repo.odb.read_blob(value_oid(t)))

    def _shown(self, path: bytes) -> str:
        return show_path(self.prefix + path)

    def _open(self, path: bytes) -> Repository | None:
        """The populated submodule at ``path`` (None: not populated), opened once."""
        if path not in self._opened:
            self._opened[path] = self._repository(path) if populated_gitdir(self.top + path) else None
        return self._opened[path]

    def _repository(self, path: bytes, git_dir: str | None = None) -> Repository:
        """The submodule at ``path`` as a command run in it finds it
        (``prepare_submodule_repo_env``): from its ``.git``, or from
        ``git_dir`` with ``path`` as its work tree (one coming into being)."""
        from ..discovery import SetupEnv
        from ..odb import discover

        env = submodule_env(self.repo.environ)
        full = os.fsdecode(self.top + path)
        if git_dir is None:
            dirs = discover(full, env=SetupEnv(environ=env))
        else:
            dirs = discover(os.fsdecode(self.top), env=SetupEnv(git_dir=git_dir, work_tree=full, environ=env))
        repo = Repository(dirs, env)
        self._repos.append(repo)
        return repo

    def _sub_index(self, path: bytes, sub: Repository):
        """The submodule's index as the dry runs see it, read once."""
        if path not in self._indexes:
            self._indexes[path] = sub.read_index()
        return self._indexes[path]

    def _tree(self, sub: Repository, path: bytes, commit: bytes | None) -> TreeFiles:
        """A commit's tree in the submodule; a missing one stops the dry run
        as ``read-tree`` dies on it."""
        if commit is None:
            return EMPTY
        try:
            return sub.tree_of(commit)
        except Exception:  # noqa: BLE001 - missing or not a commit
            self.co.err.write(f"fatal: failed to unpack tree object {commit.decode()}\n"
                              f"error: Submodule '{self._shown(path)}' could not be updated.\n")
            raise MoveRefused from None

    def check(self, path: bytes, old: bytes | None, new: bytes | None) -> bool:
        """``check_submodule_move_head``: ``submodule_move_head`` as a dry run
        (``read-tree -n -m <old> <new>``, or ``--reset`` under ``-f``).

        ``old`` is a commit, ``b"HEAD"`` or None (the submodule comes into
        being); ``new`` a commit or None (it leaves). Not active, or not
        populated where an old head is asked for: nothing to check.
        """
        name = self._name(path)
        if name is None or not is_submodule_active(self.repo.config, name, path):
            return True
        sub = self._open(path)
        err = self.co.err
        if sub is None:
            # Not populated: only a submodule coming into being is looked at.
            # git's read-tree then runs in the directory there, if there is
            # one, with GIT_DIR=.git (prepare_submodule_repo_env): no repository.
            full = self.top + path
            if old is None and os.path.isdir(full) and not os.path.islink(full):
                err.write(f"fatal: not a git repository: '.git'\n"
                          f"error: Submodule '{self._shown(path)}' could not be updated.\n")
                return False
            return True
        try:
            if old is not None and not self.force and has_dirty_index(sub, self._sub_index(path, sub)):
                err.write(f"error: submodule '{self._shown(path)}' has dirty index\n")
                return False
            head = sub.head_commit() if old == b"HEAD" else old
            old_tree = self._tree(sub, path, head)
            new_tree = self._tree(sub, path, new)
        except MoveRefused:
            return False
        if self.force:
            return True
        from ..plan import PlanError
        from ..twoway import plan_switch

        index = self._sub_index(path, sub)
        try:
            # read-tree -n: no update, so no untracked-file checks, and no
            # refresh: a file whose stat data differ is not up to date.
            plan_switch(old_tree, new_tree, index.entries, os.fsencode(sub.worktree) + b"/", sub.hash_name,
                        lambda e: None, index.mtime_ns, lambda p: True, refreshed=True)
        except PlanError as e:
            err.write(e.first_plumbing_error(self.prefix + path + b"/") + "\n"
                      f"error: Submodule '{self._shown(path)}' could not be updated.\n")
            return False
        return True

    def plan_switch(self, head: dict, target: dict, index: dict[bytes, Entry]) -> None:
        """``twoway_merge``'s submodule checks for every gitlink a switch
        changes, then the moves themselves (:meth:`_prepare`)."""
        self._read_names(target, index, head)
        self._super_index = index
        for path in sorted(set(head) | set(target) | set(index)):
            h, t, cur = head.get(path), target.get(path), index.get(path)
            link_cur = cur is not None and cur.mode == S_IFGITLINK
            link_new = t is not None and value_mode(t) == S_IFGITLINK
            if not (link_cur or link_new) or h == t:
                continue
            if cur is not None and t is not None and not entry_differs(cur, t):
                continue
            if entry_differs(cur, h):
                continue  # reject_merge: the superproject's plan refuses it
            if self._name(path) is None and (not link_new or path not in self._update_names):
                continue
            exists = os.path.lexists(self.top + path)
            new = value_oid(t).hex().encode() if link_new else None
            if cur is None:  # merged_entry of a new entry: verify_absent, then the move
                if exists and not (self.check(path, new, None) and self.check(path, None, new)):
                    self.lose.append(path)
                    continue
            elif not link_cur:
                pass  # a file or directory becomes a submodule: the file's checks are the superproject's
            else:
                old = cur.oid.hex().encode()
                if t is None and exists and not self.check(path, old, None):  # verify_absent_if_directory
                    self.lose.append(path)
                    continue
                if exists and not self.check(path, b"HEAD", old):  # verify_uptodate_1
                    self.not_uptodate.append(path)
                    self.lose.append(path)
                    continue
                if link_new and exists and not self.check(path, old, new):  # merged_entry
                    self.lose.append(path)
                    continue
            self._add(path, new, replaced=link_cur and t is not None and not link_new)

    def plan_reset(self, target: dict, index: dict[bytes, Entry], head: dict) -> None:
        """``oneway_merge`` (``-f``): every active gitlink of the target is
        checked out again (``verify_uptodate`` is a no-op under reset, so
        CE_UPDATE is set even for unchanged ones), and those that leave go."""
        self._read_names(target, index, head)
        for path in sorted(set(target) | set(index)):
            t, cur = target.get(path), index.get(path)
            link_cur = cur is not None and cur.mode == S_IFGITLINK
            link_new = t is not None and value_mode(t) == S_IFGITLINK
            if not (link_cur or link_new) or (self._name(path) is None and path not in self._update_names):
                continue
            self._add(path, value_oid(t).hex().encode() if link_new else None)

    def plan_paths(self, links: list[Entry], index: dict[bytes, Entry]) -> None:
        """A path restore's gitlinks: each one's submodule reset to its commit
        (the ``.gitmodules`` there is, as ``checkout_paths`` reads it)."""
        self._names = self._update_names = submodule_names(self.repo, index, {})
        for e in links:
            if self._name(e.name) is not None:
                self._add(e.name, e.oid.hex().encode())

    def planned(self, plan_error=None):
        """The end of planning: every move prepared, unless something is
        already refused; the refusals (the superproject's ``plan_error``
        too) raised together; else these moves, or None when there are none."""
        if plan_error is None and not self.lose:
            self.prepare()
        if plan_error is not None or self.lose:
            self.close()
            raise self.refusal(plan_error)
        if not self.moves:
            self.close()
            return None
        return self

    def refusal(self, plan_error):
        """One PlanError of the superproject's refusals (``plan_error``, maybe
        None) and the submodules', in ``display_error_msgs`` order."""
        from ..plan import ERROR_WOULD_LOSE_SUBMODULE, ERROR_WOULD_OVERWRITE, PlanError

        groups: dict[str, tuple[str, list[bytes]]] = {}
        if plan_error is not None:
            for kind, (header, paths) in zip(plan_error.kinds, plan_error.pairs, strict=True):
                groups[kind] = (header, list(paths))
        if self.not_uptodate:
            groups.setdefault("not_uptodate", (ERROR_WOULD_OVERWRITE, []))[1].extend(self.not_uptodate)
        if self.lose:
            groups["submodule"] = (ERROR_WOULD_LOSE_SUBMODULE, self.lose)
        kinds = [k for k in ERROR_KINDS if k in groups]
        return PlanError([groups[k] for k in kinds], kinds)

    def apply_sparse(self, plan) -> None:
        """The sparse-checkout patterns over the moves (``apply_sparse_checkout``
        after ``unpack_trees``): a submodule the patterns now leave out is
        removed (CE_WT_REMOVE; git's removal is forced, ours keeps the checks
        of a leaving submodule), one they kept out is not moved."""
        removed = set(plan.remove)
        for path, move in list(self.moves.items()):
            e = plan.entries.get(path)
            if move.new is None or not (path in removed or e is None or e.extended_flags & 0x4000):
                continue
            if path not in removed:
                del self.moves[path]
                continue
            move.new = None
            self._prepare_or_lose(move)
        if self.lose:
            raise self.refusal(None)

    def _unsupported(self, path: bytes, what: str) -> None:
        from ..errors import CheckoutError

        raise CheckoutError(f"fatal: submodule '{self._shown(path)}' {what} (--recurse-submodules): "
                            "not supported by this command; use git checkout", 128)

    def _add(self, path: bytes, new: bytes | None, replaced: bool = False) -> None:
        """A move to plan; ``replaced``: the submodule leaves for a file,
        whose write would take whatever is left in its directory."""
        name = (self._update_names if new is not None else self._names).get(path)
        if name is None or not is_submodule_active(self.repo.config, name, path):
            return
        from ..discovery import is_git_directory

        gitdir = os.path.join(self.repo.dirs.gitdir, "modules", os.fsdecode(name))  # per worktree (path.c)
        move = Move(path, name, new, gitdir)
        move.replaced = replaced
        sub = self._open(path)
        if sub is None:
            if new is None:
                return  # unlink_entry: an unpopulated submodule is just its directory
            if not is_git_directory(gitdir):
                # Active but never cloned: git's read-tree would run in a
                # directory that is no repository.
                self._unsupported(path, "has no git directory (run git submodule update --init)")
            move.connect = move.fresh = True
        elif os.path.isdir(self.top + path + b"/.git"):
            if os.path.lexists(gitdir):  # relocate_gitdir's rename would fail
                self._unsupported(path, f"keeps its git directory in its work tree, and '{gitdir}' exists")
            move.absorb, move.connect = True, self.force
        else:
            move.connect = self.force
        self.moves[path] = move

    def prepare(self) -> None:
        """Plan every move in its submodule (nested submodules too); one that
        would lose a file or a change is refused like git's dry run."""
        from ..config import submodule_jobs_setting

        self._jobs = submodule_jobs_setting(self.repo.config, self.co.opts.online_cpus)  # a bad value: before any change
        for move in list(self.moves.values()):
            self._prepare_or_lose(move)

    def _prepare_or_lose(self, move: Move) -> None:
        try:
            self._prepare(move)
        except MoveRefused:
            self.lose.append(move.path)
            del self.moves[move.path]

    def _prepare(self, move: Move) -> None:
        from ..oneway import plan_reset
        from ..plan import PlanError
        from ..record import replace
        from ..twoway import plan_switch

        path, parent = move.path, self.co
        sub = self._open(path)
        if sub is None:  # coming into being: its git dir, with the work tree it will have
            sub = self._repository(path, move.gitdir)
        move.repo = sub
        opts = replace(parent.opts, force=self.force, quiet=True, progress=False, recurse_submodules=True,
                       ignore_other_worktrees=True)
        co = Checkout(sub, opts, parent.err, parent.trace)
        old = sub.read_index(parent.err.write)
        if move.fresh:
            old.entries = {}  # submodule_reset_index: read-tree --reset <empty tree>
        move.head, move.head_symbolic = sub.head_commit(), sub.head_ref() is not None
        head = None if move.fresh else move.head
        target = self._tree(sub, path, move.new)
        head_tree = self._tree(sub, path, head)
        co.setup_attributes(target, old.entries)
        try:
            if self.force:
                plan = plan_reset(target, old.entries, co.top, sub.hash_name, co.to_worktree, old.mtime_ns,
                                  core=co.core, to_git=co.to_git)
            else:
                # A directory of the superproject's files becoming a submodule:
                # those files are removed before the move writes its own.
                leaving = {p[len(path) + 1:] for p in self._super_index if p.startswith(path + b"/")}
                ignored = ignore_matcher(sub, old.entries)
                in_subdir = ignore_matcher(sub, old.entries, per_directory_only=True)
                plan = plan_switch(head_tree, target, old.entries, co.top, sub.hash_name, co.to_worktree,
                                   old.mtime_ns, lambda p: p in leaving or ignored(p), core=co.core,
                                   to_git=co.to_git, ignored_in_subdir=lambda p: p in leaving or in_subdir(p),
                                   refreshed=True)
        except PlanError as e:
            parent.err.write(e.first_plumbing_error(self.prefix + path + b"/") + "\n"
                             f"error: Submodule '{self._shown(path)}' could not be updated.\n")
            raise MoveRefused from None
        if move.replaced and not self.force:
            self._refuse_untracked(move, sub, old.entries)
        nested = SubmoduleMoves(co, self.force, self.prefix + path + b"/")
        if self.force:
            nested.plan_reset(target.files, old.entries, head_tree.files)
        else:
            nested.plan_switch(head_tree.files, target.files, old.entries)
        nested.prepare()
        if nested.lose or not nested.moves:
            nested.close()  # what its dry runs opened (a nested checkout closes its own)
        if nested.lose:  # read-tree's plumbing message for the first, then ours
            parent.err.write(f"error: Submodule '{show_path(nested.prefix + min(nested.lose))}' cannot checkout "
                             f"new HEAD.\nerror: Submodule '{self._shown(path)}' could not be updated.\n")
            raise MoveRefused
        if move.absorb and nested.moves:
            self._unsupported(path, "keeps its git directory in its work tree and has submodules to move")
        co.submodules = nested if nested.moves else None
        apply_sparse(co, plan, old.entries, sub.sparse_checkout())
        move.co, move.old, move.plan, move.target, move.nested = co, old, plan, target, nested

    def _refuse_untracked(self, move: Move, sub: Repository, index: dict[bytes, Entry]) -> None:
        """A submodule that leaves for a file: the file's write removes its
        directory with whatever the removal left (ignored files go, as with
        git); an untracked file would be lost, so it refuses the checkout."""
        ignored = ignore_matcher(sub, index)
        top = os.fsencode(sub.worktree)
        for root, dirs, files in os.walk(top):
            rel = os.path.relpath(root, top)
            base = b"" if rel == b"." else rel + b"/"
            dirs[:] = sorted(d for d in dirs if not (base == b"" and d == b".git") and not ignored(base + d))
            for f in sorted(files):
                p = base + f
                if p not in index and not (base == b"" and f == b".git") and not ignored(p):
                    self.co.err.write(f"error: Untracked working tree file '{show_path(self.prefix + move.path + b'/' + p)}' "
                                      f"would be removed by merge.\n"
                                      f"error: Submodule '{self._shown(move.path)}' could not be updated.\n")
                    raise MoveRefused

    # --- carrying them out ---------------------------------------------------

    def remove(self) -> None:
        """The submodules that leave (``unlink_entry``), before the
        superproject removes their directories."""
        for move in self.moves.values():
            if move.new is None:
                self._run(move)

    def start(self) -> None:
        """Beyond git (``checkout.submoduleJobs`` > 1): the submodules that
        stay or arrive start moving in threads once the superproject has made
        their directories, while its own helpers write its files. Their
        helpers are exec'd, not forked: a fork from a thread would copy
        locks other threads hold. Measured with 4 submodules of 1,500 files
        and a superproject of 1,000, ``checkout.workers=2``, 2 cores: 1.38x
        slower on tmpfs (the exec'd helpers' start-up), about twice as fast
        at 1 ms a request. So it is not the default."""
        todo = [m for m in self.moves.values() if m.new is not None]
        jobs = min(self._jobs, len(todo))
        if jobs < 2 or self._pool is not None:
            return
        from concurrent.futures import ThreadPoolExecutor

        from ..record import replace

        for m in todo:
            m.co.opts = replace(m.co.opts, fork_helpers=False)
        self._pool = ThreadPoolExecutor(jobs, thread_name_prefix="submodule")
        self._futures = [self._pool.submit(self._run, m) for m in todo]

    def update(self) -> None:
        """The submodules that stay or arrive, after the superproject's files
        (``checkout_entry`` of each gitlink), or the end of those
        :meth:`start` set moving."""
        if self._pool is not None:
            try:
                for f in self._futures:
                    f.result()
            finally:
                self._pool.shutdown()
                self._pool = None
            return
        for move in self.moves.values():
            if move.new is not None:
                self._run(move)

    def finish(self) -> None:
        """The checkout's end, or a failure elsewhere: no move left running,
        and every submodule opened here closed (an API caller's process
        keeps no pack open for them)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        self.close()

    def close(self) -> None:
        """Every submodule this planner opened, closed once."""
        for repo in self._repos:
            repo.close()
        self._repos.clear()
        self._opened.clear()

    def _absorb(self, move: Move) -> Repository:
        """``absorb_git_dir_into_superproject`` (``relocate_gitdir``): the
        submodule's ``.git`` directory moved to its git dir in the
        superproject and connected to the work tree, with git's message;
        the submodule opened again there."""
        full = self.top + move.path
        old, new = os.path.realpath(os.fsdecode(full + b"/.git")), os.path.realpath(move.gitdir)
        self.co.err.write(f"Migrating git directory of '{self._shown(move.path)}' from\n'{old}' to\n'{new}'\n")
        move.repo.close()  # (closed again by close(): a no-op)
        os.makedirs(os.path.dirname(new), exist_ok=True)
        os.rename(old, new)
        connect_work_tree_and_git_dir(full, new)
        move.repo = move.co.repo = self._repository(move.path)
        move.absorb = False
        return move.repo

    def _run(self, move: Move) -> None:
        from ..index import IndexLock

        co, sub, path = move.co, move.repo, move.path
        full = self.top + path
        try:
            if move.absorb:
                sub = self._absorb(move)
            if move.new is not None:
                os.makedirs(full, exist_ok=True)
                if move.connect:
                    connect_work_tree_and_git_dir(full, move.gitdir)
            lock = IndexLock(sub.dirs.index_path)
            try:
                _execute(co, move.plan, co.opts, co.err)
                if co.errors:  # each printed: the submodule's index stays as it was
                    lock.rollback()
                    self.co.error(f"Submodule '{self._shown(path)}' could not be updated.")
                    return
                write_index(co, lock, move.plan, move.target, move.old)
            except BaseException:
                lock.rollback()
                raise
            if move.new is not None:
                if move.head != move.new or move.head_symbolic:
                    sub.update_head(move.new, None, b"")  # update-ref --no-deref HEAD <new>
            else:
                try:
                    os.unlink(os.path.join(full, b".git"))
                except FileNotFoundError:
                    pass
                try:
                    os.rmdir(full)
                except OSError:
                    pass  # untracked files stay; the superproject's rmdir says so
                if not move.replaced:  # (a file's write removes the directory; git unsets nothing then)
                    set_core_worktree(os.path.join(move.gitdir, "config"), None)
        except OSError as ex:
            self.co.err.write(f"error: {self._shown(path)}: {ex.strerror}\n")
            self.co.error(f"Submodule '{self._shown(path)}' could not be updated.")
