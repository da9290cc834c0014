"""``checkout.workers=auto``: the decision table (autoworkers.py), filesystem
detection (fsinfo.py) on the machine's real tmpfs and disk, the setting and
``-j auto``, and whole checkouts with auto compared with ``git checkout``.

No timing is asserted: what is checked is which branch of the table a case
takes, and that an auto checkout is a correct checkout that says what it
decided (``-v`` report, trace2 ``data`` event).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile

import pytest
from conftest import git, run_git

from git_checkout_helper import fsinfo
from git_checkout_helper.autoworkers import (
    LATENCY_THRESHOLD,
    NETWORK_CONCURRENCY,
    auto_workers,
)
from git_checkout_helper.config import (
    AUTO_WORKERS,
    DEFAULT_THRESHOLD_FOR_PARALLELISM,
    ConfigError,
    is_auto,
    parallel_checkout_configs,
    threshold_setting,
)

# -- the decision table -----------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "rot", "cpus", "nr", "procs", "threads"),
    [
        # below git's threshold: sequential whatever the filesystem (but latency-bound ones)
        ("tmpfs", None, 8, 99, 1, 1),
        ("local", False, 8, 99, 1, 1),
        ("unknown", None, 8, 50, 1, 1),
        # CPU-bound: one helper per usable CPU, at least 50 items each
        ("tmpfs", None, 8, 100, 2, 1),
        ("tmpfs", None, 8, 5000, 8, 1),
        ("tmpfs", None, 1, 5000, 1, 1),
        ("local", False, 4, 5000, 4, 1),
        ("local", None, 4, 5000, 4, 1),
        ("overlay", None, 4, 5000, 4, 1),
        ("unknown", None, 2, 5000, 2, 1),
        ("tmpfs", None, 64, 1000, 20, 1),
        # a spinning disk: sequential (git's advice)
        ("local", True, 8, 100_000, 1, 1),
        # latency-bound: FUSE 8 per CPU (4..64), network 32 in flight; 8 items a
        # slot; 4 processes per CPU, threads for the rest
        ("fuse", None, 2, 1000, 8, 2),
        ("fuse", None, 1, 1000, 4, 2),
        ("fuse", None, 16, 100_000, 64, 1),
        ("fuse", None, 2, 40, 5, 1),
        ("fuse", None, 2, 15, 1, 1),
        ("nfs", None, 2, 1000, 8, 4),
        ("nfs", None, 4, 1000, 16, 2),
        ("nfs", None, 8, 1000, 32, 1),
        ("smb", None, 1, 100_000, 4, 8),
        ("network", None, 8, 200, 25, 1),
        ("nfs", None, 8, 16, 2, 1),
    ],
)
def test_decision_table(kind, rot, cpus, nr, procs, threads):
    d = auto_workers(kind, rot, cpus, nr)
    assert (d.processes, d.threads) == (procs, threads), d.reason
    assert d.reason and d.fs == kind and d.items == nr and d.cpus == cpus
    assert d.reason.startswith("sequential") == (procs == 1 and threads == 1)
    assert d.processes <= max(1, nr)


def test_busy_cpus_count_for_cpu_bound_only():
    """A helper on a busy CPU only time-slices with what runs there; a
    latency-bound helper mostly waits, so every CPU counts."""
    assert "one helper per CPU (2 CPUs)" in auto_workers("tmpfs", None, 2, 5000).reason
    d = auto_workers("tmpfs", None, 2, 5000, idle_cpus=1)
    assert (d.processes, d.cpus, d.idle_cpus) == (1, 2, 1) and "1 idle CPU of 2" in d.reason
    assert auto_workers("local", False, 8, 5000, idle_cpus=3).processes == 3
    assert auto_workers("fuse", None, 2, 1000, idle_cpus=1).processes == 8
    assert auto_workers("nfs", None, 2, 1000, idle_cpus=1).processes == 8
    assert auto_workers("tmpfs", None, 2, 5000, idle_cpus=7).idle_cpus == 2


def test_thresholds():
    assert auto_workers("tmpfs", None, 4, 99).threshold == DEFAULT_THRESHOLD_FOR_PARALLELISM
    assert auto_workers("nfs", None, 4, 99).threshold == LATENCY_THRESHOLD
    # An explicit threshold wins both ways.
    assert auto_workers("nfs", None, 4, 500, threshold=1000).processes == 1
    d = auto_workers("tmpfs", None, 4, 150, threshold=0)
    assert d.threshold == 0 and d.processes == 3
    # At most one helper per item, and none for fewer than two.
    assert auto_workers("nfs", None, 4, 1, threshold=0).processes == 1
    assert auto_workers("nfs", None, 4, 3, threshold=0).processes == 1  # 3 items: one slot of 8
    assert auto_workers("tmpfs", None, 8, 0).processes == 1


def test_total_size_counts_as_work():
    # 20 files are few, but 10 MB of them is work worth two CPUs (at most one helper per file).
    assert auto_workers("tmpfs", None, 2, 20).processes == 1
    d = auto_workers("tmpfs", None, 2, 20, total_bytes=10 << 20)
    assert d.processes == 2 and d.total_bytes == 10 << 20 and "sequential" not in d.reason
    d = auto_workers("nfs", None, 2, 10, total_bytes=64 << 20)
    assert (d.processes, d.threads) == (8, 1)  # never more in flight than files
    assert auto_workers("nfs", None, 2, 1000).threads * auto_workers("nfs", None, 2, 1000).processes \
        == NETWORK_CONCURRENCY


def test_usable_cpus():
    assert fsinfo.usable_cpus(8) == 8
    assert fsinfo.usable_cpus(8, affinity=2) == 2
    assert fsinfo.usable_cpus(8, quota=1.5) == 2
    assert fsinfo.usable_cpus(8, loadavg=3.4) == 5
    assert fsinfo.usable_cpus(2, loadavg=3.7) == 1  # never below one
    assert fsinfo.usable_cpus(0) == 1
    online, aff, load, _quota = fsinfo.system_cpus(4)
    assert online == 4 and (aff is None or aff >= 1) and (load is None or load >= 0)


# -- filesystem detection ------------------------------------------------------------


def _tmpfs_dir():
    for cand in ("/dev/shm", "/run/shm"):
        if os.path.isdir(cand) and os.access(cand, os.W_OK) and fsinfo.statfs_type(cand) == fsinfo.TMPFS_MAGIC:
            return cand
    return None


TMPFS = _tmpfs_dir()
needs_tmpfs = pytest.mark.skipif(TMPFS is None, reason="no writable tmpfs (/dev/shm)")
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="statfs magic numbers are Linux's")


@linux
@needs_tmpfs
def test_probe_tmpfs():
    info = fsinfo.probe(TMPFS)
    assert info.kind == "tmpfs" and info.fstype == "tmpfs" and info.magic == "0x1021994"
    assert info.rotational is None
    assert fsinfo.mount_of(TMPFS).fstype == "tmpfs"


@linux
def test_probe_disk_agrees_with_mountinfo(tmp_path):
    info = fsinfo.probe(tmp_path)
    mount = fsinfo.mount_of(tmp_path)
    assert mount is not None
    assert fsinfo.fs_kind_of_name(mount.fstype) == info.kind
    magic = fsinfo.statfs_type(tmp_path)
    assert magic is not None and info.magic == f"0x{magic:x}"
    if info.kind == "local":
        # A block device's filesystem: the device and what its queue says
        # (nothing, for a paravirtual disk).
        assert info.device is not None
        want = fsinfo.rotational(info.device)
        assert want in (True, False)
        assert info.virtual_disk == fsinfo.virtual_disk(info.device)
        assert info.rotational == (None if info.virtual_disk else want)


def test_probe_without_statfs_uses_mountinfo(tmp_path, monkeypatch):
    monkeypatch.setattr(fsinfo, "statfs_type", lambda path: None)
    mi = (f"36 25 0:52 / {tmp_path} rw,nosuid - fuse.sshfs me@host:/src rw,user_id=0\n"
          "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
    info = fsinfo.probe(tmp_path, mountinfo=mi)
    assert info.kind == "fuse" and info.fstype == "fuse.sshfs" and info.magic is None
    mi = f"36 25 0:52 / {tmp_path} rw - nfs4 server:/export rw,vers=4.2\n"
    assert fsinfo.probe(tmp_path, mountinfo=mi).kind == "nfs"
    assert fsinfo.probe(tmp_path, mountinfo="garbage\n").kind == "unknown"


def test_magic_numbers_and_names():
    assert fsinfo.fs_kind_of_magic(0x6969) == ("nfs", "nfs")
    assert fsinfo.fs_kind_of_magic(0xFF534D42)[0] == "smb"
    assert fsinfo.fs_kind_of_magic(-(0x100000000 - 0xFE534D42))[0] == "smb"  # a signed 32-bit f_type
    assert fsinfo.fs_kind_of_magic(fsinfo.FUSE_SUPER_MAGIC)[0] == "fuse"
    assert fsinfo.fs_kind_of_magic(fsinfo.EXT4_SUPER_MAGIC) == ("local", "ext4")
    assert fsinfo.fs_kind_of_magic(0x12345678) is None
    assert fsinfo.fs_kind_of_name("fuse.sshfs") == "fuse"
    assert fsinfo.fs_kind_of_name("nfs4") == "nfs"
    assert fsinfo.fs_kind_of_name("cifs") == "smb"
    assert fsinfo.fs_kind_of_name("xfs") == "local"
    assert fsinfo.fs_kind_of_name("proc") == "unknown"


def test_mountinfo_parsing():
    mi = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
          "40 22 0:40 / /mnt/my\\040share rw shared:5 - cifs //srv/share rw,vers=3\n"
          "41 40 0:41 / /mnt/my\\040share/inner rw - tmpfs tmpfs rw\n"
          "42 22 0:42 / /mnt/x rw - tmpfs tmpfs rw\n"
          "43 22 0:43 / /mnt/x rw - nfs srv:/x rw\n")  # mounted over the tmpfs: hides it
    assert fsinfo.mount_of("/mnt/my share/f", mi).fstype == "cifs"
    assert fsinfo.mount_of("/mnt/my share/inner/f", mi).fstype == "tmpfs"
    assert fsinfo.mount_of("/mnt/my sharex", mi).fstype == "ext4"
    assert fsinfo.mount_of("/mnt/x/y", mi).fstype == "nfs"
    m = fsinfo.parse_mountinfo(mi)[1]
    assert (m.mount_point, m.device, m.source, m.super_options) == ("/mnt/my share", "0:40", "//srv/share", "rw,vers=3")


def test_rotational_of_a_partition_is_its_disk(tmp_path):
    sysfs = tmp_path / "sys"
    disk = sysfs / "devices" / "sda"
    (disk / "queue").mkdir(parents=True)
    (disk / "queue" / "rotational").write_text("1\n")
    (disk / "sda1").mkdir()
    nvme = sysfs / "devices" / "nvme0n1"
    (nvme / "queue").mkdir(parents=True)
    (nvme / "queue" / "rotational").write_text("0\n")
    (sysfs / "dev" / "block").mkdir(parents=True)
    os.symlink(disk, sysfs / "dev" / "block" / "8:0")
    os.symlink(disk / "sda1", sysfs / "dev" / "block" / "8:1")
    os.symlink(nvme, sysfs / "dev" / "block" / "259:0")
    assert fsinfo.rotational("8:0", str(sysfs)) is True
    assert fsinfo.rotational("8:1", str(sysfs)) is True
    assert fsinfo.rotational("259:0", str(sysfs)) is False
    assert fsinfo.rotational("9:9", str(sysfs)) is None
    assert fsinfo.virtual_disk("8:1", str(sysfs)) is None
    vda = sysfs / "devices" / "pci0000:00" / "virtio1" / "block" / "vda"
    (vda / "queue").mkdir(parents=True)
    (vda / "queue" / "rotational").write_text("1\n")
    os.symlink(vda, sysfs / "dev" / "block" / "254:0")
    assert fsinfo.rotational("254:0", str(sysfs)) is True
    assert fsinfo.virtual_disk("254:0", str(sysfs)) == "virtio"


def test_latency_filesystem_is_fuse(tmp_path):
    from bench.latencyfs import available, mounted

    why = available()
    if why:
        pytest.skip(why)
    try:
        cm = mounted(str(tmp_path / "back"), str(tmp_path / "mnt"), latency_ms=0.1)
        cm.__enter__()
    except RuntimeError as e:
        pytest.skip(str(e))
    try:
        info = fsinfo.probe(tmp_path / "mnt")
    finally:
        cm.__exit__(None, None, None)
    assert info.kind == "fuse" and info.fstype == "fuse.latencyfs" and info.magic == "0x65735546"


# -- the setting ------------------------------------------------------------------


class _Config:
    def __init__(self, **values):
        self.values = {k.lower().encode(): v.encode() for k, v in values.items()}

    def get(self, section, name):
        return self.values[name]


def test_setting_auto():
    for v in ("auto", "AUTO", " Auto "):
        assert is_auto(v) and is_auto(v.encode())
        assert parallel_checkout_configs(_Config(workers=v), None, 4) == (AUTO_WORKERS, 100)
    assert not is_auto(None) and not is_auto("4") and not is_auto("automatic")
    assert parallel_checkout_configs(_Config(workers="auto", thresholdForParallelism="7"), None, 4) == ("auto", 7)
    assert threshold_setting(_Config(workers="auto")) is None
    assert threshold_setting(_Config(thresholdForParallelism="1k")) == 1024
    # GIT_TEST_CHECKOUT_WORKERS stays numeric (as in git) and wins over the config.
    assert parallel_checkout_configs(_Config(workers="auto"), "3", 4) == (3, 0)
    with pytest.raises(ConfigError, match="GIT_TEST_CHECKOUT_WORKERS"):
        parallel_checkout_configs(_Config(), "auto", 4)
    with pytest.raises(ConfigError, match="bad numeric config value 'autox'"):
        parallel_checkout_configs(_Config(workers="autox"), None, 4)


# -- whole checkouts ------------------------------------------------------------------


def _manifest(top):
    out = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            full = os.path.join(root, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, top)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "link", os.readlink(full)))
            else:
                with open(full, "rb") as f:
                    out.append((rel, oct(st.st_mode & 0o111), hashlib.sha1(f.read()).hexdigest()))
    return sorted(out)


@pytest.fixture
def tmpfs_repos(git_env):
    """A 300-file repository on tmpfs and two ``--no-checkout`` clones of it."""
    if TMPFS is None:
        pytest.skip("no writable tmpfs")
    top = tempfile.mkdtemp(prefix="gch-auto-test-", dir=TMPFS)
    try:
        src = os.path.join(top, "src")
        git(top, "init", "-q", src, env=git_env)
        for i in range(300):
            d = os.path.join(src, f"d{i % 7}", f"e{i % 3}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"f{i}"), "w") as f:
                f.write(f"file {i}\n" * (i % 50 + 1))
            if i % 40 == 0:
                os.chmod(os.path.join(d, f"f{i}"), 0o755)
        os.symlink("d0/e0/f0", os.path.join(src, "link"))
        git(src, "add", ".", env=git_env)
        git(src, "commit", "-q", "-m", "one", env=git_env)
        for name in ("ours", "theirs"):
            git(top, "clone", "-q", "--no-checkout", src, name, env=git_env)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _assert_twins(env, top):
    ours, theirs = os.path.join(top, "ours"), os.path.join(top, "theirs")
    git(theirs, "checkout", "-q", "-f", "HEAD", env=env)
    assert _manifest(ours) == _manifest(theirs)
    assert run_git(ours, "status", "--porcelain", env=env, text=True).stdout == ""
    assert run_git(ours, "diff-files", "--quiet", env=env, check=False, text=True).returncode == 0
    assert (run_git(ours, "ls-files", "-s", env=env, text=True).stdout
            == run_git(theirs, "ls-files", "-s", env=env, text=True).stdout)


@pytest.mark.parametrize("how", ["config", "jobs"])
def test_cli_auto_on_tmpfs(tmpfs_repos, git_env, how):
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    trace = os.path.join(tmpfs_repos, "trace.json")
    env["GIT_TRACE2_EVENT"] = trace
    ours = os.path.join(tmpfs_repos, "ours")
    args = ["-c", "checkout.workers=Auto", "parallel-checkout"] if how == "config" else \
        ["parallel-checkout", "-j", "auto"]
    p = run_git(ours, *args, "-q", "-v", "-f", "HEAD", env=env, text=True)
    report = json.loads(p.stdout.splitlines()[-1])
    d = report["auto_workers"]
    assert d["fs"] == "tmpfs" and d["filesystem"]["fstype"] == "tmpfs" and d["items"] == 300
    assert d["threads"] == 1 and d["processes"] == report["workers"] >= 1
    assert d["reason"]
    events = [json.loads(line) for line in open(trace)]
    data = [e for e in events if e["event"] == "data" and e["key"] == "auto_workers"]
    assert len(data) == 1 and data[0]["category"] == "checkout"
    assert json.loads(data[0]["value"]) == d
    _assert_twins(git_env, tmpfs_repos)


def test_cli_auto_threshold_and_bad_value(tmpfs_repos, git_env):
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    ours = os.path.join(tmpfs_repos, "ours")
    p = run_git(ours, "-c", "checkout.workers=auto", "-c", "checkout.thresholdForParallelism=1000",
                "parallel-checkout", "-q", "-v", "-f", "HEAD", env=env, text=True)
    report = json.loads(p.stdout.splitlines()[-1])
    assert report["auto_workers"]["threshold"] == 1000 and report["workers"] == 1
    assert report["auto_workers"]["reason"] == "sequential: 300 items below the threshold of 1000"
    _assert_twins(git_env, tmpfs_repos)
    p = run_git(ours, "parallel-checkout", "-j", "many", "HEAD", env=env, check=False, text=True)
    assert p.returncode == 129 and "expects a numerical value" in p.stderr
    # GIT_TEST_CHECKOUT_WORKERS stays numeric, as in git.
    p = run_git(ours, "parallel-checkout", "-q", "-f", "HEAD",
                env=dict(env, GIT_TEST_CHECKOUT_WORKERS="auto"), check=False, text=True)
    assert p.returncode == 128 and "invalid value for 'GIT_TEST_CHECKOUT_WORKERS': 'auto'" in p.stderr


def test_api_auto_parallel_and_threads(tmpfs_repos, git_env, monkeypatch):
    """The decision's processes start that many helpers; its threads go to
    ``helper_threads`` (unless set): here with the CPUs and filesystem kind
    pinned, so the parallel branch is taken whatever the machine's load."""
    from git_checkout_helper.checkout import CheckoutOptions, run_checkout
    from git_checkout_helper.repository import Repository

    monkeypatch.setattr(fsinfo, "usable_cpus", lambda *a, **k: 2)
    r = Repository.open(os.path.join(tmpfs_repos, "ours"), git_env)
    try:
        report = run_checkout(r, "HEAD", CheckoutOptions(workers="auto", force=True, quiet=True, progress=False))
    finally:
        r.close()
    assert report.auto_workers.processes == 2 and report.workers == 2 and report.parallel_items == 300
    _assert_twins(git_env, tmpfs_repos)

    # A network filesystem: 8 processes of 4 threads at 2 CPUs.
    seen = {}
    real_probe = fsinfo.probe
    monkeypatch.setattr(fsinfo, "probe", lambda path: fsinfo.FsInfo(kind="nfs", fstype="nfs4"))
    from git_checkout_helper import checkout as co_mod

    real_start = co_mod.Checkout.start_helpers

    def spy(self, n):
        real_start(self, n)
        seen["threads"] = self.opts.helper_threads
        seen["pool"] = len(self.pool) if self.pool is not None else 0

    monkeypatch.setattr(co_mod.Checkout, "start_helpers", spy)
    ours = os.path.join(tmpfs_repos, "ours")
    for name in os.listdir(ours):  # every file written again
        if name != ".git":
            full = os.path.join(ours, name)
            shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.unlink(full)
    r = Repository.open(os.path.join(tmpfs_repos, "ours"), git_env)
    try:
        report = run_checkout(r, "HEAD", CheckoutOptions(workers="auto", force=True, quiet=True, progress=False))
    finally:
        r.close()
    d = report.auto_workers
    assert (d.processes, d.threads, d.fs, d.items, d.coordinator_idle) == (8, 4, "nfs", 300, False)
    assert seen == {"pool": 8, "threads": 4}
    _assert_twins(git_env, tmpfs_repos)

    # No index and an empty work tree (a clone's checkout): the coordinator is idle.
    for name in os.listdir(ours):
        if name != ".git":
            full = os.path.join(ours, name)
            shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.unlink(full)
    os.unlink(os.path.join(ours, ".git", "index"))
    r = Repository.open(ours, git_env)
    try:
        report = run_checkout(r, "HEAD", CheckoutOptions(workers="auto", force=True, quiet=True, progress=False))
    finally:
        r.close()
    monkeypatch.setattr(fsinfo, "probe", real_probe)
    assert report.auto_workers.coordinator_idle is True
    _assert_twins(git_env, tmpfs_repos)


@pytest.mark.parametrize(
    "kind, cpus, nr, alongside, idle",
    [
        ("fuse", 2, 5000, (8, 2), (8, 4)),  # 16 requests beside the coordinator's, 32 without
        ("nfs", 8, 1000, (32, 1), (32, 2)),
        ("nfs", 2, 200, (8, 3), (8, 3)),  # at least 8 items a request either way
        ("tmpfs", 2, 5000, (2, 1), (2, 1)),  # CPU-bound: the coordinator's requests do not count
    ],
)
def test_an_idle_coordinator_leaves_its_requests_to_the_helpers(kind, cpus, nr, alongside, idle):
    for flag, want in ((False, alongside), (True, idle)):
        d = auto_workers(kind, None, cpus, nr, coordinator_idle=flag)
        assert (d.processes, d.threads) == want, d.reason
        assert d.coordinator_idle is flag and ("coordinator idle" in d.reason) == (flag and kind != "tmpfs")


# -- the bench's auto row ----------------------------------------------------------------


def test_bench_auto_row_verdict():
    from bench.autorow import AUTO_KEY, auto_tool, auto_vs_best
    from bench.options import parse
    from bench.runner import Cell, Tool, make_tools

    opts = parse([], {"BENCH_TOOLS": "ours,git", "BENCH_WORKERS": "1,2"})
    tools = make_tools("tmpfs", opts)
    auto = [t for t in tools if t.key == AUTO_KEY]
    assert len(auto) == 1 and auto[0].family == "ours" and auto[0].workers is None
    assert auto_tool(Tool, parse([], {"BENCH_TOOLS": "git"})) is None

    j1 = Cell("tmpfs", "clone", "ours-j1", "ours", 1, "j1", rounds=[0, 1, 2], seconds=[1.0, 2.0, 1.0], median=1.0)
    j2 = Cell("tmpfs", "clone", "ours-j2", "ours", 2, "j2", rounds=[0, 1, 2], seconds=[0.8, 0.9, 0.7], median=0.8)
    a = Cell("tmpfs", "clone", AUTO_KEY, "ours", None, "auto", rounds=[0, 1, 2], seconds=[0.84, 1.8, 0.75],
             median=0.84)
    far = Cell("tmpfs", "far", AUTO_KEY, "ours", None, "auto", rounds=[0], seconds=[3.0], median=3.0)
    farj = Cell("tmpfs", "far", "ours-j1", "ours", 1, "j1", rounds=[0], seconds=[1.0], median=1.0)
    (line, blank) = auto_vs_best([j1, j2, a, far, farj])
    assert blank == ""
    assert "clone 0.840 s vs best -j 2 0.800 s: 1.05, per round 1.07, within 10%" in line
    assert "far 3.000 s vs best -j 1 1.000 s: 3.00, per round 3.00, NOT within 10%" in line
    assert auto_vs_best([j1, j2]) == []
