"""A switch's helpers started before its merge (``start_helpers_ahead``):
forked once the index is read, kept when the merge calls for as many,
stopped when it calls for fewer or fails; never while tracing or with
``checkout.workers=auto``. What the switch leaves is git's either way."""

from __future__ import annotations

import io
import os

import pytest
from conftest import clone_twins, files_repo, git, isolate_api_env, run_git, twin_env

from git_checkout_helper.checkout import parallel
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.errors import CheckoutError
from git_checkout_helper.plan import PlanError
from git_checkout_helper.repository import Repository
from git_checkout_helper.trace2 import Trace2

N_FILES = 300


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """main: N_FILES files; other: 60 of them changed; one: a single file changed."""
    src = tmp_path_factory.mktemp("ahead") / "src"
    env = twin_env(src.parent)
    files_repo(src, N_FILES, 10, {"other": range(0, N_FILES, 5), "one": range(1)}, env)
    return src, env


def _switch(src, tmp_path, monkeypatch, to: str, opts: CheckoutOptions, git_args=(), prepare=None, trace=None):
    """Twins switched from main to ``to``: ours through the API, git with
    ``git_args``. Returns (ours, git's, what ours raised or its report,
    git's run, the pids of the helpers started ahead)."""
    source, env = src
    ours, theirs = clone_twins(source, env, tmp_path, to, prepare)
    pids = []
    ahead = parallel.ParallelCheckout.start_helpers_ahead

    def spy_ahead(self, most):
        ahead(self, most)
        pids.extend(h.proc.pid for h in (self.pool.helpers if self.pool is not None else ()))

    monkeypatch.setattr(parallel.ParallelCheckout, "start_helpers_ahead", spy_ahead)
    isolate_api_env(monkeypatch, env["HOME"])
    out, err = io.StringIO(), io.StringIO()
    try:
        got = run_checkout(Repository.open(str(ours), dict(os.environ)), to, opts, err=err, out=out, trace=trace)
    except (CheckoutError, PlanError) as e:  # (as the CLI says them)
        got = e
        err.write(f"{e}\n")
    theirs_run = run_git(theirs, *git_args, "checkout", to, env=env, text=True, check=False)
    assert (out.getvalue(), err.getvalue()) == (theirs_run.stdout, theirs_run.stderr)
    for pid in pids:  # every helper started is reaped
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    assert not (ours / ".git" / "index.lock").exists()
    for args in (["ls-files", "-s"], ["status", "--porcelain"], ["rev-parse", "HEAD"], ["diff-files"]):
        assert git(ours, *args, env=env) == git(theirs, *args, env=env), args
    return ours, theirs, got, theirs_run, pids


def test_helpers_start_before_the_merge_and_write_its_files(src, tmp_path, monkeypatch, helpers_at_merge):
    opts = CheckoutOptions(workers=2, threshold=0, online_cpus=2)
    *_, report, _run, pids = _switch(src, tmp_path, monkeypatch, "other", opts,
                                               ("-c", "checkout.workers=2", "-c", "checkout.thresholdForParallelism=0"))
    assert helpers_at_merge == [2] and len(pids) == 2
    assert report.workers == 2 and report.parallel_items == N_FILES // 5 and report.sequential_items == 0


def test_a_merge_with_fewer_items_than_the_threshold_stops_them(src, tmp_path, monkeypatch, helpers_at_merge):
    opts = CheckoutOptions(workers=2, online_cpus=2)  # git's threshold: 100 files
    *_, report, _run, pids = _switch(src, tmp_path, monkeypatch, "one", opts,
                                               ("-c", "checkout.workers=2"))
    assert helpers_at_merge == [2] and len(pids) == 2  # the index has 300 entries: started ahead
    assert report.workers == 1 and report.parallel_items == 0 and report.sequential_items == 1


def test_a_refused_switch_stops_them(src, tmp_path, monkeypatch, helpers_at_merge):
    opts = CheckoutOptions(workers=2, threshold=0, online_cpus=2)

    def local_change(path):
        (path / "d00" / "f0").write_text("local\n")  # other changes f0 too: refused

    ours, theirs, raised, run, pids = _switch(
        src, tmp_path, monkeypatch, "other", opts,
        ("-c", "checkout.workers=2", "-c", "checkout.thresholdForParallelism=0"), local_change)
    assert isinstance(raised, PlanError) and run.returncode == 1
    assert helpers_at_merge == [2] and len(pids) == 2
    assert (ours / "d00" / "f0").read_text() == (theirs / "d00" / "f0").read_text() == "local\n"


@pytest.mark.parametrize("why", ["auto", "trace", "config auto"])
def test_not_ahead_with_auto_or_while_tracing(src, tmp_path, monkeypatch, helpers_at_merge, why):
    trace = None
    opts = CheckoutOptions(workers=2, threshold=0, online_cpus=2)
    git_args = ["-c", "checkout.workers=2", "-c", "checkout.thresholdForParallelism=0"]
    prepare = None
    if why == "auto":
        opts = CheckoutOptions(workers="auto", threshold=0, online_cpus=2)
    elif why == "trace":
        trace = Trace2(event_target=str(tmp_path / "trace.json"))
    else:
        opts = CheckoutOptions(threshold=0, online_cpus=2)

        def prepare(path):  # (git 2.39 has no auto: ours only)
            if path.name == "ours":
                git(path, "config", "checkout.workers", "auto", env=src[1])
    *_, pids = _switch(src, tmp_path, monkeypatch, "other", opts, git_args, prepare, trace)
    assert helpers_at_merge == [0] and pids == []
    if trace is not None:
        events = (tmp_path / "trace.json").read_text()
        assert events.count('"event":"child_start"') == 2  # started after the merge, as git's


@pytest.mark.parametrize("ahead", [True, False])
def test_forked_helpers_trust_the_paths_their_coordinator_verified(src, tmp_path, monkeypatch, ahead):
    """The coordinator verifies every path before it touches anything
    (``updates._execute``); the helpers it forks take its items as its own
    sequential writes do, without verifying each path again. A verifier that
    refuses every path, in place when they are forked (before the merge or
    after it), would fail each of their items if they asked it."""
    from git_checkout_helper import entry

    monkeypatch.setattr(entry, "verify_item_path", lambda *a: "refused by the test")
    if not ahead:
        monkeypatch.setattr(parallel.ParallelCheckout, "start_helpers_ahead", lambda self, most: None)
    opts = CheckoutOptions(workers=2, threshold=0, online_cpus=2)
    *_, report, _run, pids = _switch(src, tmp_path, monkeypatch, "other", opts,
                                     ("-c", "checkout.workers=2", "-c", "checkout.thresholdForParallelism=0"))
    assert report.workers == 2 and report.parallel_items == N_FILES // 5 and report.failed == []
    assert len(pids) == (2 if ahead else 0)
