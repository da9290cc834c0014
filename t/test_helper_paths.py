"""Path validation in the helper: nothing outside the work tree is ever touched.

The helper trusts nothing on its stdin. Each test sets up a work tree whose
hostile targets *would* be writable by a naive helper (the directories exist,
the symlinks point at a writable directory outside), runs the real helper
process on a batch, and then compares a snapshot of everything around the
work tree (bytes, mode, mtime, link targets) with the one taken before.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from git_checkout_helper.entry import (  # noqa: E402
    CheckoutState,
    verify_item_path,
    write_pc_item,
)
from git_checkout_helper.pktline import FLUSH, PktReader, pkt_line  # noqa: E402
from git_checkout_helper.wire import (  # noqa: E402
    REQUEST_LAYOUTS,
    PcItem,
    PcItemStatus,
    decode_result,
    native_stat_layout,
)
from git_checkout_helper.wrapper import show_path  # noqa: E402

WRITTEN = PcItemStatus.PC_ITEM_WRITTEN
COLLIDED = PcItemStatus.PC_ITEM_COLLIDED
FAILED = PcItemStatus.PC_ITEM_FAILED
GIT = REQUEST_LAYOUTS["git"]
CONTENT = b"hello from the blob\n"
OLD_NS = 1_000_000_000 * 10**9  # 2001-09-09: an mtime nothing here would set
ZWNJ = "\u200c".encode()  # HFS+ ignores it: ".g<ZWNJ>it" is ".git" there


def helper_cmd(*args: str) -> list[str]:
    """The installed helper (what git runs), or the same entry point via -c."""
    exe = os.path.join(ROOT, ".venv", "bin", "git-checkout--helper")
    if os.access(exe, os.X_OK):
        return [exe, *args]
    code = "import sys; from git_checkout_helper.cli import helper_main; sys.exit(helper_main())"
    return [sys.executable, "-c", code, *args]


def clean_env(home: str, git_dir: str, config: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               GIT_CONFIG_NOSYSTEM="1", GIT_DIR=git_dir, PYTHONPATH=ROOT)
    for i, (k, v) in enumerate((config or {}).items()):
        env[f"GIT_CONFIG_KEY_{i}"] = k
        env[f"GIT_CONFIG_VALUE_{i}"] = v
    if config:
        env["GIT_CONFIG_COUNT"] = str(len(config))
    return env


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A repository holding one blob; returns (git_dir, raw oid)."""
    top = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", str(top)], check=True,
                   env=clean_env(str(top), "", None) | {"GIT_DIR": str(top / ".git")})
    oid = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=CONTENT, check=True,
                         capture_output=True, env=clean_env(str(top), str(top / ".git"))).stdout
    return str(top / ".git"), bytes.fromhex(oid.strip().decode())


def batch(oid: bytes, names: list[bytes], start: int = 0) -> bytes:
    return b"".join(
        pkt_line(PcItem(id=start + i, oid=oid, ce_mode=0o100644, name=n).encode(GIT))
        for i, n in enumerate(names)
    ) + b"0000"


def parse_results(out: bytes) -> list:
    """Results, with ``None`` for each flush."""
    fd = os.memfd_create("results")
    try:
        os.write(fd, out)
        os.lseek(fd, 0, os.SEEK_SET)
        reader = PktReader(fd)
        res = []
        while (pkt := reader.read_pkt()) is not None:
            res.append(None if pkt == FLUSH else decode_result(pkt, native_stat_layout()))
        return res
    finally:
        os.close(fd)


def snapshot(top: str) -> dict[str, tuple]:
    """Everything below ``top``: type, mode, size, mtime, content or link target."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                extra = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    extra = f.read()
            else:
                extra = None
            snap[os.path.relpath(p, top)] = (st.st_mode, st.st_size, st.st_mtime_ns, extra)
    return snap


@pytest.fixture
def tree(tmp_path):
    """An outside directory with a victim file, and a work tree full of traps."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "victim").write_bytes(b"precious\n")
    (out / "sub").mkdir()
    os.utime(out / "victim", ns=(OLD_NS, OLD_NS))
    wt = tmp_path / "wt"
    wt.mkdir()
    os.symlink("../outside", wt / "d")  # relative symlink out of the tree
    os.symlink(str(out), wt / "dabs")  # absolute symlink out of the tree
    (wt / "a").mkdir()
    os.symlink(str(out), wt / "a" / "b")  # a deeper leading dir
    (wt / "f").write_bytes(b"a file, not a dir\n")
    os.symlink(str(out / "new-by-link"), wt / "link")  # dangling: O_CREAT would follow it
    os.symlink(str(out / "victim"), wt / "link2")  # O_TRUNC would clobber the victim
    for d in (".git/hooks", ".GIT", "git~1", "sub/.git", ".git.", (b".g" + ZWNJ + b"it").decode(), "real"):
        (wt / d).mkdir(parents=True)
    for p in (out / "victim", out / "sub", out):
        os.utime(p, ns=(OLD_NS, OLD_NS))
    return tmp_path


def run_helper(tmp_path, git_dir: str, data: bytes, *args: str, config=None, cwd=None):
    p = subprocess.run(
        helper_cmd(*args), input=data, capture_output=True, cwd=cwd or (tmp_path / "wt"),
        env=clean_env(str(tmp_path), git_dir, config), timeout=60,
    )
    return p.returncode, parse_results(p.stdout), p.stderr.decode("utf-8", "replace")


# Name -> expected status with default settings (core.protectNTFS on, HFS off).
HOSTILE: list[tuple[bytes, int]] = [
    (b"d/file", COLLIDED),  # leading dir is a symlink out of the tree
    (b"d/victim", COLLIDED),
    (b"d/sub/file", COLLIDED),
    (b"dabs/file", COLLIDED),
    (b"a/b/file", COLLIDED),  # deeper leading symlink
    (b"f/x", COLLIDED),  # leading dir is a file
    (b"missing/x", COLLIDED),  # the helper never creates directories
    (b"link", COLLIDED),  # basename is a dangling symlink
    (b"link2", COLLIDED),  # basename is a symlink to the victim
    (b"../x", FAILED),
    (b"../outside/new", FAILED),
    (b"real/../../outside/new", FAILED),
    (b"real/../x", FAILED),
    (b".", FAILED),
    (b"..", FAILED),
    (b"./real/x", FAILED),
    (b"real/./x", FAILED),
    (b"", FAILED),
    (b"real//x", FAILED),
    (b"real/", FAILED),
    (b"/abs-root-file", FAILED),
    (b".git", FAILED),
    (b".git/hooks/x", FAILED),
    (b".GIT/config", FAILED),
    (b".Git/config", FAILED),
    (b"sub/.git/x", FAILED),
    (b"git~1/config", FAILED),  # NTFS 8.3 short name of .git
    (b".git./x", FAILED),  # NTFS drops trailing dots
    (b".git /x", FAILED),  # ... and trailing spaces
    (b"real/x\0../../../outside/nul", FAILED),
    (b"real/nul\0", FAILED),  # open() would refuse it, but only with an exception
]


def test_hostile_paths_touch_nothing_outside(tree, repo):
    git_dir, oid = repo
    abs_target = str(tree / "abs")
    names = [n for n, _ in HOSTILE] + [os.fsencode(abs_target), b"real/good"]
    expect = [s for _, s in HOSTILE] + [FAILED, WRITTEN]
    before = snapshot(str(tree))
    rc, res, err = run_helper(tree, git_dir, batch(oid, names))
    assert rc == 0, err
    assert res[-1] is None and len(res) == len(names) + 1
    got = {n: r.status for n, r in zip(names, res, strict=False)}
    assert [r.id for r in res[:-1]] == list(range(len(names)))
    assert got == dict(zip(names, expect, strict=True))
    # Only real/good appeared, and everything else is as it was, mtime included.
    after = snapshot(str(tree))
    new = set(after) - set(before)
    assert new == {os.path.join("wt", "real", "good")}, new
    changed = {k for k in before if before[k] != after[k] and k != os.path.join("wt", "real")}
    assert not changed, changed
    assert after[os.path.join("wt", "real", "good")][3] == CONTENT
    assert not os.path.lexists(abs_target)
    assert not os.path.lexists(tree / "x")
    # One clear error line per rejected path, naming it; collisions are silent.
    lines = err.splitlines()
    failed = [n for n, s in zip(names, expect, strict=True) if s == FAILED]
    assert len(lines) == len(failed), err
    for line, name in zip(lines, failed, strict=True):
        assert line.startswith("error: "), line
        shown = name.split(b"\0")[0].decode()
        assert f"'{shown}" in line, (line, name)
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "config, name, status",
    [
        ({}, b".g" + ZWNJ + b"it/x", WRITTEN),  # git on Linux: protectHFS is off
        ({"core.protectHFS": "true"}, b".g" + ZWNJ + b"it/x", FAILED),
        ({"core.protectHFS": "true"}, b".git\xe2\x80\x8d/x", FAILED),  # ZWJ after .git
        ({"core.protectNTFS": "false"}, b"git~1/config", WRITTEN),
        ({"core.protectNTFS": "false"}, b".git./x", WRITTEN),
        ({"core.protectNTFS": "false"}, b".GIT/config", FAILED),  # always refused
        ({"core.protectNTFS": "false", "core.protectHFS": "false"}, b"sub/.git/x", FAILED),
    ],
)
def test_protect_ntfs_hfs_settings(tree, repo, config, name, status):
    git_dir, oid = repo
    if name.startswith(b".git\xe2\x80\x8d"):
        os.mkdir(tree / "wt" / os.fsdecode(name.split(b"/")[0]))
    before = snapshot(str(tree))
    rc, res, err = run_helper(tree, git_dir, batch(oid, [name]), config=config)
    assert rc == 0, err
    assert [r.status for r in res[:-1]] == [status], err
    after = snapshot(str(tree))
    created = set(after) - set(before)
    if status == WRITTEN:
        assert created == {os.path.join("wt", os.fsdecode(name))}
        assert err == ""
    else:
        assert not created
        # Invisible characters are shown escaped: ".g\u200cit/x".
        assert err == f"error: invalid path '{show_path(name)}'\n"


def test_prefix_is_the_boundary(tree, repo):
    """With --prefix, the checks start below the prefix and `..` cannot climb out of it."""
    git_dir, oid = repo
    pre = tree / "wt" / "pre"
    pre.mkdir()
    os.symlink("../../outside", pre / "d")
    (pre / "real").mkdir()
    before = snapshot(str(tree))
    names = [b"d/file", b"../x", b"../real/y", b"real/../../x", b".git/x", b"real/good"]
    rc, res, err = run_helper(tree, git_dir, batch(oid, names), "--prefix=pre/")
    assert rc == 0, err
    assert [r.status for r in res[:-1]] == [COLLIDED, FAILED, FAILED, FAILED, FAILED, WRITTEN]
    after = snapshot(str(tree))
    assert set(after) - set(before) == {os.path.join("wt", "pre", "real", "good")}
    assert "invalid path 'pre/../x'" in err


def test_symlink_swapped_in_between_batches(tree, repo):
    """A leading dir proven real in batch 1 is checked again in batch 2.

    The helper serves several batches; the coordinator may change the tree
    between them (collisions are resolved sequentially). A cached "this dir is
    real" from batch 1 must not let batch 2 write through a symlink.
    """
    git_dir, oid = repo
    wt = tree / "wt"
    p = subprocess.Popen(
        helper_cmd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=wt, env=clean_env(str(tree), git_dir),
    )
    try:
        p.stdin.write(batch(oid, [b"real/a"]))
        p.stdin.flush()
        first = p.stdout.read(4 + 16 + native_stat_layout().size + 4)  # one WRITTEN + flush
        assert first.endswith(b"0000")
        assert (wt / "real" / "a").read_bytes() == CONTENT
        os.rename(wt / "real", wt / "real.old")
        os.symlink("../outside", wt / "real")
        before = snapshot(str(tree / "outside"))
        p.stdin.write(batch(oid, [b"real/b", b"real/victim"], start=1))
        p.stdin.close()
        rest = p.stdout.read()
        assert p.wait(timeout=60) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    assert [r.status if r else None for r in parse_results(rest)] == [COLLIDED, COLLIDED, None]
    assert snapshot(str(tree / "outside")) == before
    assert not (tree / "outside" / "b").exists()


class _NoOdb:
    """An object database that must never be asked: rejected paths read nothing."""

    def read_blob(self, oid):  # pragma: no cover - reaching it is the failure
        raise AssertionError("blob read for a rejected item")


@pytest.mark.parametrize(
    "name",
    [b"../x", b"/etc/passwd", b".git/config", b"GIT~1/x", b".gIt/x", b"a/.git", b"a/../b",
     b"a/./b", b"a//b", b"a/", b"", b"a\0b", b".git::$INDEX_ALLOCATION/x", b".git  ./x"],
)
def test_rejected_before_any_syscall(tmp_path, monkeypatch, name):
    """In process: a rejected name fails before lstat/open/read happen."""
    calls = []
    for fn in ("open", "lstat", "stat", "unlink"):
        real = getattr(os, fn)
        monkeypatch.setattr(os, fn, lambda *a, _f=fn, _r=real, **k: calls.append(_f) or _r(*a, **k))
    errors = []
    state = CheckoutState(_NoOdb(), error=errors.append)
    item = PcItem(id=0, oid=b"\1" * 20, ce_mode=0o100644, name=name)
    monkeypatch.chdir(tmp_path)
    assert write_pc_item(item, state) == (FAILED, None)
    monkeypatch.undo()
    assert calls == []
    assert len(errors) == 1 and "\n" not in errors[0]
    assert verify_item_path(name, state.validate_element) is not None


def test_error_line_stays_one_line(tmp_path, monkeypatch):
    """A path with a newline or invalid UTF-8 still gives a single error line."""
    errors = []
    state = CheckoutState(_NoOdb(), error=errors.append)
    monkeypatch.chdir(tmp_path)
    item = PcItem(id=0, oid=b"\1" * 20, ce_mode=0o100644, name=b"../a\nerror: fake\xff")
    assert write_pc_item(item, state) == (FAILED, None)
    assert len(errors) == 1 and "\n" not in errors[0] and "\r" not in errors[0]
    assert "../a\\nerror: fake\\xff" in errors[0]
