"""The distribution rows (``BENCH_SCENARIO=distribution``): dynamic against
static work distribution, and I/O threads in helpers against processes.

Part 1, on tmpfs (``/dev/shm``; the bench's work directory when there is
none), ours ``-j 2`` with ``checkout.distribution=dynamic`` against
``static`` (git's split), forced checkout of HEAD into a fresh ``git clone
-n`` (the checkout step of a clone), on generated inputs of
``BENCH_FILES`` (default 6,000) files:

* *skewed*: four 48 MiB files (compressible text, stored whole in the
  pack) in four small directories that sort first (``assets/``, ``data/``,
  ``docs/``, ``media/``), then one directory, ``src/``, holding 80% of the
  files (small ones); git's split gives the first helper every large file;
* *clustered*: the same files with the four large ones side by side in one
  directory: shown for what it is, the case that chunks counted in items
  cannot split (four adjacent items always fall in one chunk);
* *uniform*: the same number of small files over 60 directories.

Part 2, on the latency filesystem (:mod:`.latencyfs`, ``BENCH_LATENCY_MS``),
a *uniform* input of ``LATENCY_FILES`` (1,500; every request waits, so a run
takes seconds) written by P processes of T I/O threads each
(``checkout.helperThreads``), for equal P x T: wall time and the peak of
the summed memory of the whole process tree, sampled every 10 ms from
``/proc``: RSS summed (counts the pages forked helpers share with the
coordinator once per process) and PSS summed (each shared page split between
its sharers: the memory the tree really costs).

Every row runs ``BENCH_RUNS`` times (at least 5 for a result), the rows of a
round in a shuffled order (seeded), each into a fresh target prepared outside
the timing; ratios are taken within a round, then the median. After each
first run the work tree is checked (``git status --porcelain`` empty).
Kept apart from the main bench: only ``__init__.main`` calls :func:`main`.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from .runner import _find_tmpfs, fs_type, git, git_env, log

BIG = 48 << 20
BIG_FILES = 4
LATENCY_FILES = 1500


def _text(rng: random.Random, size: int) -> bytes:
    words = [b"alpha", b"beta", b"gamma", b"delta", b"epsilon", b"zeta", b"eta", b"theta", b"iota",
             b"kappa", b"lambda", b"mu", b"0x%04x" % 17, b"return", b"value", b"index", b"(", b")"]
    line_pool = [b" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + b"\n" for _ in range(4096)]
    out = []
    n = 0
    while n < size:
        ln = line_pool[rng.randrange(len(line_pool))] + b"%d\n" % rng.randrange(1 << 30)
        out.append(ln)
        n += len(ln)
    return b"".join(out)[:size]


def _small(rng: random.Random, i: int) -> bytes:
    return (f"// file {i}\n" + "".join(f"line {j} {rng.randrange(1 << 20)}\n"
                                       for j in range(rng.randint(5, 80)))).encode()


def _make(env, path: str, kind: str, files: int, seed: int) -> None:
    rng = random.Random(seed)
    git(env, os.path.dirname(path), "init", "-q", "-b", "main", path)

    def put(rel: str, data: bytes) -> None:
        full = os.path.join(path, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)

    if kind == "uniform":
        for i in range(files):
            put(f"d{i % 60:02d}/f{i:05d}.c", _small(rng, i))
    else:
        small_dirs = ["assets", "data", "docs", "media"]
        in_src = files * 4 // 5
        rest = files - in_src - BIG_FILES
        for i in range(rest):
            put(f"{small_dirs[i % 4]}/f{i:05d}.c", _small(rng, i))
        big = _text(rng, BIG)
        for k in range(BIG_FILES):
            data = big[k:] + big[:k]  # distinct blobs, no deltas between them worth finding
            if kind == "skewed":
                put(f"{small_dirs[k]}/large-{k}.bin", data)
            else:
                put(f"assets/large-{k}.bin", data)
        for i in range(in_src):
            put(f"src/f{i:05d}.c", _small(rng, i))
    git(env, path, "add", ".")
    git(env, path, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", kind)
    # whole objects only: -window=0 keeps the large files undeltified, as big assets usually are
    git(env, path, "repack", "-adq", "--window=0")


def _tree_pids(root: int) -> list[int]:
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return pids


def _mem_kib(pid: int) -> tuple[int, int]:
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


def _run(cmd: list[str], cwd: str, env, sample: bool) -> tuple[float, int, str, int, int, float]:
    """(seconds, exit code, stderr, peak summed RSS KiB, peak summed PSS KiB,
    CPU seconds of the process and the helpers it waited for)."""
    with tempfile.TemporaryFile() as errf:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=errf)
        peak = [0, 0]
        done = threading.Event()

        def sampler() -> None:
            while not done.wait(0.01):
                rss = pss = 0
                for pid in _tree_pids(p.pid):
                    r, s = _mem_kib(pid)
                    rss += r
                    pss += s
                peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)

        th = threading.Thread(target=sampler, daemon=True) if sample else None
        if th:
            th.start()
        _, status, ru = os.wait4(p.pid, 0)
        t1 = time.perf_counter()
        p.returncode = rc = os.waitstatus_to_exitcode(status)
        done.set()
        if th:
            th.join()
        errf.seek(0)
        err = errf.read()[-2000:].decode("utf-8", "replace")
    return t1 - t0, rc, err, peak[0], peak[1], ru.ru_utime + ru.ru_stime


def main(opts) -> int:
    """Run both parts and print their Markdown tables; 1 if a run failed or
    left a work tree that is not git's."""
    files = opts.files
    runs = opts.runs
    rng = random.Random(opts.seed)
    work = tempfile.mkdtemp(prefix="gch-dist-bench-", dir=opts.work_dir or None)
    notes: list[str] = []
    ok = True
    checkout = shutil.which("git-parallel-checkout", path=os.path.dirname(sys.executable)) or "git-parallel-checkout"
    out_lines: list[str] = []
    root = None
    try:
        env = git_env(os.path.join(work, "home"))
        os.makedirs(os.path.join(work, "home"))
        root = _find_tmpfs(work, notes) or work
        inputs = ["skewed", "clustered", "uniform"]
        srcs = {}
        for kind in inputs:
            srcs[kind] = os.path.join(root, f"src-{kind}")
            log(f"bench: distribution: making the {kind} input ({files} files) in {root}")
            _make(env, srcs[kind], kind, files, opts.seed)
        lat_files = min(files, LATENCY_FILES)
        if "latency" in opts.filesystems:
            srcs["latency"] = os.path.join(root, "src-latency")
            _make(env, srcs["latency"], "uniform", lat_files, opts.seed)

        def fresh(where: str, kind: str, name: str) -> str:
            dst = os.path.join(where, name)
            if os.path.lexists(dst):
                subprocess.run(["rm", "-rf", dst])
            git(env, where, "clone", "-q", "-n", srcs[kind], dst)
            return dst

        def verify(dst: str, label: str) -> None:
            nonlocal ok
            st = subprocess.run(["git", "status", "--porcelain"], cwd=dst, env=env, capture_output=True, text=True)
            if st.returncode != 0 or st.stdout:
                ok = False
                notes.append(f"{label}: work tree differs from HEAD: {st.stdout[:200]}{st.stderr[:200]}")

        # --- part 1: dynamic vs static, -j 2, tmpfs
        rows1 = [(kind, mode) for kind in inputs for mode in ("static", "dynamic")]
        t1: dict[tuple[str, str], list[float]] = {r: [] for r in rows1}
        # CPU seconds / wall seconds: near 2 with two helpers on two free
        # cores, near 1 when other work leaves them one (then nothing to balance)
        cpu1: dict[tuple[str, str], list[float]] = {r: [] for r in rows1}
        ratios: dict[str, list[float]] = {k: [] for k in inputs}
        for run in range(runs):
            order = rows1[:]
            rng.shuffle(order)
            got = {}
            for kind, mode in order:
                dst = fresh(root, kind, "dst")
                subprocess.run(["sync"])
                cmd = [checkout, "-q", "-f", "-j", "2", "--threshold", "0", "HEAD"]
                e = dict(env, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="checkout.distribution",
                         GIT_CONFIG_VALUE_0=mode)
                sec, rc, err, _, _, cpu = _run(cmd, dst, e, False)
                if rc != 0:
                    ok = False
                    notes.append(f"{kind} {mode}: exit {rc}: {err.strip()[-300:]}")
                    continue
                if run == 0:
                    verify(dst, f"{kind} {mode}")
                t1[(kind, mode)].append(sec)
                cpu1[(kind, mode)].append(cpu / sec)
                got[(kind, mode)] = sec
            for kind in inputs:
                if (kind, "static") in got and (kind, "dynamic") in got:
                    ratios[kind].append(got[(kind, "static")] / got[(kind, "dynamic")])
            log(f"bench: distribution round {run + 1}/{runs} done")
        fsname = fs_type(root)[0]
        out_lines += [
            f"Dynamic vs static distribution: ours -j 2, forced checkout of HEAD into a `clone -n`, {files} files, "
            f"{fsname}, {os.cpu_count()} CPUs, median of {runs} runs (ratio: static/dynamic within a round, "
            f"median; above 1 = dynamic faster)",
            "",
            "| input | static s | dynamic s | static / dynamic | CPU/wall static, dynamic |",
            "|---|---|---|---|---|",
        ]
        for kind in inputs:
            s, d = t1[(kind, "static")], t1[(kind, "dynamic")]
            if not s or not d:
                out_lines.append(f"| {kind} | failed | | | |")
                continue
            r = ratios[kind]
            out_lines.append(f"| {kind} | {statistics.median(s):.3f} | {statistics.median(d):.3f} | "
                             f"{statistics.median(r):.2f}x (min {min(r):.2f}, max {max(r):.2f}) | "
                             f"{statistics.median(cpu1[(kind, 'static')]):.2f}, "
                             f"{statistics.median(cpu1[(kind, 'dynamic')]):.2f} |")
        out_lines.append("")

        # --- part 2: threads vs processes on the latency filesystem
        from .latencyfs import available, mounted

        why = available()
        if why or "latency" not in opts.filesystems:
            notes.append(f"latency rows skipped: {why or 'latency not in BENCH_FS'}")
        else:
            shapes = [(8, 1), (2, 4), (4, 2), (16, 1), (4, 4)]
            backing = os.path.join(work, "latency-root")
            mnt = os.path.join(work, "latency-mnt")
            os.makedirs(backing, exist_ok=True)
            lsrc = os.path.join(backing, "src")
            git(env, work, "clone", "-q", "--bare", srcs["latency"], lsrc)
            t2: dict[tuple[int, int], list[tuple[float, int, int]]] = {s: [] for s in shapes}
            # threads against the processes-only shape with as many writers, per round
            r2: dict[tuple[int, int], list[tuple[float, float]]] = {s: [] for s in shapes}
            with mounted(backing, mnt, opts.latency_ms):
                for run in range(runs):
                    order = shapes[:]
                    rng.shuffle(order)
                    got2: dict[tuple[int, int], tuple[float, int]] = {}
                    for p_, t_ in order:
                        dst = os.path.join(backing, "dst")
                        if os.path.lexists(dst):
                            subprocess.run(["rm", "-rf", dst])
                        git(env, backing, "clone", "-q", "-n", "--shared", lsrc, dst)
                        subprocess.run(["sync"])
                        cmd = [checkout, "-q", "-f", "-j", str(p_), "--threshold", "0", "HEAD"]
                        e = dict(env, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="checkout.helperThreads",
                                 GIT_CONFIG_VALUE_0=str(t_))
                        sec, rc, err, rss, pss, _ = _run(cmd, os.path.join(mnt, "dst"), e, True)
                        if rc != 0:
                            ok = False
                            notes.append(f"latency {p_}x{t_}: exit {rc}: {err.strip()[-300:]}")
                            continue
                        if run == 0:
                            verify(dst, f"latency {p_}x{t_}")
                        t2[(p_, t_)].append((sec, rss, pss))
                        got2[(p_, t_)] = (sec, pss)
                    for p_, t_ in shapes:
                        base = got2.get((p_ * t_, 1))
                        if t_ > 1 and base and (p_, t_) in got2:
                            r2[(p_, t_)].append((got2[(p_, t_)][0] / base[0], got2[(p_, t_)][1] / base[1]))
                    log(f"bench: latency round {run + 1}/{runs} done")
            out_lines += [
                f"I/O threads in helpers vs processes: ours, uniform input ({lat_files} files), forced checkout of HEAD "
                f"on the latency filesystem ({opts.latency_ms:g} ms per request), median of {runs} runs; memory: "
                f"peak over the run of the summed RSS / PSS of the coordinator and its helpers",
                "",
                "| processes x threads | writers | median s | summed RSS MiB | summed PSS MiB "
                "| time / processes-only | PSS / processes-only |",
                "|---|---|---|---|---|---|---|",
            ]
            for p_, t_ in shapes:
                v = t2[(p_, t_)]
                if not v:
                    out_lines.append(f"| {p_} x {t_} | {p_ * t_} | failed | | | | |")
                    continue
                r = r2[(p_, t_)]
                rel = (f"{statistics.median(x[0] for x in r):.2f} | {statistics.median(x[1] for x in r):.2f}"
                       if r else "(itself) | (itself)")
                out_lines.append(
                    f"| {p_} x {t_} | {p_ * t_} | {statistics.median(x[0] for x in v):.3f} | "
                    f"{statistics.median(x[1] for x in v) / 1024:.0f} | {statistics.median(x[2] for x in v) / 1024:.0f} "
                    f"| {rel} |")
            out_lines.append("")
        out_lines += [f"Note: {n}" for n in notes]
        sys.stdout.write("\n".join(out_lines) + "\n")
        if opts.out:
            os.makedirs(opts.out, exist_ok=True)
            with open(os.path.join(opts.out, "distribution.md"), "w") as f:
                f.write("\n".join(out_lines) + "\n")
        return 0 if ok else 1
    finally:
        subprocess.run(["rm", "-rf", work])
        if root is not None and root != work:
            subprocess.run(["rm", "-rf", root])
