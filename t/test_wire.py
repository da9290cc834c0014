"""Wire layouts (git_checkout_helper.wire) against parallel-checkout.h and <sys/stat.h>.

git writes ``struct pc_item_fixed_portion`` and ``struct pc_item_result`` as
they sit in memory, so the layouts are the C compiler's. Asserted here:

* the field offsets of both request dialects (git 2.32+ ``checkout--worker``;
  the Aug-2020 RFC ``checkout--helper``) and of the result, from the tables
  and, independently, from packed bytes read back with fixed little-endian
  formats;
* round trips item -> bytes -> item and result -> bytes -> result, and the
  checks ``packet_to_pc_item`` / ``parse_and_save_result`` make;
* a C probe, compiled on this machine, printing ``sizeof``/``offsetof`` of
  ``struct stat``'s fields and of replicas of git's structs, compared with
  ``STAT_LAYOUTS`` / ``native_stat_layout()`` and ``REQUEST_LAYOUTS``.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess

import pytest

from git_checkout_helper.convert import ConvertCrlfAction
from git_checkout_helper.index import NO_STAT_DATA, STAT_DATA, cut_stat_data, pack_stat_data, stat_data
from git_checkout_helper.pktline import pkt_line
from git_checkout_helper.record import fields
from git_checkout_helper.wire import (
    GIT_HASH_SHA1,
    GIT_HASH_SHA256,
    REQUEST_LAYOUTS,
    RESULT_BASE,
    STAT_LAYOUTS,
    PcItem,
    PcItemResult,
    PcItemStatus,
    StatData,
    WireError,
    decode_item,
    decode_result,
    encode_result,
    native_stat_layout,
    parse_result,
    stat_fields,
)
from git_checkout_helper.workers import Results

GIT = REQUEST_LAYOUTS["git"]
RFC = REQUEST_LAYOUTS["rfc"]
W, C, F = PcItemStatus.PC_ITEM_WRITTEN, PcItemStatus.PC_ITEM_COLLIDED, PcItemStatus.PC_ITEM_FAILED

# --------------------------------------------------------------------------
# Layout tables

# parallel-checkout.h (git 2.32+): size_t id; struct object_id { hash[32]; int algo; };
# unsigned ce_mode; enum crlf_action; int ident; size_t enc_len; size_t name_len.
GIT_OFFSETS = {"id": 0, "hash": 8, "algo": 40, "ce_mode": 44, "crlf_action": 48, "ident": 52,
               "working_tree_encoding_len": 56, "name_len": 64}
# The RFC: object_id had no algo; attr_action sat where git later put ce_mode.
RFC_OFFSETS = {"id": 0, "hash": 8, "ce_mode": 40, "attr_action": 44, "crlf_action": 48, "ident": 52,
               "working_tree_encoding_len": 56, "name_len": 64}
X86_64_STAT = {"dev": 0, "ino": 8, "nlink": 16, "mode": 24, "uid": 28, "gid": 32, "rdev": 40, "size": 48,
               "blksize": 56, "blocks": 64, "atime_sec": 72, "atime_nsec": 80, "mtime_sec": 88,
               "mtime_nsec": 96, "ctime_sec": 104, "ctime_nsec": 112}


@pytest.mark.parametrize("layout,offsets", [(GIT, GIT_OFFSETS), (RFC, RFC_OFFSETS)], ids=["git", "rfc"])
def test_request_layout_offsets(layout, offsets):
    assert {f: o for f, o, _ in layout.fields} == offsets
    assert layout.size == layout.struct.size == 72


def test_result_layout():
    assert RESULT_BASE.size == 16  # offsetof(struct pc_item_result, st)
    assert {f: o for f, o, _ in STAT_LAYOUTS["x86_64"].fields} == X86_64_STAT
    assert STAT_LAYOUTS["x86_64"].size == 144
    assert STAT_LAYOUTS["generic64"].size == 128
    for layout in STAT_LAYOUTS.values():
        assert layout.result.size == 16 + layout.size


def test_packed_item_bytes_at_their_offsets():
    """Independent of the tables: read the bytes back with fixed formats."""
    oid = bytes(range(1, 21))
    item = PcItem(id=0x0102030405060708, oid=oid, ce_mode=0o100755, name=b"dir/name",
                  crlf_action=ConvertCrlfAction.CRLF_AUTO_CRLF, ident=1,
                  working_tree_encoding=b"UTF-16", algo=GIT_HASH_SHA1, attr_action=5)
    g = item.encode(GIT)
    assert len(g) == 72 + 6 + 8
    assert struct.unpack_from("<Q", g, 0)[0] == 0x0102030405060708
    assert g[8:28] == oid and g[28:40] == bytes(12)
    assert struct.unpack_from("<iIIiQQ", g, 40) == (1, 0o100755, 7, 1, 6, 8)
    assert g[72:] == b"UTF-16dir/name"
    r = item.encode(RFC)
    assert r[:40] == g[:40]
    assert struct.unpack_from("<IIIiQQ", r, 40) == (0o100755, 5, 7, 1, 6, 8)
    assert r[72:] == g[72:]


def test_packed_result_bytes():
    for status in (C, F):
        b = encode_result(PcItemResult(7, status), native_stat_layout())
        assert b == struct.pack("<QI", 7, status) + bytes(4)
    st = os.stat(__file__)
    pkt = native_stat_layout().written_packet(9, st)
    assert pkt[:4] == b"%04x" % len(pkt)  # a whole pkt-line
    b = pkt[4:]
    assert len(b) == 16 + native_stat_layout().size
    assert b[:16] == struct.pack("<QI", 9, W) + bytes(4)
    if native_stat_layout() is STAT_LAYOUTS["x86_64"]:
        assert struct.unpack_from("<QQQIII", b, 16) == (
            st.st_dev, st.st_ino, st.st_nlink, st.st_mode, st.st_uid, st.st_gid)
        assert struct.unpack_from("<q", b, 16 + 48)[0] == st.st_size
        assert struct.unpack_from("<qq", b, 16 + 88) == divmod(st.st_mtime_ns, 10**9)
        assert struct.unpack_from("<qq", b, 16 + 104) == divmod(st.st_ctime_ns, 10**9)
        assert b[16 + 120 :] == bytes(24)  # __glibc_reserved
    for layout in STAT_LAYOUTS.values():
        assert layout.written_packet(9, st) == pkt_line(encode_result(PcItemResult(9, W, StatData.from_os(st)), layout))


# --------------------------------------------------------------------------
# Round trips and checks


ITEMS = [
    PcItem(id=0, oid=b"\xab" * 20, ce_mode=0o100644, name=b"a"),
    PcItem(id=1, oid=b"\x01" * 20, ce_mode=0o100755, name=b"d/e/f g", crlf_action=0, ident=1),
    PcItem(id=2**64 - 1, oid=b"\xff" * 32, ce_mode=0o100644, name="ü/名".encode(),
           algo=GIT_HASH_SHA256, working_tree_encoding=b"UTF-16LE-BOM", crlf_action=7),
    PcItem(id=12345, oid=bytes(20), ce_mode=0o100644, name=b"x" * 4000, crlf_action=5),
]


@pytest.mark.parametrize("item", ITEMS, ids=lambda i: str(i.id))
def test_item_round_trip_git(item):
    assert decode_item(item.encode(GIT), GIT, GIT_HASH_SHA1) == item


@pytest.mark.parametrize("item", ITEMS, ids=lambda i: str(i.id))
def test_item_round_trip_rfc(item):
    """The RFC carries no algo: the repository's is used; attr_action survives."""
    it = PcItem(**{**{f: getattr(item, f) for f in fields(item)}, "attr_action": 3})
    back = decode_item(it.encode(RFC), RFC, item.algo)
    assert back == it


def test_algo_zero_means_the_repositorys():
    """git 2.32.0 sent algo 0; the hash length then follows the repository."""
    for repo_algo, n in ((GIT_HASH_SHA1, 20), (GIT_HASH_SHA256, 32)):
        it = PcItem(id=1, oid=b"\x11" * 32, ce_mode=0o100644, name=b"n", algo=0)
        back = decode_item(it.encode(GIT), GIT, repo_algo)
        assert back.algo == repo_algo and back.oid == b"\x11" * n


@pytest.mark.parametrize(
    "mangle,message",
    [
        (lambda b: b[:71], "too short item"),
        (lambda b: b + b"x", "corrupted item"),
        (lambda b: b[:-1], "corrupted item"),
        (lambda b: b[:40] + struct.pack("<i", 3) + b[44:], "unknown hash algorithm 3"),
        (lambda b: b[:48] + struct.pack("<I", 8) + b[52:], "unknown crlf_action 8"),
        (lambda b: b[:64] + struct.pack("<Q", 2**64 - 1) + b[72:], "corrupted item"),
    ],
)
def test_decode_item_checks(mangle, message):
    good = ITEMS[1].encode(GIT)
    with pytest.raises(WireError, match=message):
        decode_item(mangle(good), GIT, GIT_HASH_SHA1)


def test_result_round_trip():
    layout = native_stat_layout()
    st = os.stat(__file__)
    for res in (PcItemResult(3, C), PcItemResult(4, F),
                PcItemResult(5, W, StatData.from_os(st))):
        assert decode_result(encode_result(res, layout), layout) == res
    back = decode_result(layout.written_packet(6, st)[4:], layout)
    assert back.st == StatData(*stat_fields(st))
    assert (back.st.size, back.st.mode, back.st.ino, back.st.mtime_nsec) == (
        st.st_size, st.st_mode, st.st_ino, st.st_mtime_ns % 10**9)


def test_generic64_round_trip():
    layout = STAT_LAYOUTS["generic64"]
    st = StatData(*range(1, 17))
    assert decode_result(encode_result(PcItemResult(1, W, st), layout), layout).st == st


@pytest.mark.parametrize("name", sorted(STAT_LAYOUTS))
def test_result_fields_at_their_offsets(name):
    """Each field at its layout's offset (generic64 has mode before nlink,
    unlike StatData's order), as git's side reads a ``struct stat``."""
    layout = STAT_LAYOUTS[name]
    st = StatData(*range(101, 117))
    data = encode_result(PcItemResult(1, W, st), layout)
    for field, offset, code in layout.fields:
        (got,) = struct.unpack_from("=" + code, data, RESULT_BASE.size + offset)
        assert got == getattr(st, field), field


@pytest.mark.parametrize(
    "data,message",
    [
        (b"\0" * 15, "too short result"),
        (struct.pack("<QI", 1, 2) + bytes(5), "wrong result size"),
        (struct.pack("<QI", 1, 1) + bytes(4), "wrong result size"),
        (struct.pack("<QI", 1, 0) + bytes(4), "unknown status 0"),
        (struct.pack("<QI", 1, 4) + bytes(4), "unknown status 4"),
    ],
)
def test_decode_result_checks(data, message):
    with pytest.raises(WireError, match=message):
        decode_result(data, native_stat_layout())
    with pytest.raises(WireError, match=message):  # the coordinator's reading: the same checks
        parse_result(data, native_stat_layout())


def _random_written(layout, rng: random.Random, id_: int) -> bytes:
    """A WRITTEN result of ``layout`` with random field values (past 32 bits,
    negative times), nanoseconds below 10^9."""
    vals = []
    for _field, _off, code in layout.fields:
        bits = struct.calcsize("=" + code) * 8
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if code.islower() else (0, (1 << bits) - 1)
        vals.append(rng.choice([rng.randint(lo, hi), rng.randint(0, min(hi, 1 << 33)), lo, hi, 0]))
    by_name = dict(zip([f for f, _o, _c in layout.fields], vals, strict=True))
    for ns in ("atime_nsec", "mtime_nsec", "ctime_nsec"):
        by_name[ns] = rng.randrange(10**9)
    return encode_result(PcItemResult(id_, W, StatData(**by_name)), layout)


@pytest.mark.parametrize("name", sorted(STAT_LAYOUTS))
def test_parse_result_keeps_what_the_index_needs(name):
    """parse_result's fields, cut and kept in a Results table, are what
    index.stat_data makes of the decoded StatData: for every layout, with
    values past 32 bits, negative times and every field distinct."""
    layout = STAT_LAYOUTS[name]
    rng = random.Random(name)
    table = Results(40)
    kept = []
    for i in range(40):
        data = _random_written(layout, rng, i)
        id_, status, fields = parse_result(data, layout)
        assert (id_, status) == (i, W)
        table.save(i, status, fields)
        kept.append(pack_stat_data(decode_result(data, layout).st))
    assert [table.stat_data(i) for i in range(40)] == kept == list(table.all_stat_data())
    assert parse_result(encode_result(PcItemResult(7, C), layout), layout) == (7, C, None)


def _entries_and_records(n: int) -> tuple[list, list[tuple[int, ...]]]:
    """``n`` index entries without stat data, and stat fields for each."""
    from git_checkout_helper.index import Entry

    return ([Entry(b"f%d" % i, 0o100644, bytes(20)) for i in range(n)],
            [cut_stat_data(i, i, i, i, 1, i, 0, 0, i) for i in range(n)])


def _traced_growth(work) -> tuple[object, int]:
    """What ``work()`` returns, and by how many bytes the traced memory grew while it ran."""
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = work()
        return out, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_results_hand_their_stat_data_to_the_entries_uncopied():
    """The entries filled from a Results table hold the very stat data it
    kept: at the end of a checkout the two together cost one packed record
    and one reference an item, not a second copy (a flat buffer of the
    records, copied into each entry, was 3.5 MiB more at 100,000 items)."""
    n = 20_000
    entries, records = _entries_and_records(n)

    def fill():
        table = Results(n)
        table.save_written(0, records)
        for e, sd in zip(entries, table.all_stat_data(), strict=True):
            e.fill_stat_data(sd)
        return table

    _, grown = _traced_growth(fill)
    assert [e.sd for e in entries] == [STAT_DATA.pack(*r) for r in records]
    one = STAT_DATA.size + 33 + 8  # a bytes object of a record, and a reference to it
    assert grown < n * (one + 12), grown / n


def test_results_fill_their_entries_as_answers_come():
    """Given the entries (``fill``), a Results table puts a WRITTEN item's
    stat data into its entry as the answer comes, one at a time or a run at
    once, and keeps no list of them (0.8 MiB at 100,000 items); its reads
    give the entries' data, None for an item not WRITTEN."""
    n = 20_000
    entries, records = _entries_and_records(n)

    def fill():
        table = Results(n, entries)
        table.save(0, W, records[0])
        table.save(1, C, None)
        table.save_written(2, records[2:])
        return table

    table, grown = _traced_growth(fill)
    assert table.filled and entries[0].uptodate and not entries[1].uptodate
    assert entries[1].sd == NO_STAT_DATA and [e.sd for e in entries[2:]] == [STAT_DATA.pack(*r) for r in records[2:]]
    assert table.stat_data(5) is entries[5].sd and table.all_stat_data()[:3] == [entries[0].sd, None, entries[2].sd]
    assert grown < n * (STAT_DATA.size + 33 + 4), grown / n  # (the records and a status byte: no list of them)
    assert not Results(3).filled


@pytest.mark.parametrize("name", sorted(STAT_LAYOUTS))
def test_written_run_is_parse_result_for_each(name):
    """A run of WRITTEN pkt-lines read at once gives, for each, what
    parse_result gives cut as Results cuts it; it stops at the first packet
    that is not the next id's WRITTEN result of the layout's size, or at n
    (whole packets' worth of bytes: the caller's count)."""
    layout = STAT_LAYOUTS[name]
    rng = random.Random(name)
    results = [_random_written(layout, rng, 100 + i) for i in range(30)]
    want = [cut_stat_data(*parse_result(r, layout)[2]) for r in results]
    buf = b"junk" + b"".join(pkt_line(r) for r in results)
    assert layout.written_run(buf, 4, 100, 30) == want
    assert layout.written_run(buf, 4, 100, 7) == want[:7]
    assert layout.written_run(buf, 4, 101, 30) == []  # not the id expected
    cut = [pkt_line(r) for r in results[:5]]
    for stop in (pkt_line(encode_result(PcItemResult(105, C), layout)),  # another status
                 pkt_line(results[6]),  # an id skipped
                 pkt_line(results[5] + b"\0"),  # another size
                 b"0000"):  # a flush
        buf = b"".join([*cut, stop] + cut)
        assert layout.written_run(buf, 0, 100, len(buf) // layout.packet_size) == want[:5]
    # git reads upper-case hex too: such a packet is left to parse_result.
    upper = b"%04X" % layout.packet_size
    if upper != pkt_line(results[0])[:4]:
        assert layout.written_run(upper + results[0], 0, 100, 1) == []


def test_results_table():
    table = Results(3)
    assert len(table) == 3 and list(table.status) == [0, 0, 0]  # PC_ITEM_PENDING until answered
    st = os.stat(__file__)
    table.save(2, W, stat_data(st))  # already cut: cutting again changes nothing
    table.save(0, C, None)
    assert list(table.status) == [C, 0, W]
    assert table.stat_data(2) == pack_stat_data(st)


# --------------------------------------------------------------------------
# The C probe

PROBE = r"""
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#define GIT_MAX_RAWSZ 32
struct object_id { unsigned char hash[GIT_MAX_RAWSZ]; int algo; };
enum convert_crlf_action { CRLF_UNDEFINED, CRLF_BINARY, CRLF_TEXT, CRLF_TEXT_INPUT,
                           CRLF_TEXT_CRLF, CRLF_AUTO, CRLF_AUTO_INPUT, CRLF_AUTO_CRLF };
enum pc_item_status { PC_ITEM_PENDING = 0, PC_ITEM_WRITTEN, PC_ITEM_COLLIDED, PC_ITEM_FAILED };
/* parallel-checkout.h, git 2.32+ */
struct pc_item_fixed_portion {
	size_t id;
	struct object_id oid;
	unsigned int ce_mode;
	enum convert_crlf_action crlf_action;
	int ident;
	size_t working_tree_encoding_len;
	size_t name_len;
};
/* the Aug-2020 RFC: object_id without algo, then attr_action */
struct rfc_object_id { unsigned char hash[GIT_MAX_RAWSZ]; };
enum crlf_attr_action { CRLF_ATTR_UNDEFINED };
struct rfc_pc_item_fixed_portion {
	size_t id;
	struct rfc_object_id oid;
	unsigned int ce_mode;
	enum crlf_attr_action attr_action;
	enum convert_crlf_action crlf_action;
	int ident;
	size_t working_tree_encoding_len;
	size_t name_len;
};
struct pc_item_result {
	size_t id;
	enum pc_item_status status;
	struct stat st;
};

#define F(s, m, name) printf("%s %s %zu %zu\n", #s, name, offsetof(struct s, m), sizeof(((struct s *)0)->m))
int main(void)
{
	printf("sizeof stat %zu\n", sizeof(struct stat));
	F(stat, st_dev, "dev"); F(stat, st_ino, "ino"); F(stat, st_nlink, "nlink");
	F(stat, st_mode, "mode"); F(stat, st_uid, "uid"); F(stat, st_gid, "gid");
	F(stat, st_rdev, "rdev"); F(stat, st_size, "size"); F(stat, st_blksize, "blksize");
	F(stat, st_blocks, "blocks");
	F(stat, st_atim.tv_sec, "atime_sec"); F(stat, st_atim.tv_nsec, "atime_nsec");
	F(stat, st_mtim.tv_sec, "mtime_sec"); F(stat, st_mtim.tv_nsec, "mtime_nsec");
	F(stat, st_ctim.tv_sec, "ctime_sec"); F(stat, st_ctim.tv_nsec, "ctime_nsec");
	printf("sizeof git %zu\n", sizeof(struct pc_item_fixed_portion));
	F(pc_item_fixed_portion, id, "id"); F(pc_item_fixed_portion, oid.hash, "hash");
	F(pc_item_fixed_portion, oid.algo, "algo"); F(pc_item_fixed_portion, ce_mode, "ce_mode");
	F(pc_item_fixed_portion, crlf_action, "crlf_action"); F(pc_item_fixed_portion, ident, "ident");
	F(pc_item_fixed_portion, working_tree_encoding_len, "working_tree_encoding_len");
	F(pc_item_fixed_portion, name_len, "name_len");
	printf("sizeof rfc %zu\n", sizeof(struct rfc_pc_item_fixed_portion));
	F(rfc_pc_item_fixed_portion, id, "id"); F(rfc_pc_item_fixed_portion, oid.hash, "hash");
	F(rfc_pc_item_fixed_portion, ce_mode, "ce_mode");
	F(rfc_pc_item_fixed_portion, attr_action, "attr_action");
	F(rfc_pc_item_fixed_portion, crlf_action, "crlf_action");
	F(rfc_pc_item_fixed_portion, ident, "ident");
	F(rfc_pc_item_fixed_portion, working_tree_encoding_len, "working_tree_encoding_len");
	F(rfc_pc_item_fixed_portion, name_len, "name_len");
	printf("sizeof result %zu\n", sizeof(struct pc_item_result));
	F(pc_item_result, id, "id"); F(pc_item_result, status, "status"); F(pc_item_result, st, "st");
	return 0;
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc) to probe struct layouts with")
    d = tmp_path_factory.mktemp("probe")
    (d / "probe.c").write_text(PROBE)
    subprocess.run([cc, "-o", str(d / "probe"), str(d / "probe.c")], check=True, capture_output=True)
    out = subprocess.run([str(d / "probe")], check=True, capture_output=True, text=True).stdout
    sizes, fields = {}, {}
    for line in out.splitlines():
        s, name, *rest = line.split()
        if s == "sizeof":
            sizes[name] = int(rest[0])
        else:
            fields.setdefault(s, {})[name] = (int(rest[0]), int(rest[1]))
    return sizes, fields


def _table(layout) -> dict[str, tuple[int, int]]:
    return {f: (o, struct.calcsize("=" + code)) for f, o, code in layout.fields}


def test_probe_struct_stat_is_native_stat_layout(probe):
    sizes, fields = probe
    layout = native_stat_layout()
    assert sizes["stat"] == layout.size
    assert fields["stat"] == _table(layout)


def test_probe_git_request_layout(probe):
    sizes, fields = probe
    assert sizes["git"] == GIT.size
    assert fields["pc_item_fixed_portion"] == _table(GIT)


def test_probe_rfc_request_layout(probe):
    sizes, fields = probe
    assert sizes["rfc"] == RFC.size
    assert fields["rfc_pc_item_fixed_portion"] == _table(RFC)


def test_probe_result_layout(probe):
    sizes, fields = probe
    layout = native_stat_layout()
    assert fields["pc_item_result"]["st"][0] == RESULT_BASE.size
    assert fields["pc_item_result"]["id"] == (0, 8)
    assert fields["pc_item_result"]["status"] == (8, 4)
    assert RESULT_BASE.unpack(struct.pack("=QI4x", 7, 2)) == (7, 2)
    assert sizes["result"] == layout.result.size


@pytest.mark.parametrize("seed", range(4))
def test_results_read_from_a_pipe_in_any_pieces(seed):
    """workers._read_results: a helper's answers to two batches (WRITTEN
    runs, a COLLIDED and a FAILED between them, the flushes), read in pieces
    of any size (a packet cut anywhere), are saved as parse_result reads them
    one by one: every status and stat field, each id reported once and in
    order, each batch's flush asking for more; a second id out of order is
    the helper's error, as before."""
    from git_checkout_helper.workers import _Helper, _read_results

    layout = native_stat_layout()
    rng = random.Random(seed)
    answers: list[bytes] = []
    for i in range(60):
        kind = rng.random()
        answers.append(encode_result(PcItemResult(i, C if kind < 0.05 else F), layout) if kind < 0.08
                       else _random_written(layout, rng, i))
    stream = b"".join(pkt_line(a) for a in answers[:25]) + b"0000" + b"".join(pkt_line(a) for a in answers[25:]) + b"0000"
    h = _Helper(0, None, -1, 0.0)
    h.batches.extend([(0, 25), (25, 60)])
    table, told, refills, runs = Results(60), [], [], []

    def on_result(first, n, status):
        told.extend((i, status) for i in range(first, first + n))
        runs.append(n)

    pos = 0
    while pos < len(stream):
        size = rng.choice([1, 3, 7, 150, 164, 1000, 5000])
        _read_results(h, stream[pos : pos + size], layout, table, on_result, refills.append)
        pos += size
        assert h.error is None
    assert max(runs) > 1  # (runs were read at once)
    assert h.parser.pending == 0 and not h.batches and len(refills) == 2
    parsed = [parse_result(a, layout) for a in answers]
    assert told == [(i, st) for i, st, _f in parsed]
    assert list(table.status) == [st for _i, st, _f in parsed]
    assert [table.stat_data(i) for i, st, _f in parsed if st == W] == [
        STAT_DATA.pack(*cut_stat_data(*f)) for _i, st, f in parsed if st == W]
    h = _Helper(0, None, -1, 0.0)
    h.batches.append((0, 60))
    _read_results(h, b"".join(pkt_line(a) for a in answers[:3] + answers[4:]), layout, Results(60),
                  lambda *a: None, refills.append)
    assert h.error == "unexpected item id from checkout helper 0 (got 4, exp 3)"
