"""inflate.py: the fast inflater (ISA-L) and its zlib fallback give the same bytes
and the same verdicts, everywhere objects are read.

Every pack entry of a real pack (blobs, trees, commits, OFS and REF deltas)
inflates to what zlib gives; corrupt streams (a flipped byte, a bad Adler-32
trailer, a truncated stream, a size header that lies) are refused by both;
loose objects and streamed blobs go through the same module; without
``isal`` importable, zlib is used; a whole checkout with either inflater
writes the same files and, on a corrupt pack, the same messages and exit
code, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from conftest import git

from git_checkout_helper import inflate
from git_checkout_helper.odb import BlobStream, MissingObject, ObjectDatabase
from git_checkout_helper.packreader import PackReader

BACKENDS = inflate.available()
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(params=["isal", "zlib"])
def backend(request):
    if request.param not in BACKENDS:
        pytest.skip(f"{request.param} is not installed")
    before = inflate.BACKEND
    inflate.use(request.param)
    yield request.param
    inflate.use(before)


def make_history(repo, commits=8):
    """A repository whose pack has delta chains, a large incompressible blob
    and a large compressible one."""
    env = repo.env
    base = b"".join(b"line %d of a shared text\n" % i for i in range(400))
    rnd = __import__("random").Random(7)
    for c in range(commits):
        for f in range(5):
            data = base.replace(b"line %d " % (c * 7 + f), b"edit %d " % c) + b"tail %d\n" % c
            (repo.path / f"f{f}.txt").write_bytes(data * (1 + f % 3))
        git(repo.path, "add", "-A", env=env)
        git(repo.path, "commit", "-q", "-m", f"c{c}", env=env)
    (repo.path / "random.bin").write_bytes(rnd.randbytes(3 << 20))
    (repo.path / "big.txt").write_bytes(base * 800)
    (repo.path / "empty").write_bytes(b"")
    git(repo.path, "add", "-A", env=env)
    git(repo.path, "commit", "-q", "-m", "big", env=env)
    git(repo.path, "repack", "-adfq", "--depth=50", "--window=50", env=env)
    return repo


def entries(pack_path: Path, idx_path: Path, env):
    """(offset, type, size, data start) of every entry, from ``git verify-pack``
    and the pack headers."""
    out = git(pack_path.parent, "verify-pack", "-v", str(idx_path), env=env).decode()
    data = pack_path.read_bytes()
    got = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 5 or len(parts[0]) not in (40, 64):
            continue
        off = int(parts[4])
        pos = off
        c = data[pos]
        type_num, size, shift = (c >> 4) & 7, c & 15, 4
        while c & 0x80:
            pos += 1
            c = data[pos]
            size |= (c & 0x7F) << shift
            shift += 7
        pos += 1
        if type_num == 6:
            while data[pos] & 0x80:
                pos += 1
            pos += 1
        elif type_num == 7:
            pos += len(parts[0]) // 2
        got.append((off, type_num, size, pos))
    return data, got


@pytest.fixture
def history(make_repo):
    return make_history(make_repo())


def pack_files(repo):
    pack = next((repo.git_dir / "objects/pack").glob("*.pack"))
    return pack, pack.with_suffix(".idx")


def test_every_pack_entry_inflates_as_zlib_does(history, backend):
    pack, idx = pack_files(history)
    data, ents = entries(pack, idx, history.env)
    assert any(t in (6, 7) for _, t, _, _ in ents)  # deltas are there
    mv = memoryview(data)
    for _, _, size, pos in ents:
        want = zlib.decompressobj().decompress(data[pos:pos + size + (size >> 2) + 1024], size + 1)
        assert len(want) == size
        assert inflate.inflate(mv, pos, size) == want


def test_stream_longer_than_its_window(backend):
    """A valid stream far longer than its data (a flush after every byte) is
    not taken for a truncated one: the piecewise path finishes it."""
    raw = os.urandom(20_000)
    c = zlib.compressobj()
    stream = b"".join(c.compress(raw[i:i + 1]) + c.flush(zlib.Z_FULL_FLUSH) for i in range(len(raw)))
    stream += c.flush() + b"next entry"
    assert len(stream) > len(raw) * 2
    assert inflate.inflate(memoryview(stream), 0, len(raw)) == raw


def _corruptions():
    text = b"".join(b"row %d of some text to compress\n" % i for i in range(3000))
    good = zlib.compress(text)
    yield "flipped body byte", good[:len(good) // 2] + bytes([good[len(good) // 2] ^ 0xFF]) + good[len(good) // 2 + 1:], len(text)
    yield "bad checksum", good[:-1] + bytes([good[-1] ^ 1]), len(text)
    yield "truncated", good[:-7], len(text)
    yield "size too large", good, len(text) + 1
    yield "size too small", good, len(text) - 1
    yield "not zlib", b"\x00" * 64, 10
    yield "empty input", b"", 5


@pytest.mark.parametrize("what,stream,size", list(_corruptions()), ids=[c[0] for c in _corruptions()])
def test_corrupt_streams_are_refused_by_both(what, stream, size, backend):
    with pytest.raises((ValueError, *inflate.ERRORS)):
        inflate.inflate(memoryview(stream), 0, size)
    # and the incremental path refuses it too
    d = inflate.decompressobj()
    from git_checkout_helper.packreader import inflate_in_pieces

    with pytest.raises((ValueError, *inflate.ERRORS)):
        list(inflate_in_pieces(d, iter([stream[i:i + 100] for i in range(0, len(stream), 100)]), size, piece=1000))


def test_pack_reads_and_streams_match_git(history, backend):
    odb = ObjectDatabase(str(history.git_dir / "objects"))
    try:
        listing = git(history.path, "ls-tree", "-r", "HEAD", env=history.env).decode().splitlines()
        for line in listing:
            oid = bytes.fromhex(line.split()[2])
            want = git(history.path, "cat-file", "blob", oid.hex(), env=history.env)
            assert odb.read_blob(oid) == want
            got = odb.read_blob_or_stream(oid, 1000)
            if isinstance(got, BlobStream):
                pieces = list(got)
                assert all(len(p) <= 1 << 20 for p in pieces)
                got = b"".join(pieces)
            assert got == want
    finally:
        odb.close()


def test_every_object_matches_dulwich(history, backend):
    from dulwich.repo import Repo

    oids = git(history.path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)",
               env=history.env).split()
    r = Repo(str(history.path))
    try:
        reader = PackReader(next(iter(r.object_store.packs)))
        for oid in oids:
            oid = bytes.fromhex(oid.decode())
            assert reader.get_raw(oid) == r.object_store.get_raw(oid)
        reader.close()
    finally:
        r.close()


def test_loose_objects(make_repo, backend):
    repo = make_repo()
    small = b"a small loose blob\n"
    large = os.urandom(1 << 16) * 40  # compressible enough, streamed above the limit
    oids = [repo.blob(small), repo.blob(large)]
    (repo.path / "a").write_bytes(small)
    git(repo.path, "add", "a", env=repo.env)
    tree = bytes.fromhex(git(repo.path, "write-tree", env=repo.env).decode().strip())
    odb = ObjectDatabase(str(repo.git_dir / "objects"))
    try:
        assert odb.read_blob(oids[0]) == small
        assert odb.read_blob(oids[1]) == large
        stream = odb.read_blob_or_stream(oids[1], 1000)
        assert isinstance(stream, BlobStream) and stream.size == len(large)
        assert b"".join(stream) == large
        type_num, raw = odb.read_raw(tree)
        assert type_num == 2 and raw == git(repo.path, "cat-file", "tree", tree.hex(), env=repo.env)
        with pytest.raises(MissingObject):
            odb.read_blob(tree)  # a tree is not a blob
    finally:
        odb.close()


def _corrupt_loose(repo, oid: bytes, how: str) -> None:
    path = repo.git_dir / "objects" / oid.hex()[:2] / oid.hex()[2:]
    data = bytearray(path.read_bytes())
    path.chmod(0o644)
    if how == "truncate":
        data = data[: len(data) - 9]
    else:
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_corrupt_loose_objects_are_missing(make_repo, backend, how):
    repo = make_repo()
    big = b"".join(b"line %d\n" % i for i in range(200_000))
    oid = repo.blob(big)
    _corrupt_loose(repo, oid, how)
    odb = ObjectDatabase(str(repo.git_dir / "objects"))
    try:
        with pytest.raises(MissingObject):
            odb.read_blob(oid)
        with pytest.raises(MissingObject):
            got = odb.read_blob_or_stream(oid, 1000)
            b"".join(got)
    finally:
        odb.close()


def test_corrupt_pack_entry_is_missing_object(history, backend):
    pack, idx = pack_files(history)
    data, ents = entries(pack, idx, history.env)
    oid = bytes.fromhex(git(history.path, "rev-parse", "HEAD:big.txt", env=history.env).decode().strip())
    off = int(git(history.path, "show-index", input=idx.read_bytes(), env=history.env).decode().split(
        oid.hex())[0].split()[-1])
    pos = next(p for o, _, _, p in ents if o == off)
    pack.chmod(0o644)
    b = bytearray(data)
    b[pos + 40] ^= 0xFF
    pack.write_bytes(bytes(b))
    odb = ObjectDatabase(str(history.git_dir / "objects"))
    try:
        with pytest.raises(MissingObject):
            odb.read_blob(oid)
        with pytest.raises(MissingObject):
            b"".join(odb.read_blob_or_stream(oid, 1000))
    finally:
        odb.close()


def test_zlib_when_isal_cannot_be_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "isal", None)  # import isal -> ImportError
    try:
        importlib.reload(inflate)
        assert inflate.BACKEND == "zlib"
        assert inflate.available() == ["zlib"]
        assert inflate.ERRORS == (zlib.error,)
        with pytest.raises(ValueError, match="not available"):
            inflate.use("isal")
        raw = b"some text\n" * 100
        assert inflate.inflate(memoryview(zlib.compress(raw)), 0, len(raw)) == raw
    finally:
        monkeypatch.undo()
        importlib.reload(inflate)
    assert inflate.BACKEND == BACKENDS[0]


# -- the CLI layer: GIT_CHECKOUT_HELPER_INFLATE, whole checkouts with each inflater --

def _ours(repo, *args, inflater=None):
    env = dict(repo.env)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env["PATH"]])
    if inflater:
        env["GIT_CHECKOUT_HELPER_INFLATE"] = inflater
    return subprocess.run([sys.executable, "-m", "git_checkout_helper", "parallel-checkout", *args], cwd=repo.path,
                          env=env, capture_output=True)


def _worktree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(path).parts}


def _fresh(repo):
    for p in repo.path.iterdir():
        if p.name != ".git":
            p.unlink()
    (repo.git_dir / "index").unlink(missing_ok=True)


def test_main_module_runs_checkout(history):
    p = _ours(history, "-h")
    assert p.returncode == 129, p.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_checkout_same_with_either_inflater(history, jobs):
    want = _worktree(history.path)
    results = {}
    for inflater in BACKENDS:
        _fresh(history)
        p = _ours(history, "-j", jobs, "--threshold", "0", "-f", "HEAD", inflater=inflater)
        assert p.returncode == 0, p.stderr
        assert _worktree(history.path) == want
        assert git(history.path, "status", "--porcelain", env=history.env) == b""
        results[inflater] = p.stderr
    assert len(set(results.values())) == 1


def test_unknown_inflater_is_fatal(history):
    p = _ours(history, "-f", "HEAD", inflater="gzip")
    assert p.returncode == 128
    assert p.stderr.decode().startswith("fatal: GIT_CHECKOUT_HELPER_INFLATE: inflater 'gzip' is not available")
    assert p.stderr.count(b"\n") == 1


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_corrupt_pack_same_verdict_with_either_inflater(history, jobs):
    pack, idx = pack_files(history)
    data, ents = entries(pack, idx, history.env)
    oid = git(history.path, "rev-parse", "HEAD:f3.txt", env=history.env).decode().strip()
    off = int(git(history.path, "show-index", input=idx.read_bytes(), env=history.env).decode().split(
        oid)[0].split()[-1])
    pos = next(p for o, _, _, p in ents if o == off)
    pack.chmod(0o644)
    b = bytearray(data)
    b[pos + 3] ^= 0xFF
    pack.write_bytes(bytes(b))
    seen = set()
    for inflater in BACKENDS:
        _fresh(history)
        p = _ours(history, "-j", jobs, "--threshold", "0", "-f", "HEAD", inflater=inflater)
        assert p.returncode != 0
        assert b"Traceback" not in p.stderr and b"internal error" not in p.stderr, p.stderr
        assert f"cannot read object {oid} 'f3.txt'".encode() in p.stderr
        seen.add((p.returncode, p.stderr))
    assert len(seen) == 1


def test_each_isal_inflate_clears_the_vector_registers_upper_halves(backend, monkeypatch):
    """After each ISA-L call ``inflate`` runs ``vzeroupper`` (the module's
    text: ISA-L leaves the registers dirty, and the code after it runs
    slower); zlib's calls need nothing. The bytes are the same either way."""
    calls = []
    if backend == "isal":
        monkeypatch.setattr(inflate, "_clear_upper", lambda: calls.append(1))
    data = b"some text\n" * 100
    z = zlib.compress(data)
    for _ in range(3):
        assert inflate.inflate(memoryview(z + b"trailing"), 0, len(data)) == data
    assert len(calls) == (3 if backend == "isal" else 0)
    if backend == "zlib":
        assert inflate._clear_upper is None


def test_the_upper_clearer_is_made_only_where_it_can_run(monkeypatch):
    """Made on x86-64 with AVX and an executable page, and harmless to run
    there; None on another machine, without AVX (the instruction would
    fault), or when no executable page may be mapped."""
    import mmap

    here = os.uname().machine in ("x86_64", "AMD64") and b"avx" in inflate._cpu_flags()
    made = inflate._upper_clearer()
    assert (made is not None) == here
    if made is not None:
        made()  # (runs: the instruction exists here)
    monkeypatch.setattr(inflate, "_cpu_flags", lambda: [b"fpu", b"sse2"])
    assert inflate._upper_clearer() is None
    monkeypatch.setattr(inflate, "_cpu_flags", lambda: [b"fpu", b"avx", b"avx2"])

    class Uname:
        machine = "aarch64"

    with monkeypatch.context() as m:
        m.setattr(os, "uname", lambda: Uname())
        assert inflate._upper_clearer() is None

    def denied(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(mmap, "mmap", denied)
    assert inflate._upper_clearer() is None
