"""pkt-line framing (git_checkout_helper.pktline) against git's pkt-line.c.

What pkt-line.c does, and so what is asserted here:

* ``packet_write``: four lowercase hex digits giving the whole length, the four
  included, then the payload; a payload over LARGE_PACKET_DATA_MAX (65516 =
  LARGE_PACKET_MAX 65520 less the header) makes git die.
* ``packet_read_with_status``: ``0000`` flush, ``0001`` delim, ``0002``
  response end, ``0003`` "bad line length 3"; a header that is not four hex
  digits is "bad line length character". ``packet_length`` uses ``hexval``, so
  git reads upper-case digits too (test_hostile_wire shows git's worker taking
  them); we do the same. Garbage that Python's ``int(x, 16)`` would take
  (" 004", "+004", "0_04", "0x04") must not pass.
* Reads are buffered: a 5,000-item batch costs a handful of ``read()`` calls,
  not two per item as dulwich's reader or git's own unbuffered ``packet_read``.

Real git is the peer where it can be: ``git upload-pack`` (protocol v2) reads
our pkt-lines, delim included, and its answer is parsed by our reader and
re-framed byte for byte.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading

import pytest

from git_checkout_helper import pktline
from git_checkout_helper.pktline import (
    DELIM,
    FLUSH,
    FLUSH_PKT,
    LARGE_PACKET_DATA_MAX,
    LARGE_PACKET_MAX,
    RESPONSE_END,
    PktLineError,
    PktParser,
    PktReader,
    pkt_line,
)
from git_checkout_helper.wire import REQUEST_LAYOUTS, PcItem


def _through_pipe(data: bytes, read) -> list[bytes | int]:
    r, w = os.pipe()
    t = threading.Thread(target=lambda: (os.write(w, data), os.close(w)))
    t.start()
    try:
        return read(PktReader(r))
    finally:
        t.join()
        os.close(r)


def _packet_by_packet(reader: PktReader) -> list[bytes | int]:
    out = []
    while (pkt := reader.read_pkt()) is not None:
        out.append(pkt)
    return out


def _up_to_each_special_packet(reader: PktReader) -> list[bytes | int]:
    out: list[bytes | int] = []
    while True:
        pkts, end = reader.read_until_flush(bytes)
        out += pkts
        if end is None:
            return out
        out.append(end)


def read_all(data: bytes) -> list[bytes | int]:
    """Every packet of ``data`` through a pipe and PktReader, then None
    checked: one at a time (``read_pkt``), and up to each special packet
    (``read_until_flush``, a helper's batches), with the same packets or the
    same error either way."""
    try:
        one = _through_pipe(data, _packet_by_packet)
    except PktLineError as e:
        with pytest.raises(PktLineError) as many:
            _through_pipe(data, _up_to_each_special_packet)
        assert str(many.value) == str(e)
        raise
    assert _through_pipe(data, _up_to_each_special_packet) == one
    return one


def parse_all(data: bytes, step: int | None = None) -> list[bytes | int]:
    """The same through PktParser, fed ``step`` bytes at a time."""
    p = PktParser()
    out: list[bytes | int] = []
    step = step or len(data) or 1
    for i in range(0, len(data), step):
        out += p.feed(data[i : i + step])
    assert p.pending == 0
    return out


# --------------------------------------------------------------------------
# Writing (packet_write)


def test_limits_are_gits():
    assert (LARGE_PACKET_MAX, LARGE_PACKET_DATA_MAX) == (65520, 65516)


@pytest.mark.parametrize("n", [0, 1, 6, 0x5A - 4, 0xAB - 4, 0xFFF - 4, 0x1000, LARGE_PACKET_DATA_MAX])
def test_header_is_four_lowercase_hex_digits_counting_themselves(n):
    payload = bytes(range(256)) * (n // 256) + bytes(range(n % 256))
    pkt = pkt_line(payload)
    assert pkt[:4] == b"%04x" % (n + 4)
    assert pkt[:4] == pkt[:4].lower()
    assert pkt[4:] == payload
    assert read_all(pkt) == [payload]


def test_flush_and_none():
    assert FLUSH_PKT == b"0000"
    assert pkt_line(None) == b"0000"


def test_payload_over_65516_is_refused_like_git():
    """git's packet_write dies ("data exceeds max packet size"); a five-digit
    header must never reach the wire."""
    assert len(pkt_line(b"x" * LARGE_PACKET_DATA_MAX)) == LARGE_PACKET_MAX
    for n in (LARGE_PACKET_DATA_MAX + 1, LARGE_PACKET_MAX, 1 << 16):
        with pytest.raises(PktLineError, match="exceeds max packet size"):
            pkt_line(b"x" * n)


# --------------------------------------------------------------------------
# Reading (packet_read_with_status), both the blocking reader and the parser


SPECIALS = b"0000" + b"0001" + b"0002" + b"0004" + b"0005x" + b"0000"
SPECIALS_READ = [FLUSH, DELIM, RESPONSE_END, b"", b"x", FLUSH]


def test_special_packets():
    assert read_all(SPECIALS) == SPECIALS_READ
    assert parse_all(SPECIALS) == SPECIALS_READ
    assert parse_all(SPECIALS, 1) == SPECIALS_READ


def test_length_3_is_an_error():
    for f in (read_all, parse_all):
        with pytest.raises(PktLineError, match="bad line length 3"):
            f(b"0003" + b"0000")


@pytest.mark.parametrize("head", [b"fff1", b"fff4", b"ffff"])
def test_longer_than_large_packet_max_is_an_error(head):
    """Above 65520. (git's reader is 3 bytes laxer, up to 0xfff3 for its
    65520-byte buffer; git never writes such a packet.)"""
    data = head + b"\0" * (int(head, 16) - 4)
    for f in (read_all, parse_all):
        with pytest.raises(PktLineError, match=f"bad line length {int(head, 16)}"):
            f(data)


@pytest.mark.parametrize(
    "head",
    [b"000g", b"zzzz", b" 004", b"004 ", b"+004", b"-004", b"0_04", b"0x04", b"00\n4", b"\0\0\0\0",
     b"\xff004", b"\xd9\xa0\xd9\xa4"],  # the last: non-ASCII digits int() would take
)
def test_garbage_headers_are_rejected(head):
    data = head + b"abcd" + b"0000"
    for f in (read_all, parse_all):
        with pytest.raises(PktLineError, match="bad line length character"):
            f(data)


def test_uppercase_digits_are_read_as_git_reads_them():
    data = b"000Aabcdef" + b"00AB" + b"y" * (0xAB - 4) + b"0000"
    want = [b"abcdef", b"y" * (0xAB - 4), FLUSH]
    assert read_all(data) == want
    assert parse_all(data, 3) == want


def test_headers_kept_are_bounded_whatever_a_peer_sends(monkeypatch):
    """packet_length keeps the headers it accepted, for the next packets, but
    never more than _LENGTHS_KEPT of them: a stream of every length in both
    cases is still read right, and the table stops growing."""
    monkeypatch.setattr(pktline, "_LENGTHS", {})
    monkeypatch.setattr(pktline, "_LENGTHS_KEPT", 100)
    for size in range(4, 400):
        for head in {b"%04x" % size, b"%04X" % size}:
            assert pktline.packet_length(head) == size
            assert pktline.packet_length(head) == size  # the second time from the table, if kept
    assert len(pktline._LENGTHS) == 100
    with pytest.raises(PktLineError, match="bad line length character"):
        pktline.packet_length(b"+004")


def test_end_of_input():
    assert read_all(b"") == []
    assert read_all(b"0000") == [FLUSH]
    with pytest.raises(PktLineError, match="inside a pkt-line header"):
        read_all(b"00")
    with pytest.raises(PktLineError, match="inside a pkt-line of length 10"):
        read_all(b"000aabc")


def test_parser_keeps_partial_packets():
    p = PktParser()
    assert p.feed(b"00") == []
    assert p.pending == 2
    assert p.feed(b"08ab") == []
    assert p.feed(b"cd00") == [b"abcd"]
    assert p.feed(b"00") == [FLUSH]
    assert p.pending == 0


def test_at_eof():
    r, w = os.pipe()
    os.write(w, b"0005x")
    os.close(w)
    try:
        reader = PktReader(r)
        assert not reader.at_eof()
        assert reader.read_pkt() == b"x"
        assert reader.at_eof()
        assert reader.read_pkt() is None
    finally:
        os.close(r)


# --------------------------------------------------------------------------
# A 5,000-item batch: the same packets either way, and few read() calls


def batch_5000() -> tuple[bytes, list[bytes]]:
    layout = REQUEST_LAYOUTS["git"]
    payloads = [
        PcItem(id=i, oid=bytes([i % 256]) * 20, ce_mode=0o100644, name=b"dir%d/file-%05d.txt" % (i % 50, i))
        .encode(layout)
        for i in range(5000)
    ]
    return b"".join(pkt_line(p) for p in payloads) + FLUSH_PKT, payloads


def test_5000_items_round_trip_through_reader_and_parser():
    data, payloads = batch_5000()
    assert read_all(data) == payloads + [FLUSH]
    assert parse_all(data, 4093) == payloads + [FLUSH]  # a prime: every split point


def test_reading_5000_items_takes_few_reads(monkeypatch):
    """One os.read per 64 KiB: counted with a wrapper around os.read, reading
    from a pipe big enough to hold the whole batch (so every read is full)."""
    data, payloads = batch_5000()
    calls = []
    real_read = os.read

    def counting_read(fd, n):
        calls.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(pktline.os, "read", counting_read)
    r, w = os.pipe()
    try:
        try:
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
            full_pipe = True
        except (OSError, AttributeError):
            full_pipe = False
        if full_pipe and len(data) <= (1 << 20):
            os.write(w, data)
            os.close(w)
            w = -1
            t = None
        else:
            t = threading.Thread(target=lambda: (os.write(w, data), os.close(w)))
            t.start()
        reader = PktReader(r)
        got = []
        while (pkt := reader.read_pkt()) is not None:
            got.append(pkt)
        if t:
            t.join()
            w = -1
    finally:
        os.close(r)
        if w != -1:
            os.close(w)
    assert got == payloads + [FLUSH]
    blocks = -(-len(data) // 65536)
    if full_pipe:
        assert len(calls) <= blocks + 2, calls  # the last is the read that sees EOF
    else:
        assert len(calls) <= 2 * blocks + 50, len(calls)
    assert len(calls) < len(payloads) / 50


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace to count the helper's read() calls")
def test_the_helper_reads_a_5000_item_batch_in_few_reads(make_repo, tmp_path):
    """End to end: strace the real helper reading a 5,000-item batch from its
    stdin (items under a missing directory, so nothing is written and only the
    reading is measured)."""
    repo = make_repo()
    oid = repo.blob(b"x\n")
    layout = REQUEST_LAYOUTS["git"]
    data = b"".join(
        pkt_line(PcItem(id=i, oid=oid, ce_mode=0o100644, name=b"missing/f%d" % i).encode(layout))
        for i in range(5000)
    ) + FLUSH_PKT
    (tmp_path / "wt").mkdir()
    log = tmp_path / "strace.log"
    env = dict(repo.env, GIT_DIR=str(repo.git_dir))
    out = subprocess.run(
        ["strace", "-f", "-e", "trace=read", "-o", str(log),
         sys.executable, "-m", "git_checkout_helper", "checkout--helper"],
        input=data, capture_output=True, cwd=tmp_path / "wt", env=env, timeout=120,
    )
    if out.returncode != 0 and b"PTRACE" in out.stderr.upper():
        pytest.skip("strace cannot trace here")
    assert out.returncode == 0, out.stderr
    stdin_reads = [line for line in log.read_text().splitlines() if "read(0," in line]
    assert len(read_all(out.stdout)) == 5001
    assert 1 <= len(stdin_reads) <= 2 * (-(-len(data) // 65536)) + 4, len(stdin_reads)


# --------------------------------------------------------------------------
# git as the peer


def test_git_reads_our_pkt_lines_and_we_read_gits(make_repo):
    """A protocol v2 ls-refs request (with a delim) to git upload-pack: git
    accepts our framing; its answer parses, and re-framing every payload gives
    git's bytes back exactly."""
    repo = make_repo()
    repo.git("commit", "-q", "--allow-empty", "-m", "one")
    repo.git("tag", "v1")
    head = repo.git("rev-parse", "HEAD").strip()
    req = (
        pkt_line(b"command=ls-refs\n") + pkt_line(b"object-format=sha1\n")
        + b"0001" + pkt_line(b"symrefs\n") + FLUSH_PKT
    )
    out = subprocess.run(
        ["git", "upload-pack", "--stateless-rpc", str(repo.path)], input=req, capture_output=True,
        env=dict(repo.env, GIT_PROTOCOL="version=2"), check=True,
    ).stdout
    pkts = read_all(out)
    assert pkts[-1] == FLUSH
    assert b"".join(pkt_line(p) if isinstance(p, bytes) else b"%04x" % p for p in pkts) == out
    assert parse_all(out, 7) == pkts
    lines = [p for p in pkts if isinstance(p, bytes)]
    assert head + b" refs/heads/main\n" in lines
    assert head + b" refs/tags/v1\n" in lines
    assert any(p.startswith(head + b" HEAD symref-target:refs/heads/main") for p in lines)
