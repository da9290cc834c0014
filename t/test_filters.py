"""filters.py and the --filters wire extension, piece by piece (the
differential tests against git are t/t2090-parallel-filters.sh)."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import ROOT
from dulwich.config import ConfigFile

from git_checkout_helper.attributes import ConvAttrs, ConvertDriver, read_convert_drivers
from git_checkout_helper.config import ConfigError
from git_checkout_helper.convert import EolConfig
from git_checkout_helper.filters import FilterRunner, SmudgeFailed, expand_filter_command, smudge_to_worktree
from git_checkout_helper.helper import _helper_args
from git_checkout_helper.wire import GIT_FILTERS_LAYOUT, REQUEST_LAYOUTS, PcItem, WireError, decode_item

HERE = os.path.dirname(os.path.abspath(__file__))
FILTER = os.path.join(HERE, "helper", "test-filter-process")
PROCESS = f"{sys.executable} {FILTER}".encode()


def test_expand_filter_command_as_git():
    assert expand_filter_command(b"f %f", b"a b") == b"f 'a b'"
    assert expand_filter_command(b"f %%f 100% %x", b"p") == b"f %f 100% %x"
    assert expand_filter_command(b"f %f", b"it's!") == b"f 'it'\\''s'\\!''"
    assert expand_filter_command(b"f %", b"p") == b"f %"


def _item(filt=None):
    return PcItem(id=3, oid=b"\x01" * 20, ce_mode=0o100644, name=b"dir/file.bin", crlf_action=1, filter=filt)


def test_filter_trailer_round_trip_and_git_bytes_unchanged():
    plain = _item()
    assert plain.encode(GIT_FILTERS_LAYOUT) == plain.encode(REQUEST_LAYOUTS["git"])
    data = _item(b"lfs").encode(GIT_FILTERS_LAYOUT)
    assert data == plain.encode(REQUEST_LAYOUTS["git"]) + b"lfs"
    back = decode_item(data, GIT_FILTERS_LAYOUT, 1)
    assert (back.name, back.filter) == (b"dir/file.bin", b"lfs")
    assert decode_item(plain.encode(GIT_FILTERS_LAYOUT), GIT_FILTERS_LAYOUT, 1).filter is None


def test_git_dialect_never_carries_a_filter():
    with pytest.raises(WireError, match="without --filters"):
        _item(b"lfs").encode(REQUEST_LAYOUTS["git"])
    data = _item(b"lfs").encode(GIT_FILTERS_LAYOUT)
    with pytest.raises(WireError, match="corrupted item 3"):
        decode_item(data, REQUEST_LAYOUTS["git"], 1)


def test_helper_filters_flag(capsys):
    assert _helper_args(["--filters", "--prefix=x/"]) == ("x/", "git", {})
    assert _helper_args(["--prefix=x/"]) == ("x/", "git", None)
    assert _helper_args(["--filters", "--filter-ref=refs/heads/a", "--filter-treeish=ab"]) == (
        None, "git", {"ref": b"refs/heads/a", "treeish": b"ab"})
    assert _helper_args(["--filters", "--wire=rfc"]) == 129
    assert "fatal: --filters needs --wire=git" in capsys.readouterr().err
    assert _helper_args(["--filter-ref=refs/heads/a"]) == 129
    assert "fatal: --filter-ref and --filter-treeish need --filters" in capsys.readouterr().err


def test_parallel_setting_read_and_checked():
    cf = ConfigFile()
    cf.set((b"filter", b"a"), b"process", b"x")
    cf.set((b"filter", b"a"), b"parallel", b"yes")
    cf.set((b"filter", b"b"), b"smudge", b"y")
    drivers = read_convert_drivers(cf)
    assert drivers[b"a"].parallel and not drivers[b"b"].parallel
    cf.set((b"filter", b"b"), b"parallel", b"maybe")
    with pytest.raises(ConfigError, match="bad boolean config value 'maybe' for 'filter.b.parallel'"):
        read_convert_drivers(cf)


@pytest.fixture
def runner(tmp_path):
    said: list[str] = []
    r = FilterRunner(str(tmp_path), say=said.append)
    r.said = said
    yield r
    r.close()


def test_process_filter_one_instance_reused(runner, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("FILTER_LOG", str(log))
    drv = ConvertDriver(b"r", process=PROCESS)
    assert runner.smudge(drv, b"a", b"Hello\n", b"ab" * 20) == b"Uryyb\n"
    big = b"x" * 200_000  # several pkt-lines each way
    assert runner.smudge(drv, b"b", big) == big.translate(bytes.maketrans(b"x", b"k"))
    lines = log.read_bytes().splitlines()
    assert len({ln.split()[0] for ln in lines}) == 1  # one filter process served both
    assert lines[0].endswith(b"smudge a blob=" + b"ab" * 20)
    assert runner.said == []


def test_process_filter_failures_as_git(runner, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("FILTER_LOG", str(log))
    drv = ConvertDriver(b"r", process=PROCESS + b" --fail=E --crash=C --abort=A")
    assert runner.smudge(drv, b"E", b"a") is None  # status=error: silent
    assert runner.said == []
    assert runner.smudge(drv, b"C", b"abcd") is None  # half an answer, then exit
    assert runner.said == [f"external filter '{PROCESS.decode()} --fail=E --crash=C --abort=A' failed"]
    assert runner.smudge(drv, b"ok", b"a") == b"n"  # a new process
    assert runner.smudge(drv, b"A", b"a") is None  # abort: no more smudging by it
    assert runner.smudge(drv, b"ok2", b"a") is None
    pids = [ln.split()[0] for ln in log.read_bytes().splitlines()]
    assert pids[0] == pids[1] != pids[2] == pids[3]
    assert len(pids) == 4  # ok2 never reached the filter


def test_required_failure_raises_optional_keeps_content(runner):
    drv = ConvertDriver(b"sh", smudge=b"echo nope >&2; exit 2")
    eol = EolConfig()
    out = smudge_to_worktree(runner, drv, ConvAttrs(1, 0, drv, None), b"x\n", b"0" * 40, b"p", eol)
    assert out == b"x\n"
    assert runner.said == ["external filter 'echo nope >&2; exit 2' failed 2",
                           "external filter 'echo nope >&2; exit 2' failed"]
    drv.required = True
    with pytest.raises(SmudgeFailed, match="^p: smudge filter sh failed$"):
        smudge_to_worktree(runner, drv, ConvAttrs(1, 0, drv, None), b"x\n", b"0" * 40, b"p", eol)


def test_filter_that_will_not_start(runner):
    drv = ConvertDriver(b"r", process=b"cat")  # echoes the client's hello back
    assert runner.smudge(drv, b"p", b"a") is None
    assert runner.said[:2] == ["Unexpected line 'git-filter-client', expected git-filter-server",
                               "initialization for subprocess 'cat' failed"]
    assert runner.smudge(drv, b"p", b"a") is None  # tried again, as git does
    assert runner.said.count("initialization for subprocess 'cat' failed") == 2


def test_filter_bench_smoke():
    """The bench's filter row runs end to end and checks bytes against git's."""
    import subprocess

    p = subprocess.run([sys.executable, "-m", "bench", "--filter-bench", "--files", "20",
                        "--runs", "1", "--workers", "2", "--filter-cost-ms", "0"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "| ours -j 2, filter.bench.parallel |" in p.stdout
    assert "Bytes identical to git's in every row." in p.stdout
