"""The benchmark harness runs end to end on a tiny input and writes well-formed output.

No timing is asserted anywhere: only that the runs happened, were verified, and
that the table, the JSON and the pairing of ratios are what the docs say.
"""

import os
import subprocess
import sys

import msgspec
import pytest
from conftest import ROOT

from bench.report import Report, markdown, summarize
from bench.runner import Cell


def table_rows(md: str) -> list[list[str]]:
    return [line for line in md.splitlines() if line.startswith("|")]


def check_tables(md: str) -> None:
    """Every Markdown table: a header, a separator, rows with the header's column count."""
    blocks, cur = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    assert blocks
    for block in blocks:
        assert len(block) >= 3
        ncols = block[0].count("|")
        assert set(block[1].replace("|", "").replace("-", "").replace(":", "")) == set()
        for row in block:
            assert row.endswith("|") and row.count("|") == ncols, row


def test_quick_bench_writes_table_and_json(tmp_path):
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "GIT_"))}
    env.update(BENCH_QUICK="1", BENCH_FILES="60", BENCH_FS="disk,tmpfs", BENCH_OUT=str(out),
               BENCH_CACHE=str(tmp_path / "cache"), BENCH_DIR=str(tmp_path / "work"), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "bench"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    md = (out / "results.md").read_text()
    assert md in p.stdout
    check_tables(md)
    assert "| git, checkout.workers=1 |" in md
    assert "## disk:" in md

    rep = msgspec.json.decode((out / "results.json").read_bytes(), type=Report)
    assert rep.repository["files"] == 60
    assert rep.options["runs"] == 1
    fams = {c.family for c in rep.cells}
    assert {"ours", "git", "dulwich", "tar"} <= fams
    ops = {c.op for c in rep.cells}
    assert ops == {"clone", "far", "near"}
    for c in rep.cells:
        if c.family == "git":
            assert c.error is None and len(c.seconds) == 1 and c.median > 0
            assert c.verified == "clean", c
        if c.family == "tar":
            assert c.op == "clone" and c.verified == "clean"
        if c.family == "dulwich" and c.op == "clone":
            assert c.verified == "clean", c
        if c.family == "ours" and c.workers and not (c.skipped or c.error):
            assert c.ratio_ref == f"git-w{c.workers}" and c.ratio_vs_git is not None
    # the work directory (and any tmpfs copy) is gone, the cache stays for the next run
    assert list((tmp_path / "work").iterdir()) == []
    assert any((tmp_path / "cache").iterdir())


def test_ratios_are_paired_by_round():
    git = Cell("disk", "clone", "git-w1", "git", 1, "git", rounds=[0, 1, 2], seconds=[1.0, 2.0, 4.0])
    # ours missed round 1; its ratios are 0.5 (r0) and 0.5 (r2), whatever git did in r1
    ours = Cell("disk", "clone", "ours-j1", "ours", 1, "ours", "git-w1", rounds=[0, 2], seconds=[0.5, 2.0])
    failed = Cell("disk", "clone", "dulwich", "dulwich", None, "dulwich", "git-w1", error="exit 1: boom")
    skipped = Cell("disk", "clone", "pygit2", "pygit2", None, "pygit2", "git-w1", skipped="not installed")
    cells = [ours, git, failed, skipped]
    summarize(cells)
    assert git.median == 2.0 and git.min == 1.0 and git.max == 4.0 and git.ratio_vs_git is None
    assert ours.ratio_vs_git == 0.5 and ours.median == 1.25
    assert failed.median is None and failed.ratio_vs_git is None
    rep = Report(format=1, started="s", finished="f", command=[], options={"runs": 3, "clone_mode": "checkout"},
                 machine={}, repository={"name": "x"}, filesystems={"disk": "ext4"}, notes=["pygit2 skipped"],
                 cells=cells)
    md = markdown(rep)
    check_tables(md)
    assert "| ours |" in md and "failed [1]" in md and "skipped" in md
    assert "1. disk clone, dulwich: exit 1: boom" in md


def test_latency_filesystem_passes_operations_through(tmp_path):
    from bench.latencyfs import available, mounted

    why = available()
    if why:
        pytest.skip(why)
    back, mnt = tmp_path / "back", tmp_path / "mnt"
    try:
        cm = mounted(str(back), str(mnt), latency_ms=0.2)
        cm.__enter__()
    except RuntimeError as e:  # e.g. a container without the right to mount
        pytest.skip(str(e))
    try:
        (mnt / "d").mkdir()
        fd = os.open(mnt / "d" / "f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
        os.write(fd, b"x" * 300_000)
        os.close(fd)
        with pytest.raises(FileExistsError):
            os.open(mnt / "d" / "f", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.symlink("f", mnt / "d" / "l")
        assert os.readlink(mnt / "d" / "l") == "f"
        assert (back / "d" / "f").read_bytes() == b"x" * 300_000
        st_m, st_b = os.stat(mnt / "d" / "f"), os.stat(back / "d" / "f")
        assert st_m.st_ino == st_b.st_ino and st_m.st_mtime_ns == st_b.st_mtime_ns
        assert st_m.st_mode & 0o111
        os.rename(mnt / "d" / "f", mnt / "d" / "g")
        assert sorted(os.listdir(mnt / "d")) == ["g", "l"]
        os.unlink(mnt / "d" / "g")
        assert not (back / "d" / "g").exists()
    finally:
        cm.__exit__(None, None, None)
    assert not os.path.ismount(mnt)
