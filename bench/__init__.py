"""The checkout benchmark: ``make bench`` / ``python -m bench``.

What it measures: three operations on one repository, each by every tool and
worker count, on up to three filesystems, and writes ``results.md`` (the table),
``results.json`` (every run, msgspec) and ``speedup.png`` (matplotlib, if
installed) into ``bench-results/<date-time>/`` (``bench-results/latest`` points to
the last one). ``python -m bench -h`` lists the settings
(environment ``BENCH_*`` or options).

Decisions, and why:

* **Input.** By default a repository the bench makes itself
  (:mod:`bench.samplerepo`: 5,000 files shaped like a real project,
  with a history stored as deltas, tags for the far and near switches; 100,000
  files with ``BENCH_SCALE=large``), cached under ``bench-results/cache`` keyed by
  generator version, size and seed, so a fresh clone needs nothing else and
  every machine measures the same bytes. ``BENCH_REPO`` and ``OLD RECENT
  [HEAD]`` on the command line measure a real one (git.git: ``v2.0.0 v2.51.0``).
* **Operations.** *clone*: by default the checkout step of a clone only: the
  target is a ``git clone --no-checkout`` (objects hard-linked, no index, HEAD
  on the branch) made outside the timing, and the timed command fills the empty
  work tree: git ``checkout -f HEAD`` (``reset_tree``: the same oneway merge
  with reset that ``builtin/clone.c`` runs), ours ``git-parallel-checkout -f
  HEAD``, dulwich ``build_index_from_tree``, pygit2 ``checkout_head(FORCE)``, and
  ``tar -x`` of ``git archive HEAD`` as the floor (no inflate, no index). This
  isolates what parallel checkout changes and is the only form every peer
  has; ``BENCH_CLONE=whole`` times whole local clones instead (git clone,
  git-parallel-clone, porcelain.clone, clone_repository). *far* and *near*: a
  work tree checked out at the old (resp. recent) tag outside the timing, then
  the timed switch to HEAD's branch (git ``checkout``, ours
  ``git-parallel-checkout``, dulwich ``porcelain.checkout``, pygit2
  ``checkout(ref)``).
* **Timing.** Whole processes, interpreter start-up included, as in
  baselines.md: that is what a user waits for. Git and ours get
  ``thresholdForParallelism=0`` so that the worker count asked for is the one
  used. No user or system git config, HOME empty (a developer's
  ``checkout.workers`` must not leak in). CPU time (the process and the
  children it waited for, helpers included) is recorded in the JSON.
* **Fresh targets.** Every run gets its own target, prepared before the round
  starts; ``sync`` runs before each timed run so that the previous run's
  write-back does not land in this one. Used targets are moved aside and
  deleted only at the end of each operation (or when 20 GB pile up; on tmpfs
  2 GB), then ``sync``: on ext4 without a journal, creating thousands of files
  right after deleting thousands is several times slower (baselines.md).
  Prepared switch work trees get an index mtime 2 s ahead, as if the checkout
  had happened a while ago; otherwise every file would be racily clean and each
  tool would re-read contents the real case never re-reads.
* **Interleaving.** Each round runs every tool once, in an order shuffled per
  round (seeded: reproducible); ratios against git are taken per round, then the
  median. On a shared 2-core machine a burst of someone else's work then lands
  on one round of every tool instead of on all runs of one tool.
* **Filesystems.** *disk*: ``bench-results/work-<pid>`` (``BENCH_DIR``). *tmpfs*:
  ``/dev/shm`` or a tmpfs the bench mounts (skipped with a note if neither),
  with its own copy of the source so that clones hard-link there too.
  The table names each filesystem's mount options: on these machines the disk
  is ext4 with ``discard`` and no journal, where each unlink waits about a
  millisecond for the device, so switches on disk are dominated by removing the
  old files (strace of git's far switch: 2,776 unlinks, 3.3 s of 6 s), a step
  git and our coordinator both do sequentially; judge parallelism on tmpfs.
  *latency*: :mod:`.latencyfs`, a multi-threaded FUSE passthrough adding
  ``BENCH_LATENCY_MS`` (1 ms) to every request, standing in for NFS; only ours and
  git run there, at 1 to 64 workers. Targets are prepared in its backing
  directory at full speed and timed through the mount.
* **Correctness.** After the first successful run of each cell, outside timing:
  HEAD must be the expected commit and ``git status --porcelain`` empty (tar:
  the number of entries written); anything else is footnoted in the table.
* **Skips.** A tool that is not installed (ours before the coordinator lands,
  pygit2) keeps its rows, marked skipped, with the reason under the table; a
  tool that fails a run is marked failed with its message and not run again in
  that cell.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import time

__all__ = ["main"]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "?"


def describe(env, path: str, head: str, revs: dict[str, str | None]) -> dict:
    """Counts of HEAD's tree, its delta share and what each switch changes."""
    from .runner import git

    files = execs = links = gitlinks = size = 0
    dirs: set[str] = set()
    blobs = []
    for line in git(env, path, "ls-tree", "-r", "-l", "-z", head).split("\0"):
        if not line:
            continue
        meta, name = line.split("\t", 1)
        mode, typ, oid, sz = meta.split()
        parent = name.rpartition("/")[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
        if mode == "160000":
            gitlinks += 1
            continue
        if mode == "120000":
            links += 1
        else:
            files += 1
            execs += mode == "100755"
            size += int(sz)
        blobs.append(oid)
    p = subprocess.run(["git", "cat-file", "--batch-check=%(deltabase)", "--buffer"], cwd=path, env=env,
                       input="\n".join(blobs) + "\n", capture_output=True, text=True, check=True)
    deltas = sum(1 for x in p.stdout.split() if x.strip("0"))
    out = {"files": files, "executables": execs, "symlinks": links, "gitlinks": gitlinks, "dirs": len(dirs),
           "bytes": size, "entries": files + links, "delta_share": round(deltas / max(1, len(blobs)), 3)}
    for op, rev in revs.items():
        if not rev:
            continue
        counts = {"A": 0, "M": 0, "D": 0, "T": 0}
        diff = git(env, path, "diff", "--name-status", "--no-renames", "-z", rev, head).split("\0")
        for st in diff[0::2]:
            if st:
                counts[st[0]] = counts.get(st[0], 0) + 1
        out[op] = {"from": rev, "to": head, "added": counts["A"], "changed": counts["M"] + counts["T"],
                   "deleted": counts["D"]}
    return out


def _sample_source(opts, env):
    from .runner import Source, log
    from .samplerepo import GENERATOR_VERSION, HEAD_BRANCH, OLD_TAG, RECENT_TAG, make_sample_repo

    path = os.path.join(opts.cache_dir, f"sample-g{GENERATOR_VERSION}-{opts.files}-s{opts.seed}.git")
    if not os.path.isdir(path):
        log(f"bench: generating the sample repository ({opts.files:,} files) into {path}")
        tmp = f"{path}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.perf_counter()
        make_sample_repo(tmp, files=opts.files, seed=opts.seed)
        os.rename(tmp, path)
        log(f"bench: generated in {time.perf_counter() - t0:.1f}s")
    return Source(path, HEAD_BRANCH, OLD_TAG, RECENT_TAG)


def _repo_source(opts, env):
    from .runner import Source, git

    path = opts.repo
    git(env, path, "rev-parse", "--git-dir")
    if len(opts.revs) == 3:
        head = opts.revs[2]
    else:
        p = subprocess.run(["git", "symbolic-ref", "-q", "--short", "HEAD"], cwd=path, env=env,
                           capture_output=True, text=True)
        head = p.stdout.strip() or git(env, path, "rev-parse", "HEAD").strip()
    old, recent = (opts.revs + [None, None])[:2]
    return Source(path, head, old, recent)


def _clean_stale(results_dir: str) -> None:
    """Work directories of bench runs that died (their pid is gone)."""
    from .latencyfs import _unmount

    if not os.path.isdir(results_dir):
        return
    for name in os.listdir(results_dir):
        if not name.startswith("work-"):
            continue
        try:
            pid = int(name[5:])
            os.kill(pid, 0)
            continue  # still running
        except (ValueError, ProcessLookupError):
            pass
        except PermissionError:
            continue
        d = os.path.join(results_dir, name)
        for sub in ("latency-mnt", "tmpfs"):
            m = os.path.join(d, sub)
            if os.path.ismount(m):
                _unmount(m)
        subprocess.run(["rm", "-rf", d])


def main(argv: list[str] | None = None) -> int:
    from . import options, report
    from .runner import Bench, git_env, log, make_tools

    opts = options.parse(sys.argv[1:] if argv is None else argv)
    if opts.filter_bench:
        from .filters import main as filter_main

        return filter_main(opts)
    if opts.scenario == "distribution":
        from .distribution import main as distribution_main

        return distribution_main(opts)
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_start = _load()
    notes: list[str] = []
    if shutil.which("git") is None:
        sys.stderr.write("bench: git is needed to prepare targets\n")
        return 1
    results_dir = os.path.abspath("bench-results")
    _clean_stale(results_dir)
    # A directory of our own (BENCH_DIR may name one that holds other things): it is
    # deleted whole at the end.
    work = (os.path.join(opts.work_dir, f"gch-bench-{os.getpid()}") if opts.work_dir
            else os.path.join(results_dir, f"work-{os.getpid()}"))
    os.makedirs(work, exist_ok=True)
    env = git_env(os.path.join(work, "home"))
    os.makedirs(os.path.join(work, "home"), exist_ok=True)

    source = _repo_source(opts, env) if opts.repo else _sample_source(opts, env)
    from .runner import git

    source.head_commit = git(env, source.path, "rev-parse", f"{source.head}^{{commit}}").strip()
    source.description = describe(env, source.path, source.head, {"far": source.old, "near": source.recent})
    source.description["name"] = (os.path.basename(opts.repo.rstrip("/")) if opts.repo
                                  else f"sample repository ({opts.files:,} files, seed {opts.seed})")

    bench = Bench(opts, source, work, notes)
    filesystems: dict[str, str] = {}
    ok = True
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(subprocess.run, ["rm", "-rf", work])
            conds = bench.conditions(stack)
            n_runs = sum(len([t for t in make_tools(c.name, opts) if op in t.ops]) for c in conds
                         for op in opts.ops) * opts.runs
            log(f"bench: {n_runs} timed runs over {', '.join(c.name for c in conds) or 'nothing'}; "
                f"results into {opts.out}")
            for cond in conds:
                filesystems[cond.name] = cond.description
                log(f"bench: {cond.name}: {cond.description}")
                bench.run_condition(cond)
    except KeyboardInterrupt:
        log("bench: interrupted; writing what was measured")
        ok = False
    finished = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    report.summarize(bench.cells)
    machine = {
        "cpus": os.cpu_count(), "kernel": f"{platform.system()} {platform.release()}",
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
        "python": platform.python_version(), "dulwich": _version("dulwich"), "pygit2": _version("pygit2"),
        "fusepy": _version("fusepy"), "load_start": load_start, "load_end": _load(),
    }
    if load_start != "?" and float(load_start) > (os.cpu_count() or 1) / 2:
        notes.append(f"the machine was busy at the start (load {load_start}): compare within this run only")
    rep = report.Report(
        format=1, started=started, finished=finished, command=[sys.executable, "-m", "bench",
                                                               *(sys.argv[1:] if argv is None else argv)],
        options={k: getattr(opts, k) for k in opts.__struct_fields__}, machine=machine,
        repository=source.description, filesystems=filesystems, notes=notes, cells=bench.cells,
    )
    os.makedirs(opts.out, exist_ok=True)
    why = report.chart(rep, os.path.join(opts.out, "speedup.png"))
    if why:
        notes.append(why)
    md = report.markdown(rep)
    with open(os.path.join(opts.out, "results.md"), "w") as f:
        f.write(md)
    report.write_json(rep, os.path.join(opts.out, "results.json"))
    if os.path.dirname(opts.out) == results_dir:
        latest = os.path.join(results_dir, "latest")
        with contextlib.suppress(OSError):
            if os.path.islink(latest):
                os.unlink(latest)
            os.symlink(os.path.basename(opts.out), latest)
    sys.stdout.write(md + "\n")
    log(f"bench: wrote {opts.out}/results.md, results.json" + ("" if why else ", speedup.png"))
    return 0 if ok else 130
