"""progress.py against git's progress.c rules, with a fake clock (no sleeps),
and a fast checkout's stderr against git's (no meter before the delay)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from git_checkout_helper.progress import Progress, default_delay


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _lines(out: io.StringIO) -> list[str]:
    return out.getvalue().replace("\r", "\n").splitlines()


def test_nothing_before_the_delay_and_no_done_line():
    clock, out = Clock(), io.StringIO()
    p = Progress("Updating files", 50, out, delay=2, clock=clock)
    for _ in range(50):
        clock.t += 0.01  # half a second in all
        p.add()
    p.stop()
    assert out.getvalue() == ""


def test_delay_counts_ticks_and_the_pending_tick_draws_the_next_update():
    clock, out = Clock(), io.StringIO()
    p = Progress("Updating files", 1000, out, delay=2, clock=clock, columns=200)
    seen = []
    for i in range(1, 1001):
        clock.t += 0.003  # 3 s in all
        p.add()
        seen.append((i, len(_lines(out))))
    # First tick at 1 s (item 334): delay 2 -> 1, still pending; the next
    # update (item 335) takes it to 0 and draws.
    first = next(i for i, n in seen if n)
    assert first == 335
    assert _lines(out)[0] == "Updating files:  33% (335/1000)"
    p.stop()
    assert _lines(out)[-1] == "Updating files: 100% (1000/1000), done."


def test_after_the_start_one_line_per_percent_or_per_tick():
    clock, out = Clock(), io.StringIO()
    p = Progress("Updating files", 10_000, out, delay=0, clock=clock, columns=200)
    for _ in range(10_000):
        p.add()  # no time passes: percentage changes only
    assert len(_lines(out)) == 101  # 0% is never drawn: the first update is 1/10000 -> 0%
    out2 = io.StringIO()
    p = Progress("Updating files", 10_000, out2, delay=0, clock=clock, columns=200)
    p.add()
    clock.t += 1.0
    p.add()  # same percentage, but a tick passed: drawn
    assert _lines(out2) == ["Updating files:   0% (1/10000)", "Updating files:   0% (2/10000)"]


def test_delay_zero_draws_the_first_update():
    clock, out = Clock(), io.StringIO()
    p = Progress("Updating files", 3, out, delay=0, clock=clock)
    p.add()
    p.add()
    p.add()
    p.stop()
    assert out.getvalue() == ("Updating files:  33% (1/3)\rUpdating files:  66% (2/3)\r"
                              "Updating files: 100% (3/3)\rUpdating files: 100% (3/3), done.\n")


def test_split_line_on_a_narrow_terminal():
    clock, out = Clock(), io.StringIO()
    p = Progress("Updating files", 3, out, delay=0, clock=clock, columns=20)
    p.add()
    p.add()
    assert out.getvalue() == "Updating files:     \n   33% (1/3)\r   66% (2/3)\r"


def test_default_delay():
    assert default_delay(None) == 2 and default_delay("0") == 0 and default_delay("5") == 5
    assert default_delay("x") == 2


def test_fast_progress_checkout_prints_what_git_prints(make_repo, git_env, tmp_path):
    """--progress without GIT_PROGRESS_DELAY: a checkout of a few files ends
    before git's 2 s, so neither git nor we draw a meter or a done line."""
    r = make_repo("src")
    for i in range(20):
        (r.path / f"f{i}").write_text(f"{i}\n")
    r.git("add", ".")
    r.git("commit", "-qm", "one")
    r.git("checkout", "-qb", "other")
    for i in range(20):
        (r.path / f"f{i}").write_text(f"changed {i}\n")
    r.git("commit", "-qam", "two")
    r.git("checkout", "-q", "main")
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    env.pop("GIT_PROGRESS_DELAY", None)
    errs = []
    for name, cmd in (("ours", "parallel-checkout"), ("git", "checkout")):
        d = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(r.path), str(d)], env=env, check=True)
        p = subprocess.run(["git", cmd, "--progress", "other"], cwd=d, env=env, capture_output=True)
        errs.append((p.returncode, p.stderr))
    assert errs[0] == errs[1]
    assert b"Updating files" not in errs[0][1]


def test_clone_messages_as_git(make_repo, git_env, tmp_path):
    """A local clone: "done." after "Cloning into", then the checkout's meter
    whatever the terminal says (verbose_update is !quiet), with its done line
    once the delay has passed (GIT_PROGRESS_DELAY=0 here); -q: nothing."""
    r = make_repo("src")
    for i in range(5):
        (r.path / f"f{i}").write_text(f"{i}\n")
    r.git("add", ".")
    r.git("commit", "-qm", "one")
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    results = {}
    for extra_env, args in (({"GIT_PROGRESS_DELAY": "0"}, []), ({}, []), ({"GIT_PROGRESS_DELAY": "0"}, ["-q"]),
                            ({"GIT_PROGRESS_DELAY": "0"}, ["--no-progress"])):
        got = []
        for cmd in ("parallel-clone", "clone"):
            d = tmp_path / f"{cmd}-{len(extra_env)}-{'-'.join(args)}"
            p = subprocess.run(["git", cmd, *args, str(r.path), str(d)], env=dict(env, **extra_env),
                               capture_output=True)
            got.append((p.returncode, p.stderr.replace(str(d).encode(), b"DIR")))
        assert got[0] == got[1], (extra_env, args)
        results[(bool(extra_env), tuple(args))] = got[0][1]
    assert results[(True, ())].endswith(b"(4/5)\rUpdating files: 100% (5/5)\rUpdating files: 100% (5/5), done.\n")
    assert results[(False, ())] == b"Cloning into 'DIR'...\ndone.\n"
    assert results[(True, ("-q",))] == b""
