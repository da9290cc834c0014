"""Byte layouts of git's parallel-checkout protocol, as explicit tables.

Mirrors ``parallel-checkout.h``: ``struct pc_item_fixed_portion`` (what the
coordinator sends per item) and ``struct pc_item_result`` (what a worker answers),
both in the machine's native LP64 layout, because git writes the C structs as
they sit in memory. Each layout is declared once as a table of
``(field, offset, struct code)``; the precompiled :class:`struct.Struct` is
derived from the table and checked against its offsets at import, so a wrong
row fails loudly instead of shifting every later field.

Two request dialects exist:

* ``git``: git 2.32+ ``checkout--worker``. ``struct object_id`` is 32 hash
  bytes followed by ``int algo`` (0 in 2.32.0, 1 SHA-1, 2 SHA-256 from 2.33).
* ``rfc``: the August 2020 RFC's ``checkout--helper`` (hash without algo, an
  ``attr_action`` field where git later put ``ce_mode``).

One extension, ours only: :data:`GIT_FILTERS_LAYOUT` (the helper's
``--filters``, sent only to our own helpers) is the ``git`` dialect plus an
optional trailer after the path: the name of the ``filter.<driver>`` whose
smudge the helper must apply (see :mod:`filters`). ``name_len`` already says
where the path ends, so the trailer needs no separator, and an item without
one is byte for byte a ``git`` item. git's worker never gets this layout (it
would refuse the trailer as a corrupted item, see ``packet_to_pc_item``).
"""

from __future__ import annotations

import operator
import os
import struct
import sys
from enum import IntEnum
from itertools import repeat

from .convert import CRLF_ACTIONS, ConvertCrlfAction
from .hash_algo import GIT_HASH_SHA1, GIT_HASH_SHA256, HASH_ALGOS
from .record import Record, astuple, fields

__all__ = [
    "GIT_HASH_SHA1",
    "GIT_FILTERS_LAYOUT",
    "GIT_HASH_SHA256",
    "PcItem",
    "PcItemResult",
    "PcItemStatus",
    "RequestLayout",
    "StatLayout",
    "WireError",
    "REQUEST_LAYOUTS",
    "RESULT_BASE",
    "STAT_LAYOUTS",
    "native_stat_layout",
]


class WireError(Exception):
    """An item or result that does not fit its layout; one-line message."""


class PcItemStatus(IntEnum):
    """``enum pc_item_status``."""

    PC_ITEM_PENDING = 0
    PC_ITEM_WRITTEN = 1
    PC_ITEM_COLLIDED = 2
    PC_ITEM_FAILED = 3


#: ``GIT_HASH_*`` values carried in ``struct object_id.algo`` (hash_algo.py; 0: unknown).
GIT_HASH_UNKNOWN = 0
GIT_MAX_RAWSZ = 32
HASH_RAWSZ = {a.format_id: a.oid_length for a in HASH_ALGOS.values()}


def _build(name: str, fields: tuple[tuple[str, int, str], ...], size: int,
           keep: frozenset[str] | None = None) -> struct.Struct:
    """Derive a native-order Struct from a layout table and verify its offsets;
    with ``keep``, the other fields are skipped as padding (not unpacked)."""
    fmt = "="
    at = 0
    for field, offset, code in fields:
        if offset < at:
            raise AssertionError(f"{name}.{field}: offset {offset} overlaps")
        if offset > at:
            fmt += f"{offset - at}x"
        width = struct.calcsize("=" + code)
        fmt += code if keep is None or field in keep else f"{width}x"
        at = offset + width
    if size > at:
        fmt += f"{size - at}x"
    st = struct.Struct(fmt)
    if st.size != size:
        raise AssertionError(f"{name}: table gives {st.size} bytes, expected {size}")
    return st


class Layout:
    """A C struct as a table of (field, offset, struct code), with its
    precompiled :class:`struct.Struct`."""

    def __init__(self, name: str, fields: tuple[tuple[str, int, str], ...], size: int):
        self.name = name
        self.fields = fields
        self.size = size
        self.struct = _build(name, fields, size)


class RequestLayout(Layout):
    """One dialect of ``struct pc_item_fixed_portion``; ``filters``: items may
    carry a filter driver's name after the path (our extension)."""

    filters = False


REQUEST_LAYOUTS: dict[str, RequestLayout] = {
    "git": RequestLayout(
        "git",
        (
            ("id", 0, "Q"),  # size_t
            ("hash", 8, "32s"),  # struct object_id.hash[GIT_MAX_RAWSZ]
            ("algo", 40, "i"),  # struct object_id.algo
            ("ce_mode", 44, "I"),  # unsigned int
            ("crlf_action", 48, "I"),  # enum convert_crlf_action
            ("ident", 52, "i"),  # int
            ("working_tree_encoding_len", 56, "Q"),  # size_t
            ("name_len", 64, "Q"),  # size_t
        ),
        72,
    ),
    "rfc": RequestLayout(
        "rfc",
        (
            ("id", 0, "Q"),
            ("hash", 8, "32s"),
            ("ce_mode", 40, "I"),
            ("attr_action", 44, "I"),
            ("crlf_action", 48, "I"),
            ("ident", 52, "i"),
            ("working_tree_encoding_len", 56, "Q"),
            ("name_len", 64, "Q"),
        ),
        72,
    ),
}

#: The ``git`` dialect with the filter-driver trailer (helper ``--filters``).
GIT_FILTERS_LAYOUT = RequestLayout("git", REQUEST_LAYOUTS["git"].fields, REQUEST_LAYOUTS["git"].size)
GIT_FILTERS_LAYOUT.filters = True

#: ``offsetof(struct pc_item_result, st)``: id (size_t), status (enum), 4 pad.
RESULT_BASE = _build(
    "pc_item_result", (("id", 0, "Q"), ("status", 8, "I")), 16
)


class StatData(Record):
    """The fields of ``struct stat`` that a result carries."""

    dev: int
    ino: int
    nlink: int
    mode: int
    uid: int
    gid: int
    rdev: int
    size: int
    blksize: int
    blocks: int
    atime_sec: int
    atime_nsec: int
    mtime_sec: int
    mtime_nsec: int
    ctime_sec: int
    ctime_nsec: int

    @classmethod
    def from_os(cls, st: os.stat_result) -> StatData:
        return cls(*stat_fields(st))


#: :class:`StatData`'s fields, in the order :func:`stat_fields` gives them.
STAT_FIELDS = fields(StatData)
#: The ``struct stat`` fields an index entry keeps (``fill_stat_data``), in
#: the order of :func:`index.cut_stat_data`'s arguments.
INDEX_STAT_FIELDS = ("ctime_sec", "ctime_nsec", "mtime_sec", "mtime_nsec", "dev", "ino", "uid", "gid", "size")


class StatLayout(Layout):
    """The native ``struct stat`` of one platform; ``result`` packs a whole
    WRITTEN ``struct pc_item_result`` (base, then the stat) in one call, and
    :meth:`index_stat` reads from one only the fields an index entry keeps."""

    def __init__(self, name: str, fields: tuple[tuple[str, int, str], ...], size: int):
        super().__init__(name, fields, size)
        self.result = struct.Struct(RESULT_BASE.format + self.struct.format[1:])
        # StatData's order is x86_64's; another layout (generic64 has mode
        # before nlink) gets its fields put in its own order and back.
        names = [f for f, _o, _c in fields]
        order = [STAT_FIELDS.index(f) for f in names]
        self._to_layout = None if order == sorted(order) else operator.itemgetter(*order)
        self._from_layout = None if self._to_layout is None else operator.itemgetter(
            *(names.index(f) for f in STAT_FIELDS))
        self._index_struct = struct.Struct(
            RESULT_BASE.format + _build(name, fields, size, frozenset(INDEX_STAT_FIELDS)).format[1:])
        kept = [f for f, _o, _c in fields if f in INDEX_STAT_FIELDS]
        self._index_order = operator.itemgetter(*(2 + kept.index(f) for f in INDEX_STAT_FIELDS))
        # Runs of WRITTEN results as they come from a helper's pipe, each a
        # pkt-line (:meth:`written_run`): the header, id and status of each,
        # and the index's fields of each read as the low 32 bits of the field
        # (``fill_stat_data``'s cut, so nothing is cut afterwards).
        self.packet_size = 4 + self.result.size
        self._packet_head = b"%04x" % self.packet_size
        self._run_heads = struct.Struct("=4s" + RESULT_BASE.format[1:] + f"{size}x")
        low = 0 if sys.byteorder == "little" else 4
        words = tuple((f, o + (low if struct.calcsize(c) == 8 else 0), "I") for f, o, c in fields
                      if f in INDEX_STAT_FIELDS)
        self._run_stats = struct.Struct(f"={4 + RESULT_BASE.size}x" + _build(name, words, size).format[1:])
        self._run_order = operator.itemgetter(*(kept.index(f) for f in INDEX_STAT_FIELDS))

    def pack_result(self, id_: int, status: int, values: tuple[int, ...]) -> bytes:
        """A WRITTEN ``struct pc_item_result`` of :data:`STAT_FIELDS` ``values``."""
        if self._to_layout is not None:
            values = self._to_layout(values)
        return self.result.pack(id_, status, *values)

    def written_packet(self, id_: int, st: os.stat_result) -> bytes:
        """A helper's reply for a file it wrote, straight from its ``fstat``:
        the pkt-line of a WRITTEN result (:func:`encode_result`), in one call
        (its size is fixed: so is its header)."""
        return self._packet_head + self.pack_result(id_, PcItemStatus.PC_ITEM_WRITTEN, stat_fields(st))

    def unpack_stat(self, data: bytes) -> tuple[int, ...]:
        """The :data:`STAT_FIELDS` values of a WRITTEN result."""
        values = self.result.unpack(data)[2:]
        return values if self._from_layout is None else self._from_layout(values)

    def index_stat(self, data: bytes) -> tuple[int, ...]:
        """The :data:`INDEX_STAT_FIELDS` of a WRITTEN result of this layout's size."""
        return self._index_order(self._index_struct.unpack(data))

    def written_run(self, buf: bytes, pos: int, first_id: int, n: int) -> list[tuple[int, ...]]:
        """How many of the ``n`` pkt-lines at ``pos`` in ``buf`` are WRITTEN
        results of this layout's size with the ids ``first_id``, ``first_id
        + 1``..., told by the list of their :data:`INDEX_STAT_FIELDS`, cut
        as :func:`index.cut_stat_data` cuts them; it stops before the first
        packet that is anything else (the caller reads that one through
        :func:`parse_result` and its checks).

        The coordinator's common case, read in C: two ``iter_unpack`` over
        the run instead of a parse and checks per result (2 µs each)."""
        view = memoryview(buf)[pos : pos + n * self.packet_size]
        heads = list(self._run_heads.iter_unpack(view))
        want = list(zip(repeat(self._packet_head), range(first_id, first_id + n),
                        repeat(PcItemStatus.PC_ITEM_WRITTEN)))
        if heads != want:
            n = next(i for i, (got, exp) in enumerate(zip(heads, want, strict=True)) if got != exp)
            view = view[: n * self.packet_size]
        return list(map(self._run_order, self._run_stats.iter_unpack(view)))


STAT_LAYOUTS: dict[str, StatLayout] = {
    # glibc x86_64 <bits/struct_stat.h>: nlink is 64-bit and comes third.
    "x86_64": StatLayout(
        "x86_64",
        (
            ("dev", 0, "Q"),
            ("ino", 8, "Q"),
            ("nlink", 16, "Q"),
            ("mode", 24, "I"),
            ("uid", 28, "I"),
            ("gid", 32, "I"),
            ("rdev", 40, "Q"),
            ("size", 48, "q"),
            ("blksize", 56, "q"),
            ("blocks", 64, "q"),
            ("atime_sec", 72, "q"),
            ("atime_nsec", 80, "q"),
            ("mtime_sec", 88, "q"),
            ("mtime_nsec", 96, "q"),
            ("ctime_sec", 104, "q"),
            ("ctime_nsec", 112, "q"),
        ),
        144,
    ),
    # The generic layout (asm-generic/stat.h) used by aarch64 and riscv64.
    "generic64": StatLayout(
        "generic64",
        (
            ("dev", 0, "Q"),
            ("ino", 8, "Q"),
            ("mode", 16, "I"),
            ("nlink", 20, "I"),
            ("uid", 24, "I"),
            ("gid", 28, "I"),
            ("rdev", 32, "Q"),
            ("size", 48, "q"),
            ("blksize", 56, "i"),
            ("blocks", 64, "q"),
            ("atime_sec", 72, "q"),
            ("atime_nsec", 80, "q"),
            ("mtime_sec", 88, "q"),
            ("mtime_nsec", 96, "q"),
            ("ctime_sec", 104, "q"),
            ("ctime_nsec", 112, "q"),
        ),
        128,
    ),
}

_MACHINE_LAYOUT = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "generic64",
    "arm64": "generic64",
    "riscv64": "generic64",
}


def native_stat_layout() -> StatLayout:
    """The ``struct stat`` layout of this machine; refuse to guess elsewhere."""
    if not sys.platform.startswith("linux") or struct.calcsize("P") != 8:
        raise WireError(f"no struct stat layout known for {sys.platform} (LP64 Linux only)")
    machine = os.uname().machine.lower()  # (platform.machine(), without importing platform)
    try:
        return STAT_LAYOUTS[_MACHINE_LAYOUT[machine]]
    except KeyError:
        raise WireError(f"no struct stat layout known for machine {machine!r}") from None


class PcItem(Record):
    """One checkout item: ``struct parallel_checkout_item`` as sent on the wire."""

    id: int
    oid: bytes  # raw object id, 20 or 32 bytes
    ce_mode: int
    name: bytes
    crlf_action: int = ConvertCrlfAction.CRLF_BINARY
    ident: int = 0
    working_tree_encoding: bytes | None = None
    algo: int = GIT_HASH_SHA1
    attr_action: int = 0  # rfc dialect only
    filter: bytes | None = None  # a filter driver's name: GIT_FILTERS_LAYOUT only

    def encode(self, layout: RequestLayout) -> bytes:
        """Pack like git's ``send_one_item``: fixed portion, encoding, name
        (then the filter driver's name, in the ``--filters`` layout only)."""
        if self.filter and not layout.filters:
            raise WireError(f"item {self.id}: a filtered item for a helper without --filters")
        enc = self.working_tree_encoding or b""
        h = self.oid.ljust(GIT_MAX_RAWSZ, b"\0")
        if layout.name == "git":
            fixed = layout.struct.pack(
                self.id, h, self.algo, self.ce_mode, self.crlf_action, self.ident,
                len(enc), len(self.name),
            )
        else:
            fixed = layout.struct.pack(
                self.id, h, self.ce_mode, self.attr_action, self.crlf_action, self.ident,
                len(enc), len(self.name),
            )
        return fixed + enc + self.name + (self.filter or b"")


def decode_item(data: bytes, layout: RequestLayout, default_algo: int) -> PcItem:
    """Unpack one item like ``packet_to_pc_item``, with its sanity checks.

    ``default_algo`` is the repository's hash algorithm, used when the wire
    says 0 (git 2.32.0 sent an uninitialised algo) and for the rfc dialect.
    """
    size = layout.size
    if len(data) < size:
        raise WireError(f"checkout worker received too short item (got {len(data)}B, exp {size}B)")
    vals = layout.struct.unpack_from(data)
    if layout.name == "git":
        id_, h, algo, ce_mode, crlf, ident, enc_len, name_len = vals
        attr_action = 0
    else:
        id_, h, ce_mode, attr_action, crlf, ident, enc_len, name_len = vals
        algo = 0
    trailer = len(data) - size - enc_len - name_len
    if trailer < 0 or (trailer and not layout.filters):
        raise WireError(
            f"checkout worker received corrupted item {id_} "
            f"(lengths {enc_len}+{name_len} do not match {len(data) - size} bytes)"
        )
    if algo == GIT_HASH_UNKNOWN:
        algo = default_algo
    rawsz = HASH_RAWSZ.get(algo)
    if rawsz is None:
        raise WireError(f"item {id_}: unknown hash algorithm {algo}")
    if crlf not in CRLF_ACTIONS:
        raise WireError(f"item {id_}: unknown crlf_action {crlf}")
    enc = data[size : size + enc_len] if enc_len else None
    name = data[size + enc_len : len(data) - trailer]
    # (By position, in the fields' order: a call by keyword costs 2.5 times as much.)
    return PcItem(id_, h[:rawsz], ce_mode, name, crlf, ident, enc, algo, attr_action,
                  data[len(data) - trailer :] if trailer else None)


class PcItemResult(Record):
    """``struct pc_item_result``: id, status and, when WRITTEN, the stat data."""

    id: int
    status: int
    st: StatData | None = None


def encode_result(res: PcItemResult, layout: StatLayout) -> bytes:
    """Pack like ``report_result``: the whole struct only when WRITTEN."""
    if res.status == PcItemStatus.PC_ITEM_WRITTEN:
        return layout.pack_result(res.id, res.status, astuple(res.st))
    return RESULT_BASE.pack(res.id, res.status)


def stat_fields(st: os.stat_result) -> tuple[int, ...]:
    """The ``struct stat`` fields of an ``os.stat_result``, in StatData order."""
    a, m, c = st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns
    return (
        st.st_dev, st.st_ino, st.st_nlink, st.st_mode, st.st_uid, st.st_gid,
        st.st_rdev, st.st_size, st.st_blksize, st.st_blocks,
        a // 1_000_000_000, a % 1_000_000_000,
        m // 1_000_000_000, m % 1_000_000_000,
        c // 1_000_000_000, c % 1_000_000_000,
    )


def _result_head(data: bytes, layout: StatLayout) -> tuple[int, int]:
    """``parse_and_save_result``'s checks of one result: (id, status)."""
    if len(data) < RESULT_BASE.size:
        raise WireError(
            f"too short result from checkout worker (got {len(data)}B, exp >={RESULT_BASE.size}B)"
        )
    id_, status = RESULT_BASE.unpack_from(data)
    if status == PcItemStatus.PC_ITEM_WRITTEN:
        if len(data) != layout.result.size:
            raise WireError(
                f"wrong result size from checkout worker (got {len(data)}B, exp {layout.result.size}B)"
            )
        return id_, status
    if status not in (PcItemStatus.PC_ITEM_COLLIDED, PcItemStatus.PC_ITEM_FAILED):
        raise WireError(f"unknown status {status} for item {id_} from checkout worker")
    if len(data) != RESULT_BASE.size:
        raise WireError(
            f"wrong result size from checkout worker (got {len(data)}B, exp {RESULT_BASE.size}B)"
        )
    return id_, status


def decode_result(data: bytes, layout: StatLayout) -> PcItemResult:
    """Unpack a result like ``parse_and_save_result``, checking its size."""
    id_, status = _result_head(data, layout)
    if status == PcItemStatus.PC_ITEM_WRITTEN:
        return PcItemResult(id_, status, StatData(*layout.unpack_stat(data)))
    return PcItemResult(id_, status)


def parse_result(data: bytes, layout: StatLayout) -> tuple[int, int, tuple[int, ...] | None]:
    """:func:`decode_result` without its objects, for the coordinator, which
    keeps only what the index needs: (id, status, the
    :data:`INDEX_STAT_FIELDS` of a WRITTEN result or None)."""
    id_, status = _result_head(data, layout)
    return id_, status, layout.index_stat(data) if status == PcItemStatus.PC_ITEM_WRITTEN else None
