"""Statistics, the Markdown table, the JSON file and the chart."""

from __future__ import annotations

import os
import statistics

import msgspec

from .autorow import auto_vs_best
from .runner import Cell

OP_TITLES = {"clone": "clone", "far": "switch far", "near": "switch near"}


class Report(msgspec.Struct):
    """Everything one bench run measured (``results.json``)."""

    format: int
    started: str
    finished: str
    command: list[str]
    options: dict
    machine: dict
    repository: dict
    filesystems: dict[str, str]
    notes: list[str]
    cells: list[Cell]


def summarize(cells: list[Cell]) -> None:
    """Median/min/max, and the pairwise ratio against git: for each round both ran
    in, this tool's time over its git row's time; the median of those ratios. Both
    ran in the same round, back to back, so a slow minute of the shared machine
    hits both (a ratio of two medians would not pair them)."""
    by_key = {(c.fs, c.op, c.tool): c for c in cells}
    for c in cells:
        if c.seconds:
            c.median = round(statistics.median(c.seconds), 6)
            c.min = min(c.seconds)
            c.max = max(c.seconds)
        ref = by_key.get((c.fs, c.op, c.ratio_ref)) if c.ratio_ref else None
        if ref is not None and ref.seconds and c.seconds:
            theirs = dict(zip(ref.rounds, ref.seconds, strict=True))
            ratios = [s / theirs[r] for r, s in zip(c.rounds, c.seconds, strict=True) if r in theirs]
            if ratios:
                c.ratio_vs_git = round(statistics.median(ratios), 4)


def _cell_text(c: Cell | None, notes: dict[str, int]) -> tuple[str, str]:
    if c is None:
        return "", ""
    if c.skipped:
        return "skipped", ""
    mark = ""
    problem = c.error if not c.seconds else (c.verified if c.verified not in (None, "clean") else None)
    if problem:
        n = notes.setdefault(f"{c.fs} {OP_TITLES[c.op]}, {c.label}: {problem}", len(notes) + 1)
        mark = f" [{n}]"
    if not c.seconds:
        return f"failed{mark}", ""
    if len(c.seconds) == 1:
        t = f"{c.median:.3f}{mark}"
    else:
        t = f"{c.median:.3f} ({c.min:.3f}–{c.max:.3f}){mark}"
    r = f"{c.ratio_vs_git:.2f}" if c.ratio_vs_git is not None else ""
    return t, r


def markdown(rep: Report) -> str:
    o = rep.options
    d = rep.repository
    lines = [f"# Checkout benchmark, {rep.started}", ""]
    m = rep.machine
    lines.append(f"Machine: {m.get('cpus')} CPUs, {m.get('kernel')}, load average {m.get('load_start')} at the "
                 f"start, {m.get('load_end')} at the end; {m.get('git')}, Python {m.get('python')}, "
                 f"dulwich {m.get('dulwich')}, pygit2 {m.get('pygit2') or 'absent'}.")
    lines.append("")
    lines.append(f"Repository: {d.get('name')}: {d.get('files', 0):,} files ({d.get('executables', 0):,} "
                 f"executable) and {d.get('symlinks', 0)} symlinks in {d.get('dirs', 0):,} directories, "
                 f"{d.get('bytes', 0) / 1e6:.1f} MB, {d.get('delta_share', 0) * 100:.0f}% of HEAD's blobs stored "
                 f"as deltas.")
    for op in ("far", "near"):
        s = d.get(op)
        if s:
            lines.append(f"Switch {op}: {s['from']} -> {s['to']}: {s['added']:,} added, {s['changed']:,} changed, "
                         f"{s['deleted']:,} deleted.")
    lines.append("")
    clone = ("clone = the checkout step of a clone: `git clone --no-checkout` outside timing, then timed: git "
             "`checkout -f HEAD`, ours `git-parallel-checkout -f HEAD`, dulwich `build_index_from_tree`, pygit2 "
             "`checkout_head(FORCE)`, tar `-x` of `git archive HEAD`."
             if o.get("clone_mode") == "checkout" else
             "clone = the whole local clone (git clone / git-parallel-clone / porcelain.clone / "
             "clone_repository), from a source on the same filesystem.")
    lines += [
        "How to read: each cell is the median wall time in seconds of the whole process (start-up included) "
        f"over {o.get('runs')} run(s), (min–max); `÷git` is this tool's time over git's in the same rounds "
        "(median of per-round ratios; ours -j N against git checkout.workers=N, the others against "
        "checkout.workers=1): below 1 is faster than git. Peers are interleaved (one run each per round, "
        "shuffled), every run into a fresh target prepared outside the timing; switches start from a work tree "
        "checked out at the old tag, switch to HEAD. " + clone,
        "",
    ]
    notes: dict[str, int] = {}
    for fs in rep.filesystems:
        cells = [c for c in rep.cells if c.fs == fs]
        if not cells:
            continue
        ops = [op for op in ("clone", "far", "near") if any(c.op == op for c in cells)]
        lines.append(f"## {fs}: {rep.filesystems[fs]}")
        lines.append("")
        head = "| tool |" + "".join(f" {OP_TITLES[op]} s | ÷git |" for op in ops)
        lines.append(head)
        lines.append("|---|" + "---:|---:|" * len(ops))
        tools: list[tuple[str, str]] = []
        for c in cells:
            if (c.tool, c.label) not in tools:
                tools.append((c.tool, c.label))
        by = {(c.op, c.tool): c for c in cells}
        for key, label in tools:
            row = f"| {label} |"
            for op in ops:
                t, r = _cell_text(by.get((op, key)), notes)
                row += f" {t} | {r} |"
            lines.append(row)
        lines.append("")
        lines += _per_file_and_rss(cells, tools, d.get("files") or 0)
        lines += auto_vs_best(cells)
    if notes:
        lines.append("Notes on cells:")
        for text, n in sorted(notes.items(), key=lambda kv: kv[1]):
            lines.append(f"{n}. {text}")
        lines.append("")
    if rep.notes:
        lines.append("Notes:")
        lines += [f"- {n}" for n in rep.notes]
        lines.append("")
    return "\n".join(lines)


def _per_file_and_rss(cells: list[Cell], tools: list[tuple[str, str]], files: int) -> list[str]:
    """The clone's cost per file (median seconds / files in HEAD, µs) and the
    median peak RSS of the largest process of each run (wait4's ru_maxrss:
    our coordinator or a helper; git's coordinator or a worker): what the
    100,000-file targets are judged by."""
    by = {c.tool: c for c in cells if c.op == "clone" and c.seconds}
    parts = []
    for key, label in tools:
        c = by.get(key)
        if c is None:
            continue
        per_file = f"{c.median / files * 1e6:.0f} µs/file, " if files else ""
        rss = f"{statistics.median(c.max_rss_kib) / 1024:.0f} MiB" if c.max_rss_kib else "?"
        parts.append(f"{label} {per_file}{rss}")
    if not parts:
        return []
    return ["Clone, cost per file and peak RSS (largest process): " + "; ".join(parts) + ".", ""]


def write_json(rep: Report, path: str) -> None:
    with open(path, "wb") as f:
        f.write(msgspec.json.format(msgspec.json.encode(rep), indent=1))
        f.write(b"\n")


def chart(rep: Report, path: str) -> str | None:
    """Speedup against workers, one panel per filesystem: git checkout.workers=1's
    median over each configuration's median, so ours and git share one baseline and
    ours' distance from git stays visible. None when written, else why not."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]'): no chart"
    fss = [fs for fs in rep.filesystems
           if any(c.fs == fs and c.family in ("ours", "git") and c.median for c in rep.cells)]
    if not fss:
        return "no timings of ours or git: no chart"
    fig, axes = plt.subplots(1, len(fss), figsize=(5.2 * len(fss), 4.2), squeeze=False)
    colors = {"clone": "tab:blue", "far": "tab:orange", "near": "tab:green"}
    for ax, fs in zip(axes[0], fss, strict=True):
        cells = [c for c in rep.cells if c.fs == fs]
        base = {c.op: c.median for c in cells if c.tool == "git-w1" and c.median}
        for op in ("clone", "far", "near"):
            if op not in base:
                continue
            for fam, style in (("ours", "-o"), ("git", "--s")):
                pts = sorted((c.workers, base[op] / c.median) for c in cells
                             if c.op == op and c.family == fam and c.median and c.workers)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colors[op],
                            label=f"{fam} {OP_TITLES[op]}", alpha=0.9 if fam == "ours" else 0.6)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ticks = sorted({c.workers for c in cells if c.workers and c.family in ("ours", "git")})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("workers (-j / checkout.workers)")
        ax.set_ylabel("speedup vs git checkout.workers=1")
        ax.set_title(f"{fs}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{rep.repository.get('name')}: median of {rep.options.get('runs')} run(s)", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
