"""Preparing targets, timing runs, interleaving peers. See the package docstring."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import msgspec

from git_checkout_helper.fsinfo import mount_of

from .autorow import auto_tool
from .options import Options

PEERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers.py")
RUN_TIMEOUT = 1800.0


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# -- results ---------------------------------------------------------------------


class Cell(msgspec.Struct):
    """One tool on one operation and filesystem: every timed run."""

    fs: str
    op: str
    tool: str
    family: str
    workers: int | None
    label: str
    ratio_ref: str | None = None  # the git row this one is divided by, round by round
    rounds: list[int] = msgspec.field(default_factory=list)
    seconds: list[float] = msgspec.field(default_factory=list)
    cpu_seconds: list[float] = msgspec.field(default_factory=list)  # the process and its waited children
    fs_daemon_cpu_seconds: list[float] = msgspec.field(default_factory=list)  # latencyfs only
    #: wait4's ru_maxrss: the peak RSS of the largest process of the run's tree
    #: (our coordinator, or a helper if one grew larger), in KiB.
    max_rss_kib: list[int] = msgspec.field(default_factory=list)
    median: float | None = None
    min: float | None = None
    max: float | None = None
    ratio_vs_git: float | None = None
    verified: str | None = None  # "clean", or what looked wrong after the first run
    error: str | None = None
    skipped: str | None = None


# -- tools ------------------------------------------------------------------------


@dataclass
class Tool:
    key: str
    family: str
    workers: int | None
    label: str
    ratio_ref: str | None
    ops: tuple[str, ...] = ("clone", "far", "near")


def _ours_commands() -> tuple[dict[str, str], str | None]:
    """Paths of git-parallel-checkout/-clone, or why ours cannot run."""
    where = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    found = {}
    for name in ("git-parallel-checkout", "git-parallel-clone"):
        path = shutil.which(name, path=where)
        if path is None:
            return {}, f"{name} is not installed (pip install -e . ; has the coordinator landed?)"
        try:
            p = subprocess.run([path, "-h"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {}, f"{name} -h failed: {e}"
        if "--threshold" not in p.stdout + p.stderr:
            tail = (p.stderr.strip().splitlines() or ["no usage text"])[-1]
            return {}, f"{name} does not take --threshold ({tail})"
        found[name] = path
    return found, None


def make_tools(fs: str, opts: Options) -> list[Tool]:
    workers = opts.latency_workers if fs == "latency" else opts.workers
    tools: list[Tool] = []
    for w in workers:
        if "ours" in opts.tools:
            label = "ours, sequential (-j 1)" if w == 1 else f"ours, -j {w}"
            tools.append(Tool(f"ours-j{w}", "ours", w, label, f"git-w{w}" if "git" in opts.tools else None))
    auto = auto_tool(Tool, opts)  # checkout.workers=auto (autorow.py)
    if auto is not None:
        tools.append(auto)
    for w in workers:
        if "git" in opts.tools:
            tools.append(Tool(f"git-w{w}", "git", w, f"git, checkout.workers={w}", None))
    if fs != "latency":
        ref = "git-w1" if "git" in opts.tools and 1 in workers else None
        if "dulwich" in opts.tools:
            tools.append(Tool("dulwich", "dulwich", None, "dulwich", ref))
        if "pygit2" in opts.tools:
            tools.append(Tool("pygit2", "pygit2", None, "pygit2 (libgit2)", ref))
        if "tar" in opts.tools:
            tools.append(Tool("tar", "tar", None, "tar -x of the same files (floor)", ref, ("clone",)))
    return tools


# -- filesystems -----------------------------------------------------------------


@dataclass
class Condition:
    """Where one filesystem's targets are prepared (``prep_root``) and timed (``run_root``)."""

    name: str
    prep_root: str
    run_root: str
    source: str  # the repository clones are made from, on the same filesystem as prep_root
    source_run: str  # the same repository as seen from run_root (the whole-clone mode)
    description: str
    daemon: subprocess.Popen | None = None
    trash_bytes: int = 0
    serial: int = 0


def fs_type(path: str) -> tuple[str, str, str]:
    """(filesystem type, source device, mount options) of the mount holding ``path``.
    The options go into the report: ext4's ``discard`` without a journal, for one,
    makes every unlink wait for the device (switches then cost far more on disk)."""
    m = mount_of(path)
    if m is None:
        return "?", "?", ""
    opts = ",".join(dict.fromkeys(f"{m.mount_options},{m.super_options}".split(",")))
    return m.fstype, m.source, opts


def _find_tmpfs(work: str, notes: list[str]) -> str | None:
    for cand in ("/dev/shm", "/run/shm"):
        if os.path.isdir(cand) and fs_type(cand)[0] == "tmpfs" and os.access(cand, os.W_OK):
            return tempfile.mkdtemp(prefix="gch-bench-", dir=cand)
    mnt = os.path.join(work, "tmpfs")
    os.makedirs(mnt, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=50%", "gch-bench", mnt], capture_output=True, text=True)
    if p.returncode == 0:
        return mnt
    notes.append(f"tmpfs skipped: no writable /dev/shm and mounting one failed ({p.stderr.strip()})")
    return None


# -- commands ---------------------------------------------------------------------


def git_env(home: str) -> dict[str, str]:
    """The environment of every git and tool run: no user or system config (a developer's
    ``checkout.workers`` or ``core.fsmonitor`` must not leak into the figures), C locale."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    return env


def git(env, cwd: str, *args: str) -> str:
    p = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} (in {cwd}) failed: {p.stderr.strip()}")
    return p.stdout


@dataclass
class Timed:
    seconds: float
    cpu: float
    daemon_cpu: float | None
    max_rss_kib: int
    rc: int
    err: str


def _proc_cpu(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def time_run(cmd: list[str], cwd: str, env, daemon: subprocess.Popen | None) -> Timed:
    """Whole-process wall time (fork/exec and interpreter start-up included)."""
    with tempfile.TemporaryFile() as errf:
        d0 = _proc_cpu(daemon.pid) if daemon else None
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=errf)
        timer = threading.Timer(RUN_TIMEOUT, p.kill)
        timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        t1 = time.perf_counter()
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        d1 = _proc_cpu(daemon.pid) if daemon else None
        errf.seek(0)
        err = errf.read()[-4000:].decode("utf-8", "replace")
    dcpu = d1 - d0 if d0 is not None and d1 is not None else None
    return Timed(t1 - t0, ru.ru_utime + ru.ru_stime, dcpu, ru.ru_maxrss, p.returncode, err)


# -- the run ----------------------------------------------------------------------


@dataclass
class Source:
    """The repository under test and what the three operations do with it."""

    path: str
    head: str  # what the switches move to (a branch name when there is one)
    old: str | None
    recent: str | None
    head_commit: str = ""
    description: dict = field(default_factory=dict)


class Bench:
    def __init__(self, opts: Options, source: Source, work: str, notes: list[str]) -> None:
        self.opts = opts
        self.source = source
        self.work = work
        self.notes = notes
        self.home = os.path.join(work, "home")
        os.makedirs(self.home, exist_ok=True)
        self.env = git_env(self.home)
        self.ours, self.ours_missing = _ours_commands() if "ours" in opts.tools else ({}, None)
        if self.ours_missing:
            notes.append(f"ours skipped: {self.ours_missing}")
        self.pygit2_missing = None
        if "pygit2" in opts.tools and importlib.util.find_spec("pygit2") is None:
            self.pygit2_missing = "pygit2 is not installed (pip install pygit2)"
            notes.append(f"pygit2 skipped: {self.pygit2_missing}")
        self.tar_missing = None if shutil.which("tar") else "tar is not installed"
        self.tarball = None
        self.cells: list[Cell] = []
        self.bytes_per_target = max(1, int(source.description.get("bytes", 0)))
        self.files_per_target = max(1, int(source.description.get("files", 1)))

    # -- conditions --
    def conditions(self, stack: contextlib.ExitStack) -> list[Condition]:
        out = []
        for name in self.opts.filesystems:
            try:
                cond = self._condition(name, stack)
            except Exception as e:  # a condition that cannot be set up is skipped, with why
                self.notes.append(f"{name} skipped: {e}")
                log(f"bench: {name} skipped: {e}")
                continue
            if cond is not None:
                out.append(cond)
        return out

    def _condition(self, name: str, stack: contextlib.ExitStack) -> Condition | None:
        src = self.source.path
        if name == "disk":
            root = os.path.join(self.work, "disk")
            os.makedirs(root)
            local = self._local_source(src, root)
            t, dev, mopts = fs_type(root)
            return Condition(name, root, root, local, local, f"{t} on {dev} ({mopts}) at {root}")
        if name == "tmpfs":
            root = _find_tmpfs(self.work, self.notes)
            if root is None:
                return None
            stack.callback(_remove_tree, root, unmount=fs_type(root)[1] == "gch-bench")
            local = os.path.join(root, "source.git")
            log(f"bench: copying the repository to tmpfs ({root})")
            git(self.env, root, "clone", "-q", "--bare", src, local)  # another device: a file copy
            return Condition(name, root, root, local, local, f"tmpfs ({root})")
        if name == "latency":
            from .latencyfs import available, mounted

            why = available()
            if why:
                raise RuntimeError(why)
            backing = os.path.join(self.work, "latency-backing")
            mnt = os.path.join(self.work, "latency-mnt")
            os.makedirs(backing)
            local = self._local_source(src, backing)
            daemon = stack.enter_context(mounted(backing, mnt, self.opts.latency_ms))
            t, dev, mopts = fs_type(backing)
            src_run = os.path.join(mnt, os.path.relpath(local, backing)) if local.startswith(backing + "/") \
                else local
            return Condition(name, backing, mnt, local, src_run,
                             f"FUSE passthrough adding {self.opts.latency_ms:g} ms per request, over {t} on {dev} ({mopts})",
                             daemon=daemon)
        raise ValueError(name)

    def _local_source(self, src: str, root: str) -> str:
        """The source itself when on root's filesystem (clones then hard-link its
        objects, as a local ``git clone`` does); else a bare copy made once. In the
        whole-clone mode the copy is always made inside root, so that the timed
        clone's source is on the filesystem under test."""
        if self.opts.clone_mode == "checkout" and os.stat(src).st_dev == os.stat(root).st_dev:
            return src
        local = os.path.join(root, "source.git")
        git(self.env, root, "clone", "-q", "--bare", src, local)
        return local

    # -- preparation (outside timing) --
    def prepare(self, cond: Condition, op: str, tool: Tool, rnd: int) -> tuple[str, str]:
        cond.serial += 1
        name = f"{op}-{tool.key}-r{rnd}-{cond.serial}"
        parent = os.path.join(cond.prep_root, "t")
        os.makedirs(parent, exist_ok=True)
        prep = os.path.join(parent, name)
        run = os.path.join(cond.run_root, "t", name)
        if op == "clone":
            if tool.family == "tar":
                os.mkdir(prep)
            elif self.opts.clone_mode == "checkout":
                git(self.env, parent, "clone", "-q", "--no-checkout", cond.source, prep)
            return prep, run
        git(self.env, parent, "clone", "-q", "--no-checkout", cond.source, prep)
        start = self.source.old if op == "far" else self.source.recent
        git(self.env, prep, "-c", "checkout.workers=0", "checkout", "-q", start)
        # A work tree checked out a while ago, not a racily clean one: with the index
        # as new as the files, git (and we, and libgit2) would re-read every file
        # written in the index's second to compare contents. A later index mtime
        # is what a `git status` a second later would leave.
        index = os.path.join(prep, ".git", "index")
        future = time.time() + 2
        os.utime(index, (future, future))
        return prep, run

    def command(self, cond: Condition, op: str, tool: Tool, run: str) -> tuple[list[str], str]:
        """(argv, cwd) of one timed run."""
        whole = op == "clone" and self.opts.clone_mode == "whole"
        head = self.source.head
        n = "auto" if tool.workers is None else str(tool.workers)
        parent = os.path.dirname(run)
        if tool.family == "git":
            cfg = ["git", "-c", f"checkout.workers={n}", "-c", "checkout.thresholdForParallelism=0"]
            if whole:
                return [*cfg, "clone", "-q", cond.source_run, run], parent
            if op == "clone":
                return [*cfg, "checkout", "-q", "-f", "HEAD"], run
            return [*cfg, "checkout", "-q", head], run
        if tool.family == "ours":
            # -j auto keeps its own threshold (autoworkers.py); fixed rows have none.
            thr = [] if tool.workers is None else ["--threshold", "0"]
            if whole:
                return [self.ours["git-parallel-clone"], "-j", n, "-q", *thr, cond.source_run, run], parent
            cmd = [self.ours["git-parallel-checkout"], "-j", n, "-q", *thr]
            return ([*cmd, "-f", "HEAD"] if op == "clone" else [*cmd, head]), run
        if tool.family in ("dulwich", "pygit2"):
            py = [sys.executable, "-I", PEERS, tool.family]  # -I: the bench directory is not on sys.path
            if whole:
                return [*py, "whole", cond.source_run, run], parent
            return ([*py, "clone"] if op == "clone" else [*py, "switch", head]), run
        if tool.family == "tar":
            return ["tar", "-x", "-m", "--no-same-owner", "--no-same-permissions", "-f", self.tarball], run
        raise ValueError(tool.family)

    def skip_reason(self, tool: Tool) -> str | None:
        if tool.family == "ours":
            return self.ours_missing
        if tool.family == "pygit2":
            return self.pygit2_missing
        if tool.family == "tar":
            return self.tar_missing
        return None

    # -- verification (outside timing, first successful run of each cell) --
    def verify(self, op: str, tool: Tool, prep: str) -> str:
        if tool.family == "tar":
            n = sum(len(fs) + sum(1 for d in ds if os.path.islink(os.path.join(r, d)))
                    for r, ds, fs in os.walk(prep))
            want = self.source.description.get("entries")
            return "clean" if want is None or n == want else f"{n} entries written, {want} expected"
        problems = []
        head = subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=prep, env=self.env,
                              capture_output=True, text=True).stdout.strip()
        if head != self.source.head_commit:
            problems.append(f"HEAD is {head[:12] or 'unborn'}, not {self.source.head_commit[:12]}")
        st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=prep, env=self.env,
                            capture_output=True, text=True)
        if st.returncode != 0:
            problems.append("git status failed: " + (st.stderr.strip().splitlines() or [""])[-1])
        elif st.stdout.strip():
            lines = st.stdout.splitlines()
            problems.append(f"git status lists {len(lines)} paths, e.g. " + "; ".join(x.strip() for x in lines[:3]))
        return "; ".join(problems) or "clean"

    # -- trash: old targets are moved aside, deleted later (see the package docstring) --
    def discard(self, cond: Condition, prep: str) -> None:
        trash = os.path.join(cond.prep_root, "trash")
        os.makedirs(trash, exist_ok=True)
        if os.path.lexists(prep):
            os.rename(prep, os.path.join(trash, os.path.basename(prep)))
        cond.trash_bytes += self.bytes_per_target

    def maybe_empty_trash(self, cond: Condition, force: bool = False) -> None:
        limit = 2 << 30 if cond.name == "tmpfs" else 20 << 30
        if force or cond.trash_bytes > limit:
            trash = os.path.join(cond.prep_root, "trash")
            if os.path.isdir(trash):
                subprocess.run(["rm", "-rf", trash])
            cond.trash_bytes = 0
            os.sync()

    # -- the loop --
    def run_condition(self, cond: Condition) -> None:
        if any(op == "clone" for op in self.opts.ops) and "tar" in self.opts.tools and self.tarball is None:
            self.tarball = os.path.join(self.work, "head.tar")
            git(self.env, self.source.path, "archive", "--format=tar", "-o", self.tarball, self.source.head_commit)
        tools = make_tools(cond.name, self.opts)
        for op in self.opts.ops:
            if op in ("far", "near") and not (self.source.old if op == "far" else self.source.recent):
                continue
            cells = {}
            for t in tools:
                if op not in t.ops:
                    continue
                cell = Cell(cond.name, op, t.key, t.family, t.workers, t.label, t.ratio_ref)
                cell.skipped = self.skip_reason(t)
                cells[t.key] = cell
                self.cells.append(cell)
            active = [t for t in tools if t.key in cells and cells[t.key].skipped is None]
            for rnd in range(self.opts.runs):
                order = active[:]
                random.Random(f"{self.opts.seed}/{cond.name}/{op}/{rnd}").shuffle(order)
                order = [t for t in order if cells[t.key].error is None]
                if not order:
                    break
                prepared = {}
                for t in order:
                    try:
                        prepared[t.key] = self.prepare(cond, op, t, rnd)
                    except RuntimeError as e:
                        cells[t.key].error = f"preparation failed: {e}"
                for t in order:
                    if t.key not in prepared:
                        continue
                    prep, run = prepared[t.key]
                    cmd, cwd = self.command(cond, op, t, run)
                    os.sync()  # the previous run's dirty pages must not be written back during this one
                    r = time_run(cmd, cwd, self.env, cond.daemon)
                    cell = cells[t.key]
                    if r.rc != 0:
                        tail = " ".join(r.err.strip().splitlines()[-2:]) or "no message"
                        cell.error = f"exit {r.rc}: {tail}"[:400]
                        log(f"  [{cond.name} {op} {rnd + 1}/{self.opts.runs}] {t.key}: FAILED {cell.error}")
                        continue
                    cell.rounds.append(rnd)
                    cell.seconds.append(round(r.seconds, 6))
                    cell.cpu_seconds.append(round(r.cpu, 4))
                    cell.max_rss_kib.append(r.max_rss_kib)
                    if r.daemon_cpu is not None:
                        cell.fs_daemon_cpu_seconds.append(round(r.daemon_cpu, 3))
                    if cell.verified is None:
                        cell.verified = self.verify(op, t, prep)
                    log(f"  [{cond.name} {op} {rnd + 1}/{self.opts.runs}] {t.key}: {r.seconds:.3f}s")
                for prep, _run in prepared.values():
                    self.discard(cond, prep)
                self.maybe_empty_trash(cond)
            self.maybe_empty_trash(cond, force=True)


def _remove_tree(path: str, unmount: bool = False) -> None:
    if unmount:
        subprocess.run(["umount", path], capture_output=True)
    subprocess.run(["rm", "-rf", path])
