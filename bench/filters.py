"""The filter row (``BENCH_FILTER=1`` / ``--filter-bench``): a repository whose
files all pass through a ``filter.<driver>.process`` filter that costs a
fixed time per file, checked out sequentially and in parallel.

Rows, each timed ``BENCH_RUNS`` times (median shown) into a fresh
``git clone -n`` on tmpfs (``/dev/shm``; disk when there is none):

* ``git checkout`` (git writes every filtered file itself, one by one);
* ours ``-j 1`` (the coordinator, in order: git's behaviour);
* ours ``-j N`` for each ``BENCH_WORKERS`` N > 1, with
  ``filter.bench.parallel=true`` (one filter process per helper).

The filter is a small Python long-running filter written into the work
directory (rot13 both ways, so the bytes are checked against git's after the
runs): per path it sleeps ``BENCH_FILTER_COST_MS`` (2 ms), standing for what
a real filter waits on (git-lfs reading its object store, a network fetch).
Kept apart from the main bench (runner.py, report.py): only ``__init__.main``
calls :func:`main`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from .runner import _find_tmpfs, fs_type, git, git_env, log, time_run

FILTER = r'''#!PYTHON
import sys, time
IN, OUT = sys.stdin.buffer, sys.stdout.buffer
ROT = bytes.maketrans(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                      b"nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM")
COST = float(sys.argv[1]) / 1000
def pkt():
    h = IN.read(4)
    if len(h) < 4:
        return None
    n = int(h, 16)
    return b"" if n == 0 else IN.read(n - 4)
def lines():
    out = []
    while True:
        p = pkt()
        if p is None:
            return None
        if p == b"":
            return out
        out.append(p.rstrip(b"\n"))
def put(d):
    OUT.write(b"%04x" % (len(d) + 4) + d)
lines()
put(b"git-filter-server\n"); put(b"version=2\n"); OUT.write(b"0000"); OUT.flush()
offered = lines()
for c in (b"clean", b"smudge"):
    if b"capability=" + c in offered:
        put(b"capability=" + c + b"\n")
OUT.write(b"0000"); OUT.flush()
while True:
    head = lines()
    if head is None:
        break
    data = []
    while True:
        p = pkt()
        if not p:
            break
        data.append(p)
    out = b"".join(data).translate(ROT)
    if COST:
        time.sleep(COST)
    put(b"status=success\n"); OUT.write(b"0000")
    for i in range(0, len(out), 65516):
        put(out[i:i + 65516])
    OUT.write(b"00000000"); OUT.flush()
'''


def _manifest(top: str) -> str:
    h = hashlib.sha256()
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            full = os.path.join(root, name)
            h.update(os.path.relpath(full, top).encode() + b"\0")
            with open(full, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def _make_source(env, path: str, files: int, filt: str) -> None:
    git(env, os.path.dirname(path), "init", "-q", "-b", "main", path)
    with open(os.path.join(path, ".gitattributes"), "w") as f:
        f.write("*.txt filter=bench\n")
    for i in range(files):
        d = os.path.join(path, f"d{i % 20:02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:05d}.txt"), "w") as f:
            f.write(f"file {i}\n" + "some text to smudge\n" * (1 + i % 40))
    git(env, path, "-c", f"filter.bench.process={filt}", "add", ".")
    git(env, path, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "filtered")


def main(opts) -> int:
    """Run the rows and print a Markdown table; 1 when a row failed or the
    bytes differ from git's."""
    cost = opts.filter_cost_ms
    files = opts.files
    workers = [w for w in opts.workers if w > 1] or [2]
    work = tempfile.mkdtemp(prefix="gch-filter-bench-")
    load0 = os.getloadavg()[0]
    notes: list[str] = []
    try:
        env = git_env(os.path.join(work, "home"))
        os.makedirs(os.path.join(work, "home"))
        filt_path = os.path.join(work, "bench-filter")
        with open(filt_path, "w") as f:
            f.write(FILTER.replace("PYTHON", sys.executable, 1))
        os.chmod(filt_path, 0o755)
        filt = f"{filt_path} 0"
        root = _find_tmpfs(work, notes) or work
        src = os.path.join(root, "src")
        log(f"bench: filter row: {files} files, {cost:g} ms per file, in {root} ({fs_type(root)[0]})")
        _make_source(env, src, files, filt)
        checkout = shutil.which("git-parallel-checkout", path=os.path.dirname(sys.executable)) or \
            "git-parallel-checkout"
        rows: list[tuple[str, list[str], list[str]]] = [
            ("git checkout", [], ["git", "checkout", "-q", "main"]),
            ("ours -j 1 (coordinator)", [], [checkout, "-q", "-j", "1", "main"]),
        ]
        for w in workers:
            rows.append((f"ours -j {w}, filter.bench.parallel", ["filter.bench.parallel=true"],
                         [checkout, "-q", "-j", str(w), "--threshold", "0", "main"]))
        results: dict[str, list[float]] = {label: [] for label, _, _ in rows}
        manifests: dict[str, str] = {}
        ok = True
        for run in range(opts.runs):
            for label, extra, cmd in rows:
                dst = os.path.join(root, "dst")
                shutil.rmtree(dst, ignore_errors=True)
                git(env, root, "clone", "-q", "-n", src, dst)
                git(env, dst, "config", "filter.bench.process", f"{filt_path} {cost:g}")
                for kv in extra:
                    k, v = kv.split("=", 1)
                    git(env, dst, "config", k, v)
                t = time_run(cmd, dst, env, None)
                if t.rc != 0:
                    notes.append(f"{label}: exit {t.rc}: {t.err.strip()[-300:]}")
                    ok = False
                    continue
                results[label].append(t.seconds)
                if run == 0:
                    manifests[label] = _manifest(dst)
        if len(set(manifests.values())) > 1:
            notes.append("the work trees differ between rows: "
                         + ", ".join(f"{k} {v[:12]}" for k, v in manifests.items()))
            ok = False
        base = statistics.median(results["ours -j 1 (coordinator)"]) if results["ours -j 1 (coordinator)"] else None
        load = os.getloadavg()[0]
        lines = [
            f"Filter row: {files} files through a process filter costing {cost:g} ms per file "
            f"({fs_type(root)[0]}, {os.cpu_count()} CPUs, load {load0:.1f} -> {load:.1f}, "
            f"median of {opts.runs} runs)",
            "",
            "| | median s | min s | max s | vs ours -j 1 |",
            "|---|---|---|---|---|",
        ]
        for label, _, _ in rows:
            s = results[label]
            if not s:
                lines.append(f"| {label} | failed | | | |")
                continue
            med = statistics.median(s)
            speed = f"{base / med:.2f}x" if base else ""
            lines.append(f"| {label} | {med:.3f} | {min(s):.3f} | {max(s):.3f} | {speed} |")
        lines.append("")
        lines.append("Bytes identical to git's in every row." if ok else "")
        lines += [f"Note: {n}" for n in notes]
        sys.stdout.write("\n".join(lines) + "\n")
        return 0 if ok else 1
    finally:
        subprocess.run(["rm", "-rf", work])
        if "root" in locals() and root != work:
            subprocess.run(["rm", "-rf", root])
