"""``run_async.start_async``: a forked child's result read back. The child
holds no descriptor of the coordinator's but its own pipe (another child's
pipe stays open in no one else, index.lock is not held), says nothing on
the coordinator's stdout or stderr, and a failing child gives None; a
stopped one is reaped."""

from __future__ import annotations

import os

import pytest

from git_checkout_helper.run_async import finish_async, start_async, stop_async


def test_the_child_holds_none_of_the_coordinators_descriptors(capfd, tmp_path):
    r, w = os.pipe()  # as another child's pipe
    lock = os.open(tmp_path / "index.lock", os.O_CREAT | os.O_WRONLY, 0o666)

    def compute() -> bytes:
        os.write(1, b"said on stdout\n")
        os.write(2, b"said on stderr\n")
        held = []
        for fd in (r, w, lock):
            try:
                os.fstat(fd)
                held.append(fd)
            except OSError:
                pass
        return repr(held).encode()

    pid, fd = start_async(compute)
    assert finish_async(pid, fd) == b"[]"
    assert capfd.readouterr() == ("", "")
    for d in (r, w, lock):
        os.close(d)


def test_a_failing_child_gives_none_and_a_stopped_one_is_reaped():
    pid, fd = start_async(lambda: 1 / 0)
    assert finish_async(pid, fd) is None
    pid, fd = start_async(lambda: os.read(os.pipe()[0], 1))  # blocks until killed
    stop_async(pid, fd)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_child_s_parts_are_read_one_at_a_time():
    """A child that returns a list sends it part by part, each read whole
    (``read_part``), and its end says it succeeded (``end_async``); a
    failing child sends no part and says it failed."""
    from git_checkout_helper.run_async import end_async, read_part

    big = bytes(range(256)) * 1024  # (more than a pipe holds: the child writes as the parent reads)
    pid, fd = start_async(lambda: [b"one", b"", big])
    assert [read_part(fd) for _ in range(3)] == [b"one", b"", big]
    assert read_part(fd) is None  # (no fourth part)
    assert end_async(pid, fd) is True
    pid, fd = start_async(lambda: [b"never sent", 1 / 0])
    assert read_part(fd) is None and end_async(pid, fd) is False
