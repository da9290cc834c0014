"""cli.exit_now: the commands leave as git's exit() does, without the
interpreter's finalization, and lose nothing on the way: exit handlers run,
output is flushed, the status is kept; a profiler, a thread that is not a
daemon or a stream that cannot be flushed gets the interpreter's own exit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from git_checkout_helper import cli

PROGRAM = """
import atexit, sys, weakref
from git_checkout_helper.cli import exit_now

class Held:
    pass

held = Held()
weakref.finalize(held, print, "finalized")
atexit.register(lambda: sys.stderr.write("handler ran\\n"))
sys.stdout.write("buffered, no newline")
(exit_now if sys.argv[2:] != ["sys.exit"] else sys.exit)(int(sys.argv[1]))
"""


@pytest.mark.parametrize("code", [0, 3, 128])
def test_status_output_and_handlers_kept(code):
    p = subprocess.run([sys.executable, "-c", PROGRAM, str(code)], capture_output=True)
    assert p.returncode == code
    assert p.stdout == b"buffered, no newlinefinalized\n"
    assert p.stderr == b"handler ran\n"


def test_a_closed_pipe_ends_as_with_the_interpreters_exit():
    """stdout gone: the same status and the same report as sys.exit gives."""
    def run(how):
        r, w = os.pipe()
        os.close(r)
        try:
            return subprocess.run([sys.executable, "-c", PROGRAM, "0", how], stdout=w, stderr=subprocess.PIPE)
        finally:
            os.close(w)

    ours, theirs = run("exit_now"), run("sys.exit")
    assert theirs.returncode != 0
    assert ours.returncode == theirs.returncode
    assert ours.stderr.count(b"BrokenPipeError") == theirs.stderr.count(b"BrokenPipeError") > 0


def test_a_thread_that_is_not_a_daemon_gets_the_interpreters_exit(monkeypatch):
    release = threading.Event()
    t = threading.Thread(target=release.wait)
    t.start()

    def no_os_exit(code):
        raise AssertionError("os._exit with a thread still running")

    monkeypatch.setattr(os, "_exit", no_os_exit)
    try:
        with pytest.raises(SystemExit) as info:
            cli.exit_now(5)
        assert info.value.code == 5
    finally:
        release.set()
        t.join()


WITNESS = """
import sys

class _Witness:
    def __del__(self):
        sys.stderr.write("interpreter finalization ran\\n")

_witness = _Witness()
"""


def test_the_commands_exit_through_it(tmp_path):
    """The installed programs and ``python -m`` leave without the
    interpreter's finalization (a module-level object's ``__del__``, loaded
    through sitecustomize, never runs), with the command's status (129: a
    usage error); a plain ``sys.exit`` in the same set-up runs it."""
    (tmp_path / "sitecustomize.py").write_text(WITNESS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    plain = subprocess.run([sys.executable, "-c", "import sys; sys.exit(3)"], capture_output=True, env=env)
    assert plain.returncode == 3 and b"interpreter finalization ran" in plain.stderr
    bindir = os.path.dirname(sys.executable)
    for argv in ([sys.executable, "-m", "git_checkout_helper", "parallel-checkout", "--no-such-option"],
                 [os.path.join(bindir, "git-parallel-checkout"), "--no-such-option"],
                 [os.path.join(bindir, "git-parallel-clone"), "--no-such-option"],
                 [os.path.join(bindir, "git-checkout--helper"), "--no-such-option"]):
        p = subprocess.run(argv, capture_output=True, cwd=tmp_path, env=env)
        assert p.returncode == 129, p.stderr
        assert b"unknown option" in p.stderr
        assert b"interpreter finalization ran" not in p.stderr, argv


def test_a_profiled_command_still_writes_its_profile(tmp_path):
    """``python -m cProfile`` writes its statistics as the interpreter leaves."""
    out = tmp_path / "prof"
    p = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "git_checkout_helper",
                        "parallel-checkout", "--no-such-option"], capture_output=True, cwd=tmp_path)
    assert b"unknown option" in p.stderr  # (cProfile itself swallows the status)
    assert out.exists() and out.stat().st_size > 0


def test_what_each_program_does_first(tmp_path):
    """``cli.start_program``: the coordinator's programs (and ``python -m``)
    disable the cyclic garbage collector, the helper program keeps it; the
    Python API does neither."""
    (tmp_path / "sitecustomize.py").write_text(
        "import atexit, gc, sys\n"
        "def report():\n"
        "    sys.stderr.write(f'collector enabled: {gc.isenabled()}\\n')\n"
        "atexit.register(report)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    bindir = os.path.dirname(sys.executable)
    helper_script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin",
                                 "git-checkout--helper")
    for argv, enabled in (
            ([sys.executable, "-m", "git_checkout_helper", "parallel-checkout", "--no-such-option"], False),
            ([sys.executable, "-m", "git_checkout_helper", "parallel-clone", "--no-such-option"], False),
            ([sys.executable, "-m", "git_checkout_helper", "checkout--helper", "--no-such-option"], True),
            ([os.path.join(bindir, "git-parallel-checkout"), "--no-such-option"], False),
            ([os.path.join(bindir, "git-parallel-clone"), "--no-such-option"], False),
            ([os.path.join(bindir, "git-checkout--helper"), "--no-such-option"], True),
            ([sys.executable, helper_script, "--no-such-option"], True)):
        p = subprocess.run(argv, capture_output=True, cwd=tmp_path, env=env)
        assert p.returncode == 129, p.stderr
        assert f"collector enabled: {enabled}\n".encode() in p.stderr, (argv, p.stderr)
    assert cli.checkout_main(["--no-such-option"]) == 129
    import gc

    assert gc.isenabled()
