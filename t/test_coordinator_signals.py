"""Signals to the coordinator in the middle of a checkout.

SIGTERM, SIGINT (to the coordinator alone, or to its process group, as a
terminal's Ctrl-C) and SIGHUP arrive while helpers are writing, or while they
wait idle for their batch. Afterwards no helper is left running, there is no
``index.lock``, the index is the old one byte for byte, HEAD has not moved,
every tracked path holds its old content, its new content or nothing (never
half of a file), the user's files are intact, and a plain re-run finishes.

Deterministic without sleeps: helpers are ``t/helper/misbehaving-helper``,
which announce themselves on a FIFO and block on another one after two
results; a smudge filter does the same for the coordinator's own writes. The
test sends its signal only once every party has said it is where it should be.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import pytest
from conftest import git, isolated_git_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MISBEHAVE = os.path.join(ROOT, "t", "helper", "misbehaving-helper")
COORDINATOR = [sys.executable, "-c", "import sys; from git_checkout_helper.cli import checkout_main; "
               "sys.exit(checkout_main())"]
#: Only a bound against hanging forever if something is broken; nothing
#: waits for time to pass.
DEADLINE = 60

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.isdir("/proc"),
                                reason="needs FIFOs and /proc")


def _env(home: str) -> dict[str, str]:
    return {**isolated_git_env(home), "LC_ALL": "C"}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """main -> other: f01..f40 rewritten, new/n1..n4 added, gone removed,
    keep unchanged; filtered: other plus a file written through a smudge
    filter (by the coordinator itself, while the helpers wait)."""
    home = str(tmp_path_factory.mktemp("home"))
    env = _env(home)
    src = os.path.join(home, "src")
    git(None, "init", "-q", "-b", "main", src, env=env)
    for i in range(1, 41):
        _write(src, f"f{i:02d}", f"main {i}\n")
    _write(src, "keep", "keep\n")
    _write(src, "gone", "gone\n")
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "main", env=env)
    git(src, "checkout", "-q", "-b", "other", env=env)
    for i in range(1, 41):
        _write(src, f"f{i:02d}", f"other {i}\n")
    os.mkdir(os.path.join(src, "new"))
    for i in range(1, 5):
        _write(src, f"new/n{i}", f"new {i}\n")
    git(src, "rm", "-q", "gone", env=env)
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "other", env=env)
    git(src, "checkout", "-q", "-b", "filtered", env=env)
    _write(src, ".gitattributes", "slow filter=block\n")
    _write(src, "slow", "through the filter\n")
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "filtered", env=env)
    git(src, "checkout", "-q", "main", env=env)
    return env, src


def _write(top: str, path: str, text: str) -> None:
    with open(os.path.join(top, path), "w") as f:
        f.write(text)


def _contents(env, src: str, rev: str) -> dict[str, bytes]:
    names = git(src, "ls-tree", "-r", "--name-only", "-z", rev, env=env).split(b"\0")
    return {n.decode(): git(src, "cat-file", "blob", f"{rev}:{n.decode()}", env=env) for n in names if n}



def _interruptible() -> None:
    """In the coordinator's child, before exec: SIGINT as a terminal gives it.
    pytest started in the background by a shell without job control (as
    `make test` starts it) has SIGINT ignored, and the coordinator would
    inherit that and never see the ^C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

class Scene:
    """A fresh clone on main with user data, FIFOs, and the coordinator's state before."""

    def __init__(self, tmp_path, source):
        self.env, self.src = source
        self.tmp = str(tmp_path)
        self.wt = os.path.join(self.tmp, "wt")
        git(None, "clone", "-q", self.src, self.wt, env=self.env)
        _write(self.wt, "mine.txt", "mine, untracked\n")
        with open(os.path.join(self.wt, "keep"), "a") as f:
            f.write("a local change\n")
        self.user = self._user_data()
        self.ready = os.path.join(self.tmp, "ready")
        self.block = os.path.join(self.tmp, "block")
        self.pids = os.path.join(self.tmp, "pids")
        os.mkfifo(self.ready)
        os.mkfifo(self.block)
        # Read-write: opening never blocks, and no EOF between writers.
        self.ready_fd = os.open(self.ready, os.O_RDWR | os.O_NONBLOCK)
        self.index = self._read(".git/index")
        self.head = self._head()
        self.proc: subprocess.Popen | None = None
        self._buf = b""

    def _read(self, rel: str) -> bytes:
        with open(os.path.join(self.wt, rel), "rb") as f:
            return f.read()

    def _user_data(self) -> dict[str, bytes]:
        return {p: self._read(p) for p in ("mine.txt", "keep")}

    def _head(self) -> tuple[bytes, bytes]:
        return self._read(".git/HEAD"), git(self.wt, "rev-parse", "HEAD", env=self.env)

    def start(self, rev: str, *args: str, helper: str = "block results=2", new_session: bool = False):
        env = dict(self.env, MISBEHAVE_PIDS=self.pids, MISBEHAVE_READY=self.ready, MISBEHAVE_BLOCK=self.block)
        argv = [*COORDINATOR, "-j", "2", "--threshold", "0",
                "--helper-cmd", f"{sys.executable} {MISBEHAVE} {helper}", *args, rev]
        self.proc = subprocess.Popen(argv, cwd=self.wt, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=new_session,
                                     preexec_fn=_interruptible)

    def wait_for(self, *expected: str) -> list[str]:
        """Lines on the ready FIFO until every expected word has come as
        often as it is expected (a state change the test itself caused)."""
        lines: list[str] = []
        end = time.monotonic() + DEADLINE

        def done() -> bool:
            words = [ln.split()[0] for ln in lines]
            return all(words.count(w) >= expected.count(w) for w in expected)

        while not done():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                pytest.fail(f"coordinator exited ({self.proc.returncode}) early: {err.decode()}")
            left = end - time.monotonic()
            if left <= 0:
                pytest.fail(f"only {lines} arrived")
            if select.select([self.ready_fd], [], [], min(left, 1.0))[0]:
                self._buf += os.read(self.ready_fd, 4096)
                *complete, self._buf = self._buf.split(b"\n")
                lines += [ln.decode() for ln in complete]
        return lines

    def finish(self) -> tuple[int, str]:
        _, err = self.proc.communicate(timeout=DEADLINE)
        return self.proc.returncode, err.decode()

    def helper_pids(self) -> list[int]:
        with open(self.pids) as f:
            return [int(x) for x in f.read().split()]

    def release(self) -> None:
        """Let anything still blocked on the FIFO go (only after a failure)."""
        try:
            fd = os.open(self.block, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            pass  # no reader left: good
        else:
            os.close(fd)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.ready_fd)

    def assert_nothing_lost(self, rev: str) -> None:
        # No helper (or filter) outlived the coordinator.
        alive = [p for p in self.helper_pids() if os.path.exists(f"/proc/{p}")]
        assert not alive, f"left running: {alive}"
        # The old index, byte for byte; no lock; HEAD where it was.
        assert not os.path.exists(os.path.join(self.wt, ".git", "index.lock"))
        assert self._read(".git/index") == self.index
        assert self._head() == self.head
        assert self._user_data() == self.user
        # Every tracked path: old content, new content, or absent; never half.
        old, new = _contents(self.env, self.src, "main"), _contents(self.env, self.src, rev)
        for path in sorted(set(old) | set(new)):
            if path == "keep":
                continue
            full = os.path.join(self.wt, path)
            have = self._read(path) if os.path.lexists(full) else None
            assert have in (old.get(path), new.get(path), None), f"{path}: {have!r}"

    def assert_rerun_finishes(self, rev: str) -> None:
        res = subprocess.run([*COORDINATOR, "-q", "-j", "2", "--threshold", "0", rev],
                             cwd=self.wt, env=self.env, capture_output=True)
        assert res.returncode == 0, res.stderr.decode()
        assert git(self.wt, "rev-parse", "HEAD", env=self.env) == git(self.src, "rev-parse", rev, env=self.env)
        git(self.wt, "diff-index", "--cached", "--quiet", "HEAD", env=self.env)
        assert git(self.wt, "diff-files", "--name-only", env=self.env) == b"keep\n"
        assert self._user_data() == self.user


@pytest.fixture
def scene(tmp_path, source):
    s = Scene(tmp_path, source)
    yield s
    s.release()


@pytest.mark.parametrize(
    "sig, group",
    [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGHUP, False)],
    ids=["SIGTERM", "SIGINT", "Ctrl-C to the group", "SIGHUP"],
)
def test_signal_while_helpers_write(scene, sig, group):
    """Both helpers have written three files and answered two; then the signal."""
    scene.start("other", new_session=group)
    lines = scene.wait_for("start", "start", "blocked", "blocked")
    assert sorted(int(ln.split()[1]) for ln in lines if ln.startswith("start")) == sorted(scene.helper_pids())
    if group:
        os.killpg(scene.proc.pid, sig)
    else:
        scene.proc.send_signal(sig)
    rc, err = scene.finish()
    assert rc == 130, err
    assert "interrupted: the index and HEAD were left as they were" in err
    assert "Traceback" not in err, err
    scene.assert_nothing_lost("other")
    scene.assert_rerun_finishes("other")


def test_sigterm_while_helpers_wait_for_their_batch(scene):
    """The helpers were started early and wait idle; the coordinator is in a
    smudge filter of its own when SIGTERM comes: filter and helpers go."""
    filt = (f'printf "filter %d\\n" $$ >>"{scene.ready}"; printf "%d\\n" $$ >>"{scene.pids}"; '
            f'exec cat "{scene.block}"')
    git(scene.wt, "config", "filter.block.smudge", filt, env=scene.env)
    scene.start("filtered", helper="behave")
    scene.wait_for("start", "start", "filter")
    scene.proc.send_signal(signal.SIGTERM)
    rc, err = scene.finish()
    assert rc == 130, err
    assert "Traceback" not in err, err
    assert len(scene.helper_pids()) == 3
    scene.assert_nothing_lost("filtered")
    git(scene.wt, "config", "filter.block.smudge", "cat", env=scene.env)
    scene.assert_rerun_finishes("filtered")
