"""The lean item path: the pack index searched on its own mapping (IndexV2),
with git's checks on the index kept.

Every object of real packs (SHA-1 and SHA-256, and an index rewritten with
every offset in the 64-bit table, as git writes for packs over 2 GiB) is
found at dulwich's offset; absent ids are KeyError; corrupt indexes are
refused when opened; a packed checkout never falls back to dulwich; blobs
stored as delta chains are read with git's bytes.
"""

from __future__ import annotations

import struct

import pytest
from conftest import git
from dulwich.repo import Repo

from git_checkout_helper.odb import OBJ_BLOB, ObjectDatabase
from git_checkout_helper.packreader import IndexV2, PackReader


def filled(make_repo, object_format="sha1", files=300):
    repo = make_repo(object_format=object_format)
    for i in range(files):
        (repo.path / f"d{i % 7}").mkdir(exist_ok=True)
        (repo.path / f"d{i % 7}" / f"f{i}").write_bytes(b"content %d\n" % i * (1 + i % 5))
    git(repo.path, "add", "-A", env=repo.env)
    git(repo.path, "commit", "-q", "-m", "c", env=repo.env)
    git(repo.path, "repack", "-adq", env=repo.env)
    return repo


def idx_of(repo):
    return next((repo.git_dir / "objects/pack").glob("*.idx"))


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_every_object_at_dulwichs_offset(make_repo, object_format):
    repo = filled(make_repo, object_format)
    r = Repo(str(repo.path))
    try:
        pack = next(iter(r.object_store.packs))
        ix = IndexV2(str(idx_of(repo)), pack.object_format.oid_length)
        n = 0
        for sha, offset, _crc in pack.index.iterentries():
            assert ix.offset(sha) == offset
            n += 1
        assert n > 300
        for absent in (b"\0" * len(sha), b"\xff" * len(sha), bytes([sha[0]]) + b"\0" * (len(sha) - 1)):
            with pytest.raises(KeyError):
                ix.offset(absent)
        with pytest.raises(ValueError):
            ix.offset(sha[:-1])
        ix.close()
        reader = PackReader(pack)
        assert reader._index is not None  # the lean search is in use
        reader.close()
    finally:
        r.close()


def _large_offset_idx(data: bytes, rawsz: int) -> bytes:
    """The same index with every offset moved to the 64-bit table (as git writes
    for packs over 2 GiB): the same lookups must come out."""
    n = struct.unpack_from(">I", data, 8 + 255 * 4)[0]
    offs = 8 + 1024 + n * (rawsz + 4)
    small = [struct.unpack_from(">I", data, offs + 4 * i)[0] for i in range(n)]
    trailer = data[offs + 4 * n:]
    assert len(trailer) == 2 * rawsz  # no large offsets yet
    new_small = b"".join(struct.pack(">I", 0x80000000 | i) for i in range(n))
    large = b"".join(struct.pack(">Q", o) for o in small)
    return data[:offs] + new_small + large + trailer


def test_large_offset_table(make_repo, tmp_path):
    repo = filled(make_repo)
    idx = idx_of(repo)
    data = idx.read_bytes()
    plain = IndexV2(str(idx), 20)
    crafted = tmp_path / "large.idx"
    crafted.write_bytes(_large_offset_idx(data, 20))
    big = IndexV2(str(crafted), 20)
    n = struct.unpack_from(">I", data, 8 + 255 * 4)[0]
    for i in range(n):
        name = data[8 + 1024 + 20 * i: 8 + 1024 + 20 * (i + 1)]
        assert big.offset(name) == plain.offset(name)
    # a 64-bit entry pointing past its table is refused (git: "bad offset")
    bad = bytearray(crafted.read_bytes())
    offs = 8 + 1024 + n * 24
    struct.pack_into(">I", bad, offs, 0x80000000 | (n + 5))
    crafted.write_bytes(bytes(bad))
    broken = IndexV2(str(crafted), 20)
    first = data[8 + 1024: 8 + 1024 + 20]
    with pytest.raises(ValueError, match="bad offset"):
        broken.offset(first)
    for x in (plain, big, broken):
        x.close()


@pytest.mark.parametrize("damage", ["magic", "version", "fanout", "short"])
def test_corrupt_index_refused_and_dulwich_decides(make_repo, damage):
    repo = filled(make_repo)
    idx = idx_of(repo)
    data = bytearray(idx.read_bytes())
    if damage == "magic":
        data[0] ^= 1
    elif damage == "version":
        data[7] = 3
    elif damage == "fanout":
        struct.pack_into(">I", data, 8 + 4 * 10, 0xFFFF)
    else:
        del data[len(data) - 50:]
    bad = repo.path / "bad.idx"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError):
        IndexV2(str(bad), 20)


def test_odb_finds_every_blob_on_the_lean_path(make_repo, monkeypatch):
    """No blob of a packed checkout falls back to dulwich's lookups."""
    repo = filled(make_repo)
    odb = ObjectDatabase(str(repo.git_dir / "objects"))
    try:
        def no_dulwich(oid):
            raise AssertionError("fell back to dulwich")

        monkeypatch.setattr(odb, "_get_raw", no_dulwich)
        listing = git(repo.path, "ls-tree", "-r", "HEAD", env=repo.env).decode().splitlines()
        for line in listing:
            oid = bytes.fromhex(line.split()[2])
            want = git(repo.path, "cat-file", "blob", oid.hex(), env=repo.env)
            assert odb.read_blob(oid) == want
            assert odb.read_blob_or_stream(oid, 1 << 21) == want
        assert all(type(p) is PackReader and p._index is not None for p in odb._packs)
    finally:
        odb.close()


def test_deltified_blobs_on_the_lean_path(make_repo):
    """Blobs stored as delta chains (each version of a file a delta of the
    next, as ``git repack`` makes them) come out of the pack reader with
    git's bytes, through ``get_raw_or_stream``'s delta path (which reuses
    the entry header it parsed) and through ``get_raw``. Asked of the
    reader itself: the object database would answer a failure there by
    reading the blob again another way."""
    repo = make_repo()
    body = b"".join(b"line %d of a file that changes a little each time\n" % i for i in range(200))
    oids = []
    for v in range(8):
        data = body.replace(b"line %d " % (v * 7), b"LINE %d " % (v * 7)) + b"version %d\n" % v
        (repo.path / "f").write_bytes(data)
        git(repo.path, "add", "f", env=repo.env)
        git(repo.path, "commit", "-q", "-m", f"v{v}", env=repo.env)
        oids.append(git(repo.path, "rev-parse", "HEAD:f", env=repo.env).decode().strip())
    git(repo.path, "repack", "-adfq", "--depth=50", "--window=50", env=repo.env)
    idx = idx_of(repo)
    depth = {}
    for line in git(repo.path, "verify-pack", "-v", str(idx), env=repo.env).decode().splitlines():
        f = line.split()
        if len(f) >= 7 and f[1] == "blob":
            depth[f[0]] = int(f[5])
    assert max(depth.get(o, 0) for o in oids) >= 2  # (the premise: chains, not only whole blobs)
    for read in ("get_raw_or_stream", "get_raw"):
        reader = PackReader(None, base=str(idx.with_suffix("")))
        try:
            for oid in oids:  # the oldest first: the longest chain, nothing of it cached yet
                want = git(repo.path, "cat-file", "blob", oid, env=repo.env)
                args = (bytes.fromhex(oid), 1 << 21) if read == "get_raw_or_stream" else (bytes.fromhex(oid),)
                assert getattr(reader, read)(*args) == (OBJ_BLOB, want)
        finally:
            reader.close()


def _synthetic_idx(names: list[bytes], rawsz: int) -> bytes:
    """A version 2 index of ``names`` (sorted), offset i for the i-th name."""
    fanout = [0] * 256
    for n in names:
        fanout[n[0]] += 1
    for i in range(1, 256):
        fanout[i] += fanout[i - 1]
    return b"".join([b"\377tOc", struct.pack(">I", 2), struct.pack(">256I", *fanout), *names,
                     b"\0" * 4 * len(names), b"".join(struct.pack(">I", 12 + i) for i in range(len(names))),
                     b"\0" * 2 * rawsz])


@pytest.mark.parametrize("rawsz,skew", [(20, False), (32, False), (20, True)])
def test_interpolation_search_on_large_slices(tmp_path, rawsz, skew):
    """Slices of hundreds of names, where the search probes a window first:
    every name is found, every absent id (between, before and after names,
    and ids far from where uniformity puts them) is KeyError."""
    import random

    rng = random.Random(rawsz + skew)
    names = {rng.randbytes(rawsz) for _ in range(120_000)}
    if skew:  # clustered ids: the guess is far off, the fallback must still be right
        names |= {b"\x07" + b"\0" * 3 + rng.randbytes(rawsz - 4) for _ in range(3000)}
    names = sorted(names)
    path = tmp_path / "big.idx"
    path.write_bytes(_synthetic_idx(names, rawsz))
    ix = IndexV2(str(path), rawsz)
    try:
        for i in range(0, len(names), 7):
            assert ix.offset(names[i]) == 12 + i
        for i in range(len(names) - 1, len(names) - 300, -1):
            assert ix.offset(names[i]) == 12 + i
        present = set(names)
        for i in range(0, len(names) - 1, 13):
            a, b = names[i], names[i + 1]
            between = (int.from_bytes(a, "big") + 1).to_bytes(rawsz, "big")
            if between not in present and between < b:
                with pytest.raises(KeyError):
                    ix.offset(between)
        for _ in range(3000):
            absent = rng.randbytes(rawsz)
            if absent not in present:
                with pytest.raises(KeyError):
                    ix.offset(absent)
    finally:
        ix.close()


@pytest.mark.parametrize("rawsz", [20, 32])
def test_scan_ignores_matches_straddling_two_names(tmp_path, rawsz):
    """The last names of a search are scanned as bytes: an id whose bytes run
    across the end of one name and the start of the next is found only where
    it is a name of its own, and is KeyError when it is none."""
    a = b"\x07\x07" + b"\x50" * (rawsz - 2)
    straddler = a[1:] + b"\x07"  # a's tail and the next name's first byte
    b = b"\x07\x60" + b"\x61" * (rawsz - 2)
    assert a < straddler < b
    for names, want in (([a, b], None), ([a, straddler, b], 1)):
        path = tmp_path / f"s{len(names)}.idx"
        path.write_bytes(_synthetic_idx(names, rawsz))
        ix = IndexV2(str(path), rawsz)
        try:
            assert (a + straddler[-1:]).find(straddler) == 1  # the bytes are there, off a name's start
            if want is None:
                with pytest.raises(KeyError):
                    ix.offset(straddler)
            else:
                assert ix.offset(straddler) == 12 + want
            assert ix.offset(a) == 12 and ix.offset(b) == 12 + len(names) - 1
        finally:
            ix.close()


def test_sequential_writes_take_stat_data_from_the_descriptor(make_repo, monkeypatch):
    """The coordinator's own writes (``-j 1``) read each file's stat data
    with ``fstat`` before closing it, as git's ``fstat_checkout_output`` does
    when the path is the entry's own: no second walk of the path by
    ``lstat``; the index then holds what ``git diff-files`` finds clean."""
    import os
    import subprocess

    from git_checkout_helper import entry
    from git_checkout_helper.checkout import checkout

    repo = filled(make_repo, files=40)
    for p in repo.path.glob("d*"):
        subprocess.run(["rm", "-rf", str(p)], check=True)
    (repo.git_dir / "index").unlink()
    calls = {"fstat": 0, "lstat": []}
    real_fstat, real_lstat = os.fstat, os.lstat

    def fstat(fd):
        calls["fstat"] += 1
        return real_fstat(fd)

    def lstat(path, *a, **k):
        calls["lstat"].append(path)
        return real_lstat(path, *a, **k)

    monkeypatch.setattr(entry.os, "fstat", fstat)
    monkeypatch.setattr(entry.os, "lstat", lstat)
    report = checkout(str(repo.path), workers=1, threshold=0, force=True, environ=repo.env)
    monkeypatch.undo()
    written = [p for p in calls["lstat"] if os.fsdecode(p).endswith(tuple(f"/f{i}" for i in range(40)))]
    assert report.written == 40 and calls["fstat"] >= 40 and written == []
    assert subprocess.run(["git", "diff-files", "--quiet"], cwd=repo.path, env=repo.env).returncode == 0
