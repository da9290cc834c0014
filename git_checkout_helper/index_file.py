"""The index file format, read and written as ``read-cache.c`` does.

``parse_index`` mirrors ``do_read_index``: ``verify_hdr`` (signature and
versions 2 to 4; the trailing hash is kept, not checked: git checks it only
for ``git fsck``, which sets ``verify_index_checksum``, and reads an index
whose hash does not match like any other), ``create_from_disk`` (extended flags,
version 4's prefix-compressed names with ``varint.c`` numbers), and
``read_index_extension``'s rule for extensions: those we know are kept as
they are (``TREE``, ``REUC``, ``link``, ``UNTR``, ``FSMN``, ``EOIE``,
``IEOT``, ``sdir``), an unknown one whose signature starts with an
uppercase letter is optional ("ignoring XXXX extension", and not written
back), any other is required and the index is refused.

``serialize_index_file`` mirrors ``do_write_index``: version 2 or 3 as the
entries need (version 3 demoted to 2 when no entry has extended flags),
version 4 with ``ce_write_entry``'s name compression, the extensions in
git's order, and ``IEOT``/``EOIE`` when ``record_ieot``/``record_eoie``
ask for them. A file git wrote is written back byte for byte.

Dulwich's reader is not used here: it stops at the first extension whose
signature is not four uppercase letters (so ``link`` and ``sdir`` were
silently lost), and encodes version 4 strip lengths as LEB128 instead of
git's offset varint (equal below 128 only).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from operator import attrgetter

from .hash_algo import new_hash
from .index import CE_EXTENDED, CE_EXTENDED_SHIFT, CE_NAMEMASK, Entry

__all__ = [
    "CE_INTENT_TO_ADD",
    "CE_INTENT_TO_ADD_IN_CORE",
    "CE_SKIP_WORKTREE",
    "CE_SKIP_WORKTREE_IN_CORE",
    "IndexFile",
    "IndexFormatError",
    "index_order_key",
    "decode_varint",
    "encode_varint",
    "index_file_chunks",
    "parse_index",
    "serialize_index_file",
]

CE_STAGEMASK = 0x3000
CE_VALID = 0x8000
# The on-disk 16 bits of the extended flags (CE_INTENT_TO_ADD, CE_SKIP_WORKTREE >> 16).
CE_INTENT_TO_ADD = 0x2000
CE_SKIP_WORKTREE = 0x4000
CE_EXTENDED_FLAGS = CE_INTENT_TO_ADD | CE_SKIP_WORKTREE
#: The same, where :attr:`index.Entry.ce_flags` holds them (git's in-core values).
CE_INTENT_TO_ADD_IN_CORE = CE_INTENT_TO_ADD << CE_EXTENDED_SHIFT
CE_SKIP_WORKTREE_IN_CORE = CE_SKIP_WORKTREE << CE_EXTENDED_SHIFT
#: About how much of an index :func:`index_file_chunks` hands out at a time:
#: the buffer of git's ``hashfd``. (A MiB at a time held 3 MiB of buffers
#: while a 100,000-file index was written.)
CHUNK_SIZE = 128 << 10



def index_order_key(e: Entry) -> tuple[bytes, int]:
    """An entry's place in an index: by name, then stage (``ce_stage``;
    git's ``cache_name_stage_compare``)."""
    return e.name, (e.ce_flags & CE_STAGEMASK) >> 12


KNOWN_EXTENSIONS = (b"TREE", b"REUC", b"link", b"UNTR", b"FSMN", b"EOIE", b"IEOT", b"sdir")
# do_write_index's order; EOIE is always last.
WRITE_ORDER = (b"IEOT", b"link", b"TREE", b"REUC", b"UNTR", b"FSMN", b"sdir")


class IndexFormatError(Exception):
    """An index we cannot read completely: git's lines (``error: ...`` then
    ``fatal: ...``), exit code 128."""

    code = 128


def _corrupt(*lines: str) -> IndexFormatError:
    return IndexFormatError("\n".join(list(lines) + ["fatal: index file corrupt"]))


def decode_varint(data, pos: int) -> tuple[int, int]:
    """``varint.c`` ``decode_varint``: (value, next position)."""
    c = data[pos]
    pos += 1
    val = c & 127
    while c & 128:
        val += 1
        c = data[pos]
        pos += 1
        val = (val << 7) + (c & 127)
    return val, pos


def encode_varint(value: int) -> bytes:
    """``varint.c`` ``encode_varint``."""
    out = [value & 127]
    value >>= 7
    while value:
        value -= 1
        out.append(128 | (value & 127))
        value >>= 7
    return bytes(reversed(out))


class IndexFile:
    """One index file as read: every entry (all stages, in file order),
    the extensions (signature, payload) in file order, optional ones git
    ignores left out, and the trailing hash."""

    __slots__ = ("version", "entries", "extensions", "checksum", "warnings")

    def __init__(self, version: int, entries: list[Entry], extensions: list[tuple[bytes, bytes]],
                 checksum: bytes, warnings: list[str]) -> None:
        self.version = version
        self.entries = entries
        self.extensions = extensions
        self.checksum = checksum
        self.warnings = warnings

    def extension(self, sig: bytes) -> bytes | None:
        for s, data in self.extensions:
            if s == sig:
                return data
        return None


#: An on-disk entry's fixed part: the stat data's first six words, the mode,
#: their last three (:data:`index.STAT_DATA` apart from the mode), the
#: object id, the flags.
_FIXED = {n: struct.Struct(f">24sI12s{n}sH") for n in (20, 32)}
_CE_FLAGS = attrgetter("ce_flags")
_NAME = attrgetter("name")
#: The bits of an entry's flags word written as they are (the rest: name length, CE_EXTENDED).
_KEPT_FLAGS = 0xFFFF & ~(CE_NAMEMASK | CE_EXTENDED)
#: The fewest bytes an entry takes in the file (the fixed part with a
#: 20-byte id, a name of one byte and its NUL, padded to 8; a version 4
#: entry's prefix length makes up for its padding).
MIN_ONDISK_ENTRY = 64
#: The NULs after a name that end a v2/v3 entry on a multiple of 8 (1 to 8 of
#: them), by the entry's length without them, modulo 8.
_PADDING = tuple(b"\0" * (8 - k) for k in range(8))


def parse_index(data: bytes, rawsz: int = 20, path: str = "index") -> IndexFile:
    """``do_read_index`` over the bytes of an index file."""
    size = len(data)
    if size < 12 + rawsz:
        raise IndexFormatError(f"fatal: {path}: index file smaller than expected")
    sig, version, nr = struct.unpack_from(">4sII", data, 0)
    if sig != b"DIRC":
        raise _corrupt(f"error: bad signature 0x{int.from_bytes(sig, 'little'):08x}")
    if not 2 <= version <= 4:
        raise _corrupt(f"error: bad index version {version}")
    trailer = data[size - rawsz:]
    fixed = _FIXED[rawsz]
    unpack = fixed.unpack_from
    flags_end = fixed.size
    end = size - rawsz
    entries: list[Entry] = []
    append = entries.append
    pos = 12
    prev = b""
    # One int object for each distinct mode (a few), not one an entry.
    one_mode = {}.setdefault
    try:
        for _ in range(nr):
            (sd_head, mode, sd_tail, oid, flags) = unpack(data, pos)
            p = pos + flags_end
            ext = 0
            if flags & CE_EXTENDED:
                ext = struct.unpack_from(">H", data, p)[0]
                p += 2
                if ext & ~CE_EXTENDED_FLAGS:
                    raise IndexFormatError(f"fatal: unknown index entry format 0x{ext << 16:08x}")
            namelen = flags & CE_NAMEMASK
            if version == 4:
                strip, p = decode_varint(data, p)
                if strip > len(prev):
                    raise IndexFormatError("fatal: malformed name field in the index, near path '"
                                           + prev.decode("utf-8", "replace") + "'")
                nul = data.index(b"\0", p)
                name = prev[:len(prev) - strip] + data[p:nul]
                pos = nul + 1
            else:
                if namelen == CE_NAMEMASK:
                    nul = data.index(b"\0", p)
                else:
                    nul = p + namelen
                name = data[p:nul]
                # ondisk_ce_size: the fixed part + name + NUL, padded to 8.
                pos += (flags_end + (2 if flags & CE_EXTENDED else 0) + len(name) + 8) & ~7
            if namelen != CE_NAMEMASK and namelen != len(name):
                raise _corrupt(f"error: index entry name length mismatch near '{name.decode('utf-8', 'replace')}'")
            if pos > end:
                raise _corrupt("error: index entries run past the end of the file")
            append(Entry(name, one_mode(mode, mode), oid, sd_head + sd_tail, flags & (CE_VALID | CE_STAGEMASK), ext))
            prev = name
    except (struct.error, ValueError, IndexError):
        raise _corrupt("error: index entries are truncated") from None
    extensions: list[tuple[bytes, bytes]] = []
    warnings: list[str] = []
    while pos <= end - 8:
        sig, extsize = struct.unpack_from(">4sI", data, pos)
        if pos + 8 + extsize > end:
            raise _corrupt(f"error: index extension {sig.decode('latin-1')!s} runs past the end of the file")
        payload = data[pos + 8:pos + 8 + extsize]
        if sig in KNOWN_EXTENSIONS:
            extensions.append((sig, payload))
        elif not 65 <= sig[0] <= 90:
            raise _corrupt(f"error: index uses {sig.decode('latin-1')} extension, which we do not understand")
        else:
            warnings.append(f"ignoring {sig.decode('latin-1')} extension")
        pos += 8 + extsize
    return IndexFile(version, entries, extensions, trailer, warnings)


def serialize_index_file(*args, **kwargs) -> bytes:
    """``do_write_index``: the bytes of an index file (:func:`index_file_chunks`'s,
    with its arguments, joined)."""
    return b"".join(index_file_chunks(*args, **kwargs))


def index_file_chunks(
    version: int,
    entries: list[Entry],
    extensions: list[tuple[bytes, bytes]],
    rawsz: int = 20,
    ieot_blocks: int = 0,
    eoie: bool = False,
    strip_names: frozenset | set = frozenset(),
    skip_hash: bool = False,
    openssl: bool = True,
) -> Iterator[bytes]:
    """``do_write_index``: the bytes of an index file, in chunks of about
    ``CHUNK_SIZE`` to be written as they come (git's ``ce_write`` buffers
    its writes the same way, hashing what it writes).

    ``extensions`` are written in git's order (IEOT first, EOIE last, which
    are computed here, never taken from ``extensions``); ``ieot_blocks``
    above 1 writes an offset table of that many blocks (``record_ieot``);
    ``eoie`` the end-of-entries extension (``record_eoie``). Entries whose
    position is in ``strip_names`` are written with an empty name
    (CE_STRIP_NAME: replacements in a split index). ``skip_hash``: a zero
    trailer instead of the hash (``index.skipHash``, git 2.40 and later).
    ``openssl``: a big index may be hashed by OpenSSL's code, loaded for it
    if need be (:func:`hash_algo.new_hash`); False, by the interpreter's.

    In chunks because a whole index in one buffer was the coordinator's peak
    memory at 100,000 files (11 MB of index, then a second copy while the
    buffer grew).
    """
    # (The largest word alone says whether any has extended flags: a C loop.)
    extended = max(map(_CE_FLAGS, entries), default=0) >> CE_EXTENDED_SHIFT
    if version in (2, 3):
        version = 3 if extended else 2
    fixed = _FIXED[rawsz]
    pack = fixed.pack
    algo = "sha256" if rawsz == 32 else "sha1"
    # (Told the least the file will hold, an entry's fixed part and a NUL
    # padded to 8 each, a big index is hashed by OpenSSL's code: at 100,000
    # entries 11 MB, 43 ms with the built-in code, 7 with OpenSSL.)
    trailer = new_hash(algo, size=len(entries) * MIN_ONDISK_ENTRY if openssl else 0)
    out = bytearray(b"DIRC")
    out += struct.pack(">II", version, len(entries))
    done = 0  # bytes of the file already handed out: a position is done + len(out)
    ieot: list[tuple[int, int]] = []
    nr = len(entries)
    per_block = -(-nr // ieot_blocks) if ieot_blocks > 1 else 0
    block_start, block_nr = len(out), 0
    prev = b""
    # Entries go a batch at a time (about CHUNK_SIZE of them, and never
    # across an offset table's block); a batch of usual entries (version 2
    # or 3, no name stripped, none with extended flags or a name of
    # CE_NAMEMASK bytes or more: asked of the whole batch in C loops) is
    # three appends an entry, without a question (:func:`_write_entries`
    # asks them): ~0.3 us an entry, 0.6 with the questions (an index of
    # 100,000).
    kept_flags, fixed_size, padding = _KEPT_FLAGS, fixed.size, _PADDING
    batch = max(1, CHUNK_SIZE // 128)
    plain = version != 4 and not strip_names
    stop = 0
    while stop < nr:
        start, stop = stop, min(stop + batch, nr)
        if per_block:
            stop = min(stop, (start // per_block + 1) * per_block)
        if per_block and start and start % per_block == 0:
            ieot.append((block_start, block_nr))
            block_start, block_nr = done + len(out), 0
            prev = b"\0" + prev[1:] if prev else prev
        part = entries[start:stop]
        if plain and not max(map(_CE_FLAGS, part)) >> CE_EXTENDED_SHIFT and max(map(len, map(_NAME, part))) < CE_NAMEMASK:
            for e in part:
                sd = e.sd
                name = e.name
                n = len(name)
                out += pack(sd[:24], e.mode, sd[24:], e.oid, n | (e.ce_flags & kept_flags))
                out += name
                out += padding[(fixed_size + n) % 8]
        else:
            prev = _write_entries(out, part, start, version, strip_names, prev, fixed)
        block_nr += stop - start
        if len(out) >= CHUNK_SIZE:
            chunk = bytes(out)
            trailer.update(chunk)
            done += len(chunk)
            out.clear()
            yield chunk
    if per_block and block_nr:
        ieot.append((block_start, block_nr))
    _write_extensions(out, extensions, ieot if len(ieot) > 1 or (per_block and ieot) else None,
                      done + len(out) if eoie else 0, algo)
    trailer.update(out)
    out += b"\0" * rawsz if skip_hash else trailer.digest()
    yield bytes(out)


def _write_entries(out: bytearray, part: list[Entry], start: int, version: int, strip_names: frozenset | set,
                   prev: bytes, fixed: struct.Struct) -> bytes:
    """``ce_write_entry`` for each of ``part`` (the entries from position
    ``start``), any version, flags and name (``strip_names``: see
    :func:`index_file_chunks`); ``prev``: the name before them, for version
    4's prefix compression. Returns the last name written."""
    pack, fixed_size = fixed.pack, fixed.size
    for i, e in enumerate(part, start):
        name = e.name
        n = len(name)
        ce_flags = e.ce_flags
        sd = e.sd
        if strip_names and i in strip_names:
            name = b""
            n = 0
        flags = (n if n < CE_NAMEMASK else CE_NAMEMASK) | (ce_flags & _KEPT_FLAGS)
        ext = ce_flags >> CE_EXTENDED_SHIFT
        if ext:
            flags |= CE_EXTENDED
        out += pack(sd[:24], e.mode, sd[24:], e.oid, flags)
        if ext:
            out += struct.pack(">H", ext)
        if version == 4:
            common = 0
            limit = min(len(name), len(prev))
            while common < limit and name[common] == prev[common]:
                common += 1
            out += encode_varint(len(prev) - common)
            out += name[common:]
            out += b"\0"
            prev = name
        else:
            out += name
            out += _PADDING[(fixed_size + (2 if ext else 0) + n) % 8]
    return prev


def _write_extensions(out: bytearray, extensions: list[tuple[bytes, bytes]], ieot: list[tuple[int, int]] | None,
                      offset: int, algo: str) -> None:
    """The extensions after the entries, in git's order: ``ieot`` (None:
    none) as IEOT, and an EOIE for entries that end at ``offset`` (0: none)."""
    by_sig = dict(extensions)
    if ieot is not None:
        by_sig[b"IEOT"] = struct.pack(">I", 1) + b"".join(struct.pack(">II", o, n) for o, n in ieot)
    else:
        by_sig.pop(b"IEOT", None)
    eh = new_hash(algo) if offset else None
    for sig in WRITE_ORDER:
        if sig in by_sig:
            header = sig + struct.pack(">I", len(by_sig[sig]))
            if eh is not None:
                eh.update(header)
            out += header
            out += by_sig[sig]
    if eh is not None:
        payload = struct.pack(">I", offset) + eh.digest()
        out += b"EOIE" + struct.pack(">I", len(payload)) + payload
