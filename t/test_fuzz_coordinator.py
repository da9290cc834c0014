"""A seeded run of the coordinator's differential fuzzer (t/helper/fuzz-coordinator).

Small random repositories, starting states and operations, each run by
real git and by ours at -j 1, 2 and 3 (threshold 0) in ``cp -a`` twins.
Long runs: ``make fuzz FUZZ_CASES=20000 FUZZ_SEED=...``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import random
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _load_fuzzer():
    path = os.path.join(ROOT, "t", "helper", "fuzz-coordinator")
    loader = importlib.machinery.SourceFileLoader("fuzz_coordinator", path)
    spec = importlib.util.spec_from_loader("fuzz_coordinator", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


fuzz = _load_fuzzer()

#: Classes of divergence the seeded run must not show: crashes, lost user
#: files, and every part of the state (message differences are not asserted).
MUST_AGREE = {"CRASH", "LOSS", *fuzz.STATE_KEYS}


def test_seeded_run(tmp_path):
    # In a process of its own: the forked runs of ours must write to the real
    # stderr, not to pytest's capture (the coordinator's default ``err``).
    n = os.environ.get("FUZZ_TEST_CASES", "100")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "t", "helper", "fuzz-coordinator"), "--cases", n,
                        "--seed", "12", "--no-shrink", "--progress", "0", "--out", str(tmp_path)],
                       capture_output=True, text=True, env=dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin")
                                                                + ":" + os.environ["PATH"]))
    assert f"seed 12, {n} cases" in p.stdout, p.stdout + p.stderr
    classes = {line.split(":")[0].strip() for line in p.stdout.splitlines() if line.startswith("  ")}
    assert not classes & MUST_AGREE, p.stdout


def test_generated_trees_are_valid():
    rng = random.Random(3)
    for _ in range(200):
        for t in fuzz.random_branches(rng):
            for p in t:
                assert not any(q.startswith(p + "/") for q in t), (p, sorted(t))


@pytest.mark.parametrize("layout", fuzz.LAYOUTS)
def test_reproducer_runs(tmp_path, layout):
    """A reproducer is a shell script that rebuilds the case, in its layout
    (a linked worktree, GIT_INDEX_FILE, GIT_DIR with core.worktree), and runs both sides to the exit
    codes the fuzzer saw; the case ran where its layout says."""
    rng = random.Random(5)
    env = fuzz.Env(str(tmp_path / "home"))
    case = dict(fuzz.random_case(rng, jobs=(1,)), layout=layout)
    res = fuzz.run_case(env, str(tmp_path / "case"), case)
    twin = tmp_path / "case" / "git"
    assert (twin / ".git").is_file() == (layout == "linked")
    assert (twin / ".git" / "alt-index").exists() == (layout == "index-file")
    assert (twin / ".repo" / "HEAD").exists() == (layout == "core-worktree")
    script = tmp_path / "repro.sh"
    script.write_text(fuzz.reproducer(case, res))
    p = subprocess.run(["sh", str(script)], env=dict(env.env, PATH=os.path.join(ROOT, ".venv", "bin") + ":"
                                                     + os.environ["PATH"]), capture_output=True)
    assert f"git: exit {res['git']['code']}\n".encode() in p.stdout, p.stdout + p.stderr
    assert f"ours: exit {res[1]['code']}\n".encode() in p.stdout, p.stdout + p.stderr


def test_loss_is_of_the_user_s_bytes():
    """LOSS: git keeps a user's bytes and ours does not. A file git kept as the
    target's, of another mode but the same bytes (it overwrote the user's
    file with them), is no loss where ours kept the user's file as it was."""
    case = {"branches": [{}], "start": 0, "user": {"f": b"mine\n"}, "op": {"kind": "switch", "force": False},
            "steps": []}
    obs = {**{k: b"" for k in (*fuzz.STATE_KEYS, *fuzz.MESSAGE_KEYS)}, "code": 0, "message": "", "stderr": b""}
    git = dict(obs, worktree={b"f": ("x", b"mine\n")})
    assert "LOSS" not in fuzz.compare(case, git, dict(obs, worktree={b"f": ("f", b"mine\n")}))
    assert "LOSS" in fuzz.compare(case, git, dict(obs, worktree={}))
    assert "LOSS" in fuzz.compare(case, git, dict(obs, worktree={b"f": ("x", b"theirs\n")}))


def test_diff_files_lines_of_unsettled_stat_data_are_timing():
    """Under core.checkStat minimal, an entry recorded in the second the
    commands started reads as unchanged or changed by when the file was
    written: its diff-files lines are not compared; any other path's are."""
    case = {"branches": [{}], "start": 0, "user": {}, "op": {"kind": "all"}, "steps": []}
    obs = {**{k: b"" for k in (*fuzz.STATE_KEYS, *fuzz.MESSAGE_KEYS)}, "code": 0, "message": "", "stderr": b""}
    git = dict(obs, **{"diff-files": b"M\tb\n"}, unsettled={b"a"})
    ours = dict(obs, **{"diff-files": b"M\ta\nM\tb\n"}, unsettled=set())
    assert "diff-files" not in fuzz.compare(case, git, ours)
    assert "diff-files" in fuzz.compare(case, dict(git, unsettled=set()), ours)
    assert "diff-files" in fuzz.compare(case, git, dict(ours, **{"diff-files": b"M\ta\n"}))
