"""``workers.fork_child``: a child process never runs the coordinator's signal
handlers (they end in its cleanup, which removes index.lock), even for a
signal that arrives between the fork and the child's own handlers."""

from __future__ import annotations

import os
import signal

from git_checkout_helper import workers


def test_a_signal_in_the_window_meets_the_childs_handler(monkeypatch):
    r, w = os.pipe()

    def coordinators_handler(signum, frame):  # what cli installs: it must run in the coordinator only
        os.write(w, b"%d\n" % os.getpid())

    old = signal.signal(signal.SIGTERM, coordinators_handler)
    real_fork = os.fork

    def fork_then_signal():
        pid = real_fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives before the child's handlers are set
        return pid

    monkeypatch.setattr(workers.os, "fork", fork_then_signal)
    try:
        pid = workers.fork_child({signal.SIGTERM: signal.SIG_DFL})
        if pid == 0:  # (a child that outlives the signal: it must not)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == set()  # nothing left held here
        assert signal.getsignal(signal.SIGTERM) is coordinators_handler
    finally:
        signal.signal(signal.SIGTERM, old)
        os.close(w)
    with os.fdopen(r, "rb") as f:
        assert f.read() == b""  # the coordinator's handler ran nowhere
