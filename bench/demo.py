"""``make demo``: build a sample repository, clone it with our helpers and with
git, and show what happened and how long it took, side by side.

Every timing is a whole process (interpreter start-up included), as a user
would see it; each run clones into a fresh directory made outside the timing,
and the tools take turns within each round so that a noisy machine hurts
them alike. Old targets are only deleted at the end (creating thousands of
files right after deleting thousands is slow on some filesystems).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from .samplerepo import make_sample_repo

FILES = 3000
ROUNDS = 3


def _run(argv: list[str], cwd: str | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"demo: {' '.join(argv)} failed:\n{p.stderr}")
    return elapsed, p.stdout


def _clean(worktree: str) -> bool:
    status = subprocess.run(["git", "status", "--porcelain"], cwd=worktree, capture_output=True, text=True)
    diff = subprocess.run(["git", "diff-files", "--quiet"], cwd=worktree)
    return status.returncode == 0 and not status.stdout and diff.returncode == 0


def main() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = max(2, min(4, cpus))
    base = tempfile.mkdtemp(prefix="gch-demo-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        src = os.path.join(base, "sample.git")
        t = time.perf_counter()
        info = make_sample_repo(src, files=FILES, with_history=False, repack=False)
        print(f"Built a sample repository of {info['files']} files ({info['executables']} executable, "
              f"{info['symlinks']} symlinks, {info['dirs']} directories) in {time.perf_counter() - t:.1f} s")
        print(f"  at {src}\n")
        me = [sys.executable, "-m", "git_checkout_helper", "parallel-clone", "-q", "--threshold", "0"]
        tools = {
            "ours, sequential (-j 1)": lambda d: me + ["-j", "1", "-v", src, d],
            f"ours, {n} helpers (-j {n})": lambda d: me + ["-j", str(n), "-v", src, d],
            "git clone, checkout.workers=1": lambda d: ["git", "-c", "checkout.workers=1", "clone", "-q", src, d],
            f"git clone, checkout.workers={n}": lambda d: [
                "git", "-c", f"checkout.workers={n}", "-c", "checkout.thresholdForParallelism=0",
                "clone", "-q", src, d],
        }
        times: dict[str, list[float]] = {k: [] for k in tools}
        reports: dict[str, dict] = {}
        clean: dict[str, bool] = {}
        for r in range(ROUNDS):
            for i, (name, argv) in enumerate(tools.items()):
                target = os.path.join(base, f"clone-{r}-{i}")
                elapsed, out = _run(argv(target))
                times[name].append(elapsed)
                if out.strip().startswith("{"):
                    reports[name] = json.loads(out.strip().splitlines()[-1])
                clean[name] = clean.get(name, True) and _clean(target)
        git1 = statistics.median(times["git clone, checkout.workers=1"])
        print(f"Cloned {ROUNDS} times with each tool (median of {ROUNDS}, whole process):")
        print(f"  {'tool':36} {'median':>8} {'min-max':>13} {'vs git w=1':>10}  status")
        for name, ts in times.items():
            med = statistics.median(ts)
            status = "clean" if clean[name] else "NOT CLEAN"
            print(f"  {name:36} {med:7.3f}s {min(ts):6.3f}-{max(ts):.3f}s {med / git1:9.2f}x  {status}")
        for name, rep in reports.items():
            helpers = rep["workers"] if rep["parallel_items"] else 0
            print(f"\n{name}: wrote {rep['written']} entries: {rep['parallel_items']} by {helpers} helper "
                  f"process(es), {rep['sequential_items']} by the coordinator itself (symlinks, and every "
                  f"file when sequential); {len(rep['collided'])} collisions, {len(rep['failed'])} failures")
        ok = all(clean.values())
        print("\n`git status --porcelain` empty and `git diff-files --quiet` after every clone:",
              "yes" if ok else "NO")
        return 0 if ok else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
