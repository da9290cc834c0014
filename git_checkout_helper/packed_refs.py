"""Reading ``packed-refs`` fast: ``refs/packed-backend.c``'s reader, for
:mod:`refs` and for dulwich's refs container.

dulwich's ``DiskRefsContainer`` parses ``packed-refs`` a line at a time and
checks every name with ``check_ref_format``, a Python loop over each byte:
11 ms for git.git's 1,016 refs here, so about 0.5 s for a repository with
50,000 tags, paid by every checkout that looks up a ref that is not loose
(``refs/heads/HEAD``, which ``parse_branchname_arg`` always asks about). git
itself maps the file and bisects it. :func:`read_packed_refs` gets dulwich's
result with one regular expression over the whole file, whose matches,
counted against the file's lines, prove that every line is a ref line, a
peeled line after a ref line or a comment, with names made only of printable
ASCII that ``check_ref_format`` allows; substring searches then find any name
breaking its component rules. A file in which either finds anything
unusual (a name outside ASCII, a bad line) returns None, and dulwich's own
reader decides, with its own verdict and message.
"""

from __future__ import annotations

import os
import re
from binascii import unhexlify

from .hash_algo import is_hex_oid
from .objects import OBJ_TAG, parse_object
from .wrapper import write_locked

__all__ = ["PACKED_REFS_HEADER", "find_packed_ref", "install", "peel_refs", "read_packed_refs", "write_packed_refs"]

#: The header git writes (``PACKED_REFS_HEADER``) and what its traits follow.
PACKED_REFS_PREFIX = b"# pack-refs with:"
PACKED_REFS_HEADER = PACKED_REFS_PREFIX + b" peeled fully-peeled sorted \n"

_HEX = rb"(?:[0-9a-f]{40}|[0-9a-f]{64})"
#: Bytes a name may hold: printable ASCII but space and ``*:?[\\^~`` (``check_ref_format``).
_NAME = rb"refs/[!-)+-9;->@-Z\]_-}]*"
_REF = rb"(" + _HEX + rb") (" + _NAME + rb")\n"
_PEELED = rb"\^(" + _HEX + rb")\n"
_LINES = re.compile(rb"^" + _REF + rb"(?:" + _PEELED + rb")?", re.M)
#: A component rule broken by a name, looked for in the whole file: ``..``,
#: ``@{``, a component that starts with a dot, is empty or ends in ``.lock``,
#: a name that ends in ``/`` or ``.`` (a name ends its line). Each is a plain
#: substring search (one regular expression of them all took 2.6 ms on
#: git.git's 2,025 lines; these take 0.1).
_BAD_NAME = (b"..", b"@{", b"/.", b"//", b".lock/", b".lock\n", b"/\n", b".\n")


def read_packed_refs(data: bytes) -> tuple[dict[bytes, bytes], dict[bytes, bytes], bytes | None] | None:
    """(refs, peeled, scope) of a ``packed-refs`` file's bytes: refs and
    peeled ids as dulwich reads them (the last line of a name wins), and
    the names whose peeling the file records, by prefix (``b""``: every
    ref, ``b"refs/tags/"``; None: no ref's); None when dulwich must decide."""
    if data and not data.endswith(b"\n"):
        data += b"\n"
    found = _LINES.findall(data)
    # Every line is a ref line, a peeled line right after one, or a comment:
    # the lines the matches took and the comments are all the lines there are.
    comments = data.count(b"\n#") + data.startswith(b"#")
    if data.count(b"\n") != comments + len(found) + sum(1 for f in found if f[2]):
        return None
    if any(bad in data for bad in _BAD_NAME):  # (no id holds these bytes; a comment that does only costs the fast path)
        return None
    header = data[: data.find(b"\n")]
    traits = _traits(data)
    with_peeled = header.startswith(b"# pack-refs") and b" peeled" in header
    if not with_peeled and any(peeled for _sha, _name, peeled in found):
        return None  # dulwich refuses peeled lines without the header
    refs = {name: sha for sha, name, _peeled in found}
    peeled = {name: p for _sha, name, p in found if p} if with_peeled else {}
    # packed-backend.c's traits: "fully-peeled" (every ref's peeled id is
    # there when it has one), "peeled" (those of refs/tags/ only).
    scope = b"" if b"fully-peeled" in traits else b"refs/tags/" if b"peeled" in traits else None
    return refs, peeled, scope


def _traits(data: bytes) -> list[bytes]:
    """The traits the header of a ``packed-refs`` file (its bytes) names."""
    if not data.startswith(PACKED_REFS_PREFIX):
        return []
    return data[len(PACKED_REFS_PREFIX):data.find(b"\n")].split()


def find_packed_ref(data: bytes, name: bytes) -> bytes | None:
    """The id ``packed-refs`` (its bytes) holds for ``name``, or None,
    found as ``packed-backend.c`` finds it (``find_reference_location``):
    by bisecting the records of a file whose header says it is sorted, a
    record being a ref line and the peeled line after it. git.git's file
    holds a thousand refs: parsing it whole cost every checkout 2.4 ms.
    ValueError for a file this cannot answer for (no ``sorted`` trait, an
    unterminated last line, a record that is not ``<id> <name>``): the
    whole file is then parsed (:func:`read_packed_refs`)."""
    if b"sorted" not in _traits(data) or not data.endswith(b"\n"):
        raise ValueError("packed-refs not known to be sorted")
    lo, hi = data.find(b"\n") + 1, len(data)
    while lo < hi:
        # find_start_of_record: back to a line start that is not a peeled line.
        rec = data.rfind(b"\n", lo, lo + (hi - lo) // 2) + 1 or lo
        while rec > lo and data[rec] == 0x5E:  # "^"
            rec = data.rfind(b"\n", lo, rec - 1) + 1 or lo
        end = data.index(b"\n", rec)
        sp = data.find(b" ", rec, end)
        if sp == -1 or not is_hex_oid(data[rec:sp]):
            raise ValueError("unexpected line in packed-refs")
        found = data[sp + 1:end]
        if found == name:
            return data[rec:sp]
        if found < name:
            # find_end_of_record: past this line and its peeled line.
            lo = end + 1
            while lo < hi and data[lo] == 0x5E:
                lo = data.index(b"\n", lo) + 1
        else:
            hi = rec
    return None


def write_packed_refs(path: str, refs: dict[bytes, tuple[bytes, bytes | None]], empty_too: bool = False) -> None:
    """A new ``packed-refs`` as ``packed-backend.c``'s ``write_with_updates``
    writes one: git's header (every ref peeled, names sorted), then each ref
    (name: (id, peeled id or None)) in name order, with ``^<peeled id>`` after
    one that names an annotated tag. Nothing when there is no ref, unless
    ``empty_too`` (a clone of a source that has refs of which none is taken:
    git commits its transaction of none, which writes the header)."""
    if refs or empty_too:
        write_locked(path, PACKED_REFS_HEADER + b"".join(
            sha + b" " + name + b"\n" + (b"^" + peeled + b"\n" if peeled else b"")
            for name, (sha, peeled) in sorted(refs.items())))


def install(refs) -> None:
    """Give a dulwich ``DiskRefsContainer`` this reader: its cache of packed
    refs is filled the way its own ``get_packed_refs`` fills it (refs, peeled
    refs, and the file's identity, which tells it when the file was replaced),
    and its own reader still runs for a file this one leaves to it. A dulwich
    without that cache keeps its reader."""
    try:
        from dulwich.refs import _packed_refs_key
    except ImportError:
        return
    if not all(hasattr(refs, a) for a in ("_packed_refs", "_peeled_refs", "_packed_refs_key",
                                            "_current_packed_refs_key", "_invalidate_packed_refs_cache")):
        return
    dulwich_reader = refs.get_packed_refs

    def get_packed_refs():
        if refs._packed_refs is not None and refs._packed_refs_key != refs._current_packed_refs_key():
            refs._invalidate_packed_refs_cache()
        if refs._packed_refs is None:
            try:
                fd = os.open(os.path.join(refs.path, b"packed-refs"), os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return dulwich_reader()  # (its empty answer, cached as it caches it)
            try:
                with os.fdopen(fd, "rb") as f:
                    parsed = read_packed_refs(f.read())
                    key = _packed_refs_key(os.fstat(f.fileno()))
            except OSError:
                return dulwich_reader()
            if parsed is None:
                return dulwich_reader()
            refs._packed_refs, refs._peeled_refs, _scope = parsed
            refs._packed_refs_key = key
        return refs._packed_refs

    refs.get_packed_refs = get_packed_refs


def peel_refs(odb, refs: dict[bytes, bytes],
              known: dict[bytes, bytes | None] | None = None) -> dict[bytes, bytes | None]:
    """``peel_object`` for each ref (name: id), as ``write_with_updates``
    records it: the id its chain of tags ends at, None for a ref that names
    no tag (or an object that cannot be read). A tag's own header says what
    it names, so the end of the chain is never read (a partial clone may
    lack it). What a source's ``packed-refs`` knows (``known``) is taken
    from it. ``odb``: an :class:`odb.ObjectDatabase` holding the objects."""
    algo = odb.git_hash_algo.name
    out: dict[bytes, bytes | None] = {}
    for name, sha in refs.items():
        if known is not None and name in known:
            out[name] = known[name]
            continue
        peeled = None
        try:
            type_num, raw = odb.read_raw(unhexlify(sha))
            while type_num == OBJ_TAG:
                kind, peeled = parse_object(type_num, raw, sha, algo).object
                if kind != b"tag":
                    break
                sha = peeled
                type_num, raw = odb.read_raw(unhexlify(sha))
        except (KeyError, ValueError):
            peeled = None
        out[name] = peeled
    return out
