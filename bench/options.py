"""The bench's settings: environment variables (``make bench`` passes them
through), overridden by command-line options. The only module of the bench
that reads the environment (the project's rule: library code takes parameters).
"""

from __future__ import annotations

import argparse
import os
import time

import msgspec

OPS = ("clone", "far", "near")
FILESYSTEMS = ("disk", "tmpfs", "latency")
FAMILIES = ("ours", "git", "dulwich", "pygit2", "tar")

SCALES = {"quick": 150, "default": 5000, "large": 100_000}

ENV_HELP = """\
environment (command-line options win):
  BENCH_RUNS=5              timed runs per tool and condition (at least 5 for a real result)
  BENCH_OPS=clone,far,near  operations
  BENCH_FS=disk,tmpfs,latency
                            filesystems (latency: the FUSE filesystem with BENCH_LATENCY_MS)
  BENCH_TOOLS=ours,git,dulwich,pygit2,tar
  BENCH_QUICK=1             smoke test: 150 files, 1 run, workers 1,2 (latency: 1,4)
  BENCH_SCALE=default|large 5,000 or 100,000 files (large leaves latency out unless BENCH_FS names it)
  BENCH_FILES=N             any other size of the generated repository
  BENCH_REPO=<path>         a real repository instead; name OLD RECENT [HEAD] on the command line
  BENCH_WORKERS=1,2,4,8     worker counts on disk and tmpfs
  BENCH_LATENCY_WORKERS=1,2,4,8,16,32,64
  BENCH_LATENCY_MS=1        latency added to every filesystem request
  BENCH_CLONE=checkout|whole
                            clone = checkout of a --no-checkout clone (default) or the whole clone
  BENCH_OUT=<dir>           output directory (default bench-results/<date-time>)
  BENCH_DIR=<dir>           disk work directory: a gch-bench-<pid> made in it, deleted at the end
                            (default bench-results/work-<pid>)
  BENCH_CACHE=<dir>         where generated repositories are kept (default bench-results/cache)
  BENCH_SEED=1              seed of the generated repository and of the run order
  BENCH_FILTER=1            only the filter row (bench/filters.py): BENCH_FILES files (default 500)
                            through a process filter costing BENCH_FILTER_COST_MS (2) per file,
                            git and ours -j 1 against ours -j N with filter.<driver>.parallel
  BENCH_SCENARIO=distribution
                            only the distribution rows (bench/distribution.py): ours -j 2 dynamic vs
                            static on skewed, clustered and uniform inputs of BENCH_FILES files (default
                            6000) on tmpfs; on the latency filesystem, P processes x T helper threads
                            (checkout.helperThreads) for 8x1, 2x4, 16x1, 4x4: time and summed RSS/PSS
"""


class Options(msgspec.Struct):
    runs: int
    ops: list[str]
    filesystems: list[str]
    tools: list[str]
    quick: bool
    files: int
    repo: str | None
    revs: list[str]
    workers: list[int]
    latency_workers: list[int]
    latency_ms: float
    clone_mode: str
    out: str
    work_dir: str | None
    cache_dir: str
    seed: int
    filter_bench: bool = False
    filter_cost_ms: float = 2.0
    scenario: str | None = None  # BENCH_SCENARIO: "distribution" (bench/distribution.py)


def _csv(value: str, allowed: tuple[str, ...] | None, what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if allowed is not None:
        bad = [v for v in items if v not in allowed]
        if bad:
            raise SystemExit(f"bench: unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})")
    return items


def _ints(value: str, what: str) -> list[int]:
    try:
        out = sorted({int(v) for v in _csv(value, None, what)})
    except ValueError:
        raise SystemExit(f"bench: {what} must be integers: {value}") from None
    if not out or out[0] < 1:
        raise SystemExit(f"bench: {what} must be positive: {value}")
    return out


def parse(argv: list[str], env: dict[str, str] | None = None) -> Options:
    env = dict(os.environ if env is None else env)
    ap = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark our parallel checkout against git, dulwich, pygit2 and tar.",
        epilog=ENV_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("revs", nargs="*", metavar="REV",
                    help="with --repo/BENCH_REPO: OLD RECENT [HEAD] (HEAD: the repository's HEAD branch)")
    ap.add_argument("--repo", default=env.get("BENCH_REPO") or None)
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--ops", default=env.get("BENCH_OPS"))
    ap.add_argument("--fs", default=env.get("BENCH_FS"))
    ap.add_argument("--tools", default=env.get("BENCH_TOOLS"))
    ap.add_argument("--quick", action="store_true", default=env.get("BENCH_QUICK", "") not in ("", "0"))
    ap.add_argument("--scale", default=env.get("BENCH_SCALE", "default"), choices=("default", "large"))
    ap.add_argument("--files", type=int, default=int(env["BENCH_FILES"]) if env.get("BENCH_FILES") else None)
    ap.add_argument("--workers", default=env.get("BENCH_WORKERS"))
    ap.add_argument("--latency-workers", default=env.get("BENCH_LATENCY_WORKERS"))
    ap.add_argument("--latency-ms", type=float, default=float(env.get("BENCH_LATENCY_MS", "1")))
    ap.add_argument("--clone", dest="clone_mode", default=env.get("BENCH_CLONE", "checkout"),
                    choices=("checkout", "whole"))
    ap.add_argument("--out", default=env.get("BENCH_OUT"))
    ap.add_argument("--work-dir", default=env.get("BENCH_DIR"))
    ap.add_argument("--seed", type=int, default=int(env.get("BENCH_SEED", "1")))
    ap.add_argument("--filter-bench", action="store_true", default=env.get("BENCH_FILTER", "") not in ("", "0"))
    ap.add_argument("--filter-cost-ms", type=float, default=float(env.get("BENCH_FILTER_COST_MS", "2")))
    ap.add_argument("--scenario", default=env.get("BENCH_SCENARIO") or None, choices=("distribution",))
    a = ap.parse_args(argv)

    quick = a.quick
    runs = a.runs if a.runs is not None else int(env.get("BENCH_RUNS", "1" if quick else "5"))
    if runs < 1:
        raise SystemExit("bench: BENCH_RUNS must be at least 1")
    ops = _csv(a.ops, OPS, "operation") if a.ops else list(OPS)
    if a.fs:
        fss = _csv(a.fs, FILESYSTEMS, "filesystem")
    else:
        fss = ["disk", "tmpfs"] if a.scale == "large" and not quick else list(FILESYSTEMS)
    tools = _csv(a.tools, FAMILIES, "tool") if a.tools else list(FAMILIES)
    files = a.files or (500 if a.filter_bench else 6000 if a.scenario == "distribution"
                        else SCALES["quick" if quick else a.scale])
    if a.workers:
        workers = _ints(a.workers, "BENCH_WORKERS")
    else:
        workers = [1, 2] if quick else [1, 2, 4, 8]
    if a.latency_workers:
        lat_workers = _ints(a.latency_workers, "BENCH_LATENCY_WORKERS")
    else:
        lat_workers = [1, 4] if quick else [1, 2, 4, 8, 16, 32, 64]
    if a.repo:
        if len(a.revs) not in (2, 3) and set(ops) & {"far", "near"}:
            raise SystemExit("bench: with BENCH_REPO, name OLD RECENT [HEAD] on the command line "
                             "(e.g. v2.0.0 v2.51.0 for git.git)")
    elif a.revs:
        raise SystemExit("bench: revisions are for BENCH_REPO/--repo only")
    out = a.out or os.path.join("bench-results", time.strftime("%Y%m%d-%H%M%S"))
    return Options(
        runs=runs, ops=ops, filesystems=fss, tools=tools, quick=quick, files=files,
        repo=os.path.abspath(os.path.expanduser(a.repo)) if a.repo else None, revs=a.revs,
        workers=workers, latency_workers=lat_workers, latency_ms=a.latency_ms, clone_mode=a.clone_mode,
        out=os.path.abspath(out), work_dir=os.path.abspath(a.work_dir) if a.work_dir else None,
        cache_dir=os.path.abspath(env.get("BENCH_CACHE") or os.path.join("bench-results", "cache")),
        seed=a.seed, filter_bench=a.filter_bench, filter_cost_ms=a.filter_cost_ms, scenario=a.scenario,
    )
