"""Hostile wire input to the helper, against the real helper process.

Every malformed input must give one ``fatal:`` line and exit 128, with no
traceback, no hang and no file written (a batch is read whole before anything
is written). Per-item problems (a missing object, a mode that is not a regular
file) give FAILED for that item, like git's worker. Where git's own
``checkout--worker`` has defined behaviour, the two are compared; where git
BUG()s or aborts, we exit cleanly instead, and the differences we chose are
asserted explicitly (see DIFFERENCES).

The fuzzers live in t/helper/fuzz-wire; this file runs them at a small count.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import signal
import struct
import subprocess
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from git_checkout_helper.pktline import FLUSH, PktReader, pkt_line  # noqa: E402
from git_checkout_helper.wire import (  # noqa: E402
    REQUEST_LAYOUTS,
    PcItem,
    PcItemStatus,
    decode_result,
    native_stat_layout,
)


def _load_fuzzer():
    path = os.path.join(ROOT, "t", "helper", "fuzz-wire")
    loader = importlib.machinery.SourceFileLoader("fuzz_wire", path)
    spec = importlib.util.spec_from_loader("fuzz_wire", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


fuzz = _load_fuzzer()

W, C, F = (PcItemStatus.PC_ITEM_WRITTEN, PcItemStatus.PC_ITEM_COLLIDED, PcItemStatus.PC_ITEM_FAILED)
GIT = REQUEST_LAYOUTS["git"]
CONTENT = b"hello\n"
U64 = (1 << 64) - 1


# --------------------------------------------------------------------------
# Set-up: a repository with one blob, a fresh empty work tree per run.


def clean_env(home: str, git_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               GIT_CONFIG_NOSYSTEM="1", GIT_DIR=git_dir, PYTHONPATH=ROOT)
    return env


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    top = tmp_path_factory.mktemp("hostile")
    git_dir = str(top / "repo" / ".git")
    env = clean_env(str(top), git_dir)
    subprocess.run(["git", "init", "-q", str(top / "repo")], check=True, env=env)
    out = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=CONTENT, check=True,
                         capture_output=True, env=env).stdout
    return top, git_dir, bytes.fromhex(out.strip().decode())


def item(oid: bytes, id_: int = 0, name: bytes = b"x", **kw) -> bytes:
    """The payload of one item (no pkt header)."""
    return PcItem(id=id_, oid=oid, ce_mode=kw.pop("mode", 0o100644), name=name, **kw).encode(GIT)


def patch(payload: bytes, offset: int, fmt: str, value: int) -> bytes:
    b = bytearray(payload)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def results(out: bytes) -> list:
    fd = os.memfd_create("results")
    try:
        os.write(fd, out)
        os.lseek(fd, 0, os.SEEK_SET)
        reader = PktReader(fd)
        res = []
        while (pkt := reader.read_pkt()) is not None:
            if pkt == FLUSH:
                res.append("flush")
            else:
                r = decode_result(pkt, native_stat_layout())
                res.append((r.id, PcItemStatus(r.status)))
        return res
    finally:
        os.close(fd)


def listing(top) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            out.add(os.path.relpath(os.path.join(dirpath, n), top))
    return out


_runs = [0]


def run(repo, data: bytes, cmd: list[str] | None = None):
    """Run the helper (or ``cmd``) on ``data`` in a fresh work tree.

    Returns (exit code, results, stderr, files created).
    """
    top, git_dir, _ = repo
    _runs[0] += 1
    wt = top / f"wt{_runs[0]}"
    wt.mkdir()
    p = subprocess.run(cmd or fuzz.helper_cmd(), input=data, capture_output=True, cwd=wt,
                       env=clean_env(str(top), git_dir), timeout=60)
    return p.returncode, results(p.stdout), p.stderr.decode("utf-8", "replace"), listing(wt)


# --------------------------------------------------------------------------
# Malformed input: one fatal line, exit 128, nothing written.


def malformed_cases(oid: bytes) -> list[tuple[str, bytes, str]]:
    good = item(oid)
    pkt = pkt_line(good)
    return [
        ("truncated payload", pkt[:40], "end of input inside a pkt-line of length 77"),
        ("truncated header", pkt + b"00", "end of input inside a pkt-line header"),
        ("missing flush", pkt + pkt_line(item(oid, 1, b"y")), "end of input before flush (after 2 items)"),
        ("EOF right after a header", pkt + b"004d", "end of input inside a pkt-line of length 77"),
        ("name_len one too many", pkt_line(patch(good, 64, "=Q", 2)), "corrupted item 0"),
        ("name_len one too few", pkt_line(patch(good, 64, "=Q", 0)), "corrupted item 0"),
        ("name_len 2^64-1", pkt_line(patch(good, 64, "=Q", U64)), "corrupted item 0"),
        ("lengths that wrap in size_t", pkt_line(patch(patch(good, 56, "=Q", U64), 64, "=Q", 2)),
         "corrupted item 0"),
        ("enc_len 2^63", pkt_line(patch(good, 56, "=Q", 1 << 63)), "corrupted item 0"),
        ("short item", pkt_line(b"abc"), "too short item (got 3B, exp 72B)"),
        ("empty pkt 0004", b"0004", "too short item (got 0B, exp 72B)"),
        ("length 65521", b"fff1" + b"\0" * (0xFFF1 - 4), "bad line length 65521"),
        ("length ffff", b"ffff" + b"\0" * 100, "bad line length 65535"),
        ("length 3", b"0003" + b"0000", "bad line length 3"),
        ("bad hex", b"00zz" + good, "bad line length character: '00zz'"),
        ("sign in hex", b"+04d" + good, "bad line length character: '+04d'"),
        ("space in hex", b" 04d" + good, "bad line length character: ' 04d'"),
        ("0x prefix", b"0x4d" + good, "bad line length character: '0x4d'"),
        ("binary header", b"\xff\x00\n\r" + good, "bad line length character: '\xff\\x00\\n\\r'"),
        ("delim inside a batch", pkt + b"0001" + b"0000", "unexpected special packet 0001"),
        ("response-end inside a batch", pkt + b"0002" + b"0000", "unexpected special packet 0002"),
        ("unknown crlf_action", pkt_line(patch(good, 48, "=I", 8)) + b"0000", "unknown crlf_action 8"),
        ("crlf_action 2^32-1", pkt_line(patch(good, 48, "=I", 0xFFFFFFFF)) + b"0000",
         "unknown crlf_action 4294967295"),
        ("unknown algo", pkt_line(patch(good, 40, "=i", 3)) + b"0000", "unknown hash algorithm 3"),
        ("negative algo", pkt_line(patch(good, 40, "=i", -1)) + b"0000", "unknown hash algorithm -1"),
        ("a good item, then a bad one", pkt + pkt_line(b"bad") + b"0000", "too short item (got 3B"),
    ]


CASE_IDS = [c[0] for c in malformed_cases(b"\0" * 20)]


@pytest.mark.parametrize("case", CASE_IDS)
def test_malformed_batch_is_refused_whole(repo, case):
    name, data, message = {c[0]: c for c in malformed_cases(repo[2])}[case]
    rc, res, err, created = run(repo, data)
    assert rc == 128, (rc, err)
    assert err.count("\n") == 1 and err.startswith("fatal: "), err
    assert message in err, err
    assert "Traceback" not in err
    assert res == [] and created == set()


def test_garbage_after_a_flush(repo):
    """The helper reads another batch after a flush: garbage there is a clean error.

    The first batch has been answered and written by then; the garbage writes nothing.
    """
    oid = repo[2]
    data = pkt_line(item(oid, 5, b"x")) + b"0000" + pkt_line(item(oid, 6, b"y")) + b"garbage"
    rc, res, err, created = run(repo, data)
    assert rc == 128
    assert err == "fatal: protocol error: bad line length character: 'garb'\n"
    assert res == [(5, W), "flush"]
    assert created == {"x"}


def test_clean_end_of_input(repo):
    """End of input at a batch boundary ends the helper with 0 (empty, or after flushes)."""
    assert run(repo, b"")[:3] == (0, [], "")
    assert run(repo, b"0000")[:3] == (0, ["flush"], "")
    assert run(repo, b"00000000")[:3] == (0, ["flush", "flush"], "")


# --------------------------------------------------------------------------
# Well-formed but odd: what git's worker does, item by item.


def test_ids_are_echoed_in_arrival_order(repo):
    """Out of order, duplicated, huge: the helper echoes ids; ordering is the coordinator's check."""
    oid = repo[2]
    ids = [7, 3, U64, 7, 0]
    names = [b"a", b"b", b"c", b"d", b"e"]
    data = b"".join(pkt_line(item(oid, i, n)) for i, n in zip(ids, names, strict=True)) + b"0000"
    rc, res, err, created = run(repo, data)
    assert (rc, err) == (0, "")
    assert res == [(i, W) for i in ids] + ["flush"]
    assert created == {"a", "b", "c", "d", "e"}


def test_uppercase_hex_lengths_are_read_like_git(repo):
    """git's packet_length() takes either case (hexval); so do we."""
    oid = repo[2]
    a = pkt_line(item(oid, 0, b"a" * 14))  # 72 + 14 + 4 = 0x5a
    b = pkt_line(item(oid, 1, b"b" * 95))  # 0xab
    assert (a[:4], b[:4]) == (b"005a", b"00ab")
    data = a[:4].upper() + a[4:] + b[:4].upper() + b[4:] + b"0000"
    rc, res, err, created = run(repo, data)
    assert (rc, err) == (0, "")
    assert res == [(0, W), (1, W), "flush"]
    assert created == {"a" * 14, "b" * 95}
    assert run(repo, data, _git_worker())[:2] == (0, res)


@pytest.mark.parametrize("mode", [0o120000, 0o160000, 0o040000, 0, 0o777, 0xFFFFFFFF])
def test_mode_not_a_regular_file_fails_the_item(repo, mode):
    """git's worker only ever gets 0100644/0100755; on anything else it creates the
    file, then aborts on an assertion. We answer FAILED before touching the tree,
    and go on with the rest of the batch."""
    oid = repo[2]
    data = pkt_line(item(oid, 0, b"bad", mode=mode)) + pkt_line(item(oid, 1, b"good")) + b"0000"
    rc, res, err, created = run(repo, data)
    assert rc == 0, err
    assert res == [(0, F), (1, W), "flush"]
    assert created == {"good"}
    assert err == f"error: cannot check out 'bad': mode {mode:o} is not a regular file\n"


def test_regular_modes_with_odd_permission_bits_are_written(repo, tmp_path):
    """Any S_IFREG mode is a regular file; the 0100 bit decides executable, as in git."""
    oid = repo[2]
    data = pkt_line(item(oid, 0, b"a", mode=0o100664)) + pkt_line(item(oid, 1, b"b", mode=0o100700))
    rc, res, err, created = run(repo, data + b"0000")
    assert (rc, err, res) == (0, "", [(0, W), (1, W), "flush"])


def test_missing_object_fails_the_item_like_git(repo):
    oid = repo[2]
    missing = b"\x11" * 20
    data = pkt_line(item(missing, 0, b"gone")) + pkt_line(item(oid, 1, b"here")) + b"0000"
    rc, res, err, created = run(repo, data)
    assert rc == 0
    assert res == [(0, F), (1, W), "flush"]
    assert created == {"here"}  # the file opened for the missing blob was removed
    assert err == f"error: cannot read object {missing.hex()} 'gone'\n"


def test_sha256_id_in_a_sha1_repository_fails_the_item(repo):
    oid = repo[2]
    data = pkt_line(item(oid + b"\0" * 12, 0, b"x", algo=2)) + b"0000"
    rc, res, err, created = run(repo, data)
    assert rc == 0 and res == [(0, F), "flush"] and created == set()
    assert err.startswith("error: cannot read object ") and err.count("\n") == 1


@pytest.mark.parametrize("enc", [b"\xff\xfeX", b"x\nfatal: forged", b"rot13", b"no-such\tcharset"])
def test_bad_encoding_names_write_unconverted_with_one_error_line(repo, enc):
    """git: "failed to encode", content written unconverted, WRITTEN."""
    oid = repo[2]
    rc, res, err, created = run(repo, pkt_line(item(oid, 0, b"x", working_tree_encoding=enc)) + b"0000")
    assert rc == 0 and res == [(0, W), "flush"] and created == {"x"}
    assert err.startswith("error: failed to encode 'x' from UTF-8 to "), err
    assert err.count("\n") == 1, err


# --------------------------------------------------------------------------
# Compared with git's own checkout--worker.


def _git_worker() -> list[str]:
    return ["git", "checkout--worker"]


AGREE = [
    # (label, items as (id, name, oid-or-None for the good blob, mode))
    ("two items", [(0, b"a", None, 0o100644), (1, b"b", None, 0o100755)]),
    ("ids out of order", [(9, b"a", None, 0o100644), (2, b"b", None, 0o100644), (9, b"c", None, 0o100644)]),
    ("missing object", [(0, b"a", b"\x22" * 20, 0o100644), (1, b"b", None, 0o100644)]),
    ("same name twice", [(0, b"a", None, 0o100644), (1, b"a", None, 0o100644)]),
    ("leading dir missing", [(0, b"nodir/a", None, 0o100644)]),
    ("leading dir is a file", [(0, b"a", None, 0o100644), (1, b"a/b", None, 0o100644)]),
]


@pytest.mark.parametrize("label", [a[0] for a in AGREE])
def test_agrees_with_git_worker(repo, label):
    spec = dict(AGREE)[label]
    oid = repo[2]
    data = b"".join(pkt_line(item(o or oid, i, n, mode=m)) for i, n, o, m in spec) + b"0000"
    ours = run(repo, data)
    theirs = run(repo, data, _git_worker())
    assert ours[0] == theirs[0] == 0
    assert ours[1] == theirs[1]
    assert ours[3] == theirs[3]
    assert ours[2] == theirs[2]  # same error text, too (or none)


# Inputs on which git's worker dies (BUG(), assertion, die) and ours exits 128
# with one line; and inputs where we deliberately differ from git.
GIT_DIES = {
    "short item": -signal.SIGABRT,  # BUG("checkout worker received too short item")
    "name_len one too many": -signal.SIGABRT,  # BUG("checkout worker received corrupted item")
    "name_len 2^64-1": -signal.SIGABRT,
    "truncated payload": 128,  # die("the remote end hung up unexpectedly")
    # git's limit is a 65519-byte payload: it reads this one, then BUG()s on it
    "length 65521": -signal.SIGABRT,
    "bad hex": 128,
}


@pytest.mark.parametrize("case", sorted(GIT_DIES))
def test_where_git_worker_dies_we_exit_cleanly(repo, case):
    name, data, message = {c[0]: c for c in malformed_cases(repo[2])}[case]
    theirs = run(repo, data, _git_worker())
    ours = run(repo, data)
    assert theirs[0] == GIT_DIES[case], theirs
    assert ours[0] == 128 and ours[2].startswith("fatal: ") and ours[2].count("\n") == 1
    assert ours[3] == set()


DIFFERENCES = {
    # git's packet_read() returns 0 for delim and response-end as for flush, so
    # its worker ends the batch there; git's coordinator never sends them. Our
    # helper reads further batches after a flush, so taking them for a flush
    # would misparse what follows: refused.
    "delim inside a batch": "unexpected special packet 0001",
    # git warns "illegal crlf_action" and writes with core.eol: a value no git
    # sends means the bytes are not the struct we think (dialect mismatch,
    # corruption): the whole batch is refused before anything is written.
    "unknown crlf_action": "unknown crlf_action 8",
    # git 2.39 copies the id with whatever algo it is given.
    "unknown algo": "unknown hash algorithm 3",
}


@pytest.mark.parametrize("case", sorted(DIFFERENCES))
def test_deliberate_differences_from_git(repo, case):
    name, data, message = {c[0]: c for c in malformed_cases(repo[2])}[case]
    theirs = run(repo, data, _git_worker())
    ours = run(repo, data)
    assert theirs[0] == 0 and theirs[1] == [(0, W), "flush"]
    assert ours[0] == 128 and message in ours[2] and ours[3] == set()


def test_unknown_mode_git_aborts_after_creating_the_file(repo):
    """Why we refuse modes up front: git's worker leaves an empty file and aborts."""
    data = pkt_line(item(repo[2], 0, b"link", mode=0o120000)) + b"0000"
    rc, res, err, created = run(repo, data, _git_worker())
    assert rc == -signal.SIGABRT and created == {"link"}
    rc, res, err, created = run(repo, data)
    assert rc == 0 and res == [(0, F), "flush"] and created == set()


# --------------------------------------------------------------------------
# The pipes and signals.


def test_stdout_closed_early_is_a_clean_exit(repo):
    """The coordinator closed its end (EPIPE): one fatal line, exit 128, no traceback."""
    top, git_dir, oid = repo
    wt = top / "epipe"
    wt.mkdir()
    r, w = os.pipe()
    os.close(r)  # nobody will ever read the results
    try:
        p = subprocess.run(fuzz.helper_cmd(), input=pkt_line(item(oid)) + b"0000", stdout=w,
                           stderr=subprocess.PIPE, cwd=wt, env=clean_env(str(top), git_dir), timeout=60)
    finally:
        os.close(w)
    err = p.stderr.decode()
    assert p.returncode == 128, err
    assert err == "fatal: checkout helper: the coordinator closed the pipe\n"


def test_sigterm_mid_item_leaves_no_half_written_file(repo, tmp_path):
    """SIGTERM while an item is being written: its file is removed, then the helper
    dies of SIGTERM (like git's sigchain cleanup).

    Deterministic without sleeping: the blob is a loose object that is a FIFO.
    The helper creates the output file (O_EXCL) and then opens the FIFO to read
    the blob; our open() of the FIFO for writing returns exactly when the helper
    has opened it, i.e. when the file exists and its content is not written yet.
    """
    top, git_dir, _ = repo
    env = clean_env(str(tmp_path), str(tmp_path / "r" / ".git"))
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True, env=env)
    hexid = subprocess.run(["git", "hash-object", "--stdin"], input=b"never read\n", check=True,
                           capture_output=True, env=env).stdout.strip().decode()
    fifo = tmp_path / "r" / ".git" / "objects" / hexid[:2] / hexid[2:]
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    wt = tmp_path / "wt"
    wt.mkdir()
    p = subprocess.Popen(fuzz.helper_cmd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=wt, env=env)
    opened = []
    opener = threading.Thread(target=lambda: opened.append(os.open(fifo, os.O_WRONLY)))
    try:
        p.stdin.write(pkt_line(item(bytes.fromhex(hexid), 0, b"half")) + b"0000")
        p.stdin.close()
        opener.start()
        opener.join(60)
        if not opened:  # the helper never got there: unblock our open, then fail
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            opener.join()
            pytest.fail("the helper never opened the blob")
        assert (wt / "half").exists()  # mid-item: created, nothing written yet
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == -signal.SIGTERM
        err = p.stderr.read().decode()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for fd in opened:
            os.close(fd)
        p.stdout.close()
        p.stderr.close()
    assert not (wt / "half").exists()
    assert os.listdir(wt) == []
    assert "Traceback" not in err


# --------------------------------------------------------------------------
# The fuzzers, at a count that fits in the regular run.


def test_fuzz_read_batch_against_reference_parser():
    n, secs = fuzz.fuzz_in_process(int(os.environ.get("FUZZ_WIRE_COUNT", "3000")))
    assert n >= 1000


def test_fuzz_real_helper_on_mutated_batches():
    n, secs, stats = fuzz.fuzz_end_to_end(int(os.environ.get("FUZZ_WIRE_E2E", "12")))
    assert n >= 10


def test_reference_parser_is_not_vacuous():
    """The oracle says what each refusal is, and the helper's message must match it."""
    good = pkt_line(item(b"\1" * 20))
    assert fuzz.ref_parse(good + b"0000") == ([[fuzz.ref_item(good[4:], "git", 1)]], None)
    assert fuzz.run_in_process(good + b"0000", "git", 1, 3) == fuzz.ref_parse(good + b"0000")
    assert fuzz.ref_parse(good)[1] == "eof-before-flush"
    assert fuzz.ref_parse(b"0000" + b"0001")[1] == "special"
    assert fuzz.ref_parse(b"0003")[1] == "length-3"
    assert fuzz.ref_parse(b"fff1")[1] == "too-long"
    assert fuzz.ref_parse(patch(good, 4 + 64, "<Q", 0) + b"0000")[1] == "lengths"
    for _, data, message in malformed_cases(b"\1" * 20):
        why = fuzz.ref_parse(data)[1]
        assert why is not None
        assert fuzz.run_in_process(data, "git", 1, None)[1] == why, (data[:8], message)
    assert fuzz.reason_of("something else").startswith("unexpected message")
