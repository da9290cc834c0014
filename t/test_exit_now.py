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


#: Whether a 1 MiB block is mapped on its own after an 8 MiB one was freed:
#: True under a fixed threshold, False once glibc has raised it to 8 MiB.
_MAPPED_AFTER_BIG_FREE = (
    "def mapped_after_big_free():\n"
    "    import ctypes\n"
    "    class MI(ctypes.Structure):\n"
    "        _fields_ = [(n, ctypes.c_size_t) for n in\n"
    "                    'arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost'.split()]\n"
    "    info = ctypes.CDLL(None).mallinfo2\n"
    "    info.restype = MI\n"
    "    big = bytearray(8 << 20)\n"
    "    del big\n"
    "    before = info().hblks\n"
    "    small = bytearray(1 << 20)\n"
    "    return info().hblks > before\n")


def _glibc_mallinfo2() -> bool:
    import ctypes

    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc_mallinfo2(), reason="glibc's malloc (mallinfo2) only")
def test_coordinator_gives_large_transients_back_and_its_children_do_not(tmp_path):
    """``cli.start_program``: a coordinator fixes glibc's mmap threshold, so a
    large block freed later does not move what comes from the heap
    (:func:`wrapper.keep_mmap_threshold`); the helper program keeps glibc's
    adjusting, and a child forked from a coordinator gets it back
    (:func:`wrapper.unfix_mmap_threshold`)."""
    (tmp_path / "sitecustomize.py").write_text(
        "import atexit, sys\n" + _MAPPED_AFTER_BIG_FREE +
        "atexit.register(lambda: sys.stderr.write(f'mapped: {mapped_after_big_free()}\\n'))\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for program, mapped in (("parallel-checkout", True), ("parallel-clone", True), ("checkout--helper", False)):
        p = subprocess.run([sys.executable, "-m", "git_checkout_helper", program, "--no-such-option"],
                           capture_output=True, cwd=tmp_path, env=env)
        assert f"mapped: {mapped}\n".encode() in p.stderr, (program, p.stderr)
    child = subprocess.run([sys.executable, "-c", _MAPPED_AFTER_BIG_FREE + (
        "import os, sys\n"
        "from git_checkout_helper.wrapper import keep_mmap_threshold\n"
        "from git_checkout_helper.workers import fork_child\n"
        "assert keep_mmap_threshold()\n"
        "pid = fork_child({})\n"
        "if pid == 0:\n"
        "    os._exit(10 + mapped_after_big_free())\n"
        "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), mapped_after_big_free())\n")],
        capture_output=True, text=True, cwd=tmp_path)
    assert child.stdout.split() == ["10", "True"], child.stderr


@pytest.mark.skipif(not _glibc_mallinfo2(), reason="glibc's malloc (mallinfo2) only")
def test_a_coordinator_writing_files_itself_adjusts_again(tmp_path):
    """A coordinator that writes the files itself (one worker) sets glibc's
    thresholds back first, as a forked helper does; one that hands them to
    helpers keeps its fixed threshold."""
    repo = tmp_path / "r"
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    for i in range(4):
        (repo / f"f{i}").write_text(f"{i}\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "x"], cwd=repo, check=True, env=env)
    for jobs, mapped in (("1", False), ("2", True)):
        for i in range(4):
            (repo / f"f{i}").unlink()
        p = subprocess.run([sys.executable, "-c", _MAPPED_AFTER_BIG_FREE + (
            "from git_checkout_helper.wrapper import keep_mmap_threshold\n"
            "from git_checkout_helper.cli import checkout_main\n"
            "assert keep_mmap_threshold()\n"
            f"assert checkout_main(['-q', '-j', '{jobs}', '--threshold', '0', '-f', 'HEAD']) == 0\n"
            "print(mapped_after_big_free())\n")], capture_output=True, text=True, cwd=repo, env=env)
        assert p.stdout.split() == [str(mapped)], (jobs, p.stdout, p.stderr)
        assert (repo / "f3").read_text() == "3\n"
