"""Path collisions on a case-insensitive filesystem (git's t2081 on clone).

A FUSE passthrough with case-folding lookups (``bench.latencyfs`` with
``fold_case``) stands in for macOS/Windows filesystems. ``file_x``,
``File_x`` and ``FILE_X`` then collide: one helper's ``O_EXCL`` create finds
another's file (COLLIDED), the coordinator rewrites the item in order, and
clone warns with the colliding group, as git does. Both clones run on the
same mount, with helpers and threshold 0, and are compared.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import git, run_git

from bench import latencyfs

pytestmark = pytest.mark.skipif(
    latencyfs.available() is not None, reason=f"no FUSE here: {latencyfs.available()}"
)


def collided_group(stderr: str) -> list[str]:
    """The paths git's "the following paths have collided" warning lists."""
    assert "the following paths have collided" in stderr, stderr
    return sorted(line.strip().strip("'") for line in stderr.splitlines() if line.startswith("  '"))


@pytest.fixture
def source(tmp_path, git_env):
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", "-b", "main", str(src), env=git_env)
    for i in range(60):
        (src / f"d{i % 5}").mkdir(exist_ok=True)
        (src / f"d{i % 5}" / f"f{i}").write_text(f"file {i}\n")
    for name in ("file_x", "File_x", "FILE_X"):
        (src / name).write_text(f"content of {name}\n")
    git(src, "add", ".", env=git_env)
    git(src, "commit", "-q", "-m", "collisions", env=git_env)
    return src


@pytest.mark.parametrize("workers", [1, 2])
def test_clone_collisions_like_git(tmp_path, source, git_env, workers):
    backing, mnt = tmp_path / "backing", tmp_path / "mnt"
    with latencyfs.mounted(str(backing), str(mnt), latency_ms=0, fold_case=True):
        # The mount really folds case.
        (mnt / "probe").write_text("x")
        assert (mnt / "PROBE").read_text() == "x"
        theirs = run_git(
            None, "-c", f"checkout.workers={workers}", "-c", "checkout.thresholdForParallelism=0",
            "clone", "-q", str(source), str(mnt / "git"),
            env=git_env, check=False, text=True,
        )
        ours = subprocess.run(
            [sys.executable, "-m", "git_checkout_helper", "parallel-clone", "-q", "-v", "-j", str(workers),
             "--threshold", "0", str(source), str(mnt / "ours")],
            capture_output=True, text=True, env=git_env,
        )
        assert theirs.returncode == 0, theirs.stderr
        assert ours.returncode == 0, ours.stderr
        assert ours.stderr == theirs.stderr  # the warning, word for word
        assert collided_group(ours.stderr) == ["FILE_X", "File_x", "file_x"]
        report = json.loads(ours.stdout.strip().splitlines()[-1])
        assert report["collided"], report  # an O_EXCL create really found another's file
        assert report["workers"] == workers and not report["failed"]
        for clone in ("git", "ours"):
            names = sorted(os.listdir(mnt / clone))
            assert len([n for n in names if n.casefold() == "file_x"]) == 1, names
            files = git(mnt / clone, "ls-files", env=git_env).split()
            assert len(files) == 63  # the index keeps every entry of the group
        # Everything outside the group is byte-identical to git's clone.
        for i in range(60):
            rel = os.path.join(f"d{i % 5}", f"f{i}")
            assert (mnt / "ours" / rel).read_bytes() == (mnt / "git" / rel).read_bytes()
