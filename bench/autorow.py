"""The ``ours, -j auto`` row (``checkout.workers=auto``, see autoworkers.py)
and its verdict: auto against the best fixed ``-j N`` of ours (by median) on
the same filesystem and operation (the target: within 10%), judged by
the per-round ratio as the ``÷git`` column is: on a shared machine two
medians of the same configuration can differ by more than 10%.

Kept apart from runner.py and report.py, which only call :func:`auto_tool`
and :func:`auto_vs_best`.
"""

from __future__ import annotations

AUTO_KEY = "ours-auto"
AUTO_LABEL = "ours, -j auto"
#: auto is "good" within this factor of the best fixed setting.
TARGET = 1.10


def auto_tool(tool_cls, opts):
    """The auto row, when ours is benched: family ``ours``, no worker count
    (``-j auto`` on the command line), no git row to divide by."""
    if "ours" not in opts.tools:
        return None
    return tool_cls(AUTO_KEY, "ours", None, AUTO_LABEL, None)


def auto_vs_best(cells) -> list[str]:
    """One Markdown line per filesystem table: for each operation, auto's
    median over the best fixed ours median (and which one that was)."""
    parts = []
    ops = []
    for c in cells:
        if c.op not in ops:
            ops.append(c.op)
    for op in ops:
        auto = next((c for c in cells if c.op == op and c.tool == AUTO_KEY and c.median), None)
        fixed = [c for c in cells if c.op == op and c.family == "ours" and c.workers and c.median]
        if auto is None or not fixed:
            continue
        best = min(fixed, key=lambda c: c.median)
        ratio = auto.median / best.median
        paired = paired_ratio(auto, best)
        judged = paired if paired is not None else ratio
        verdict = "within 10%" if judged <= TARGET else "NOT within 10%"
        per_round = f", per round {paired:.2f}" if paired is not None else ""
        parts.append(f"{op} {auto.median:.3f} s vs best -j {best.workers} {best.median:.3f} s: "
                     f"{ratio:.2f}{per_round}, {verdict}")
    if not parts:
        return []
    return ["Auto against the best fixed -j of ours by median (ratio of medians; per round: median of auto's "
            "time over that -j's in the same rounds, which the verdict uses): " + "; ".join(parts) + ".", ""]


def paired_ratio(cell, ref) -> float | None:
    """The median, over the rounds both ran in, of ``cell``'s time over
    ``ref``'s (as the ÷git column pairs rounds: a slow minute of a shared
    machine then hits both)."""
    theirs = dict(zip(ref.rounds, ref.seconds, strict=True))
    ratios = sorted(s / theirs[r] for r, s in zip(cell.rounds, cell.seconds, strict=True) if r in theirs)
    if not ratios:
        return None
    n = len(ratios)
    return ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
