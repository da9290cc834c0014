"""packreader.PackReader against dulwich's own reads and git's cat-file.

Every object of packs with deep delta chains (OFS_DELTA), with REF_DELTA
entries (``git pack-objects --no-reuse-delta`` without ``--delta-base-offset``),
and of a SHA-256 repository must read back byte-identical.
"""


import pytest
from conftest import git
from dulwich.repo import Repo

from git_checkout_helper.odb import ObjectDatabase
from git_checkout_helper.packreader import PackReader


def make_history(path, object_format="sha1", commits=12):
    git(path.parent, "init", "-q", f"--object-format={object_format}", str(path))
    base = b"".join(b"line %d of a shared text\n" % i for i in range(400))
    for c in range(commits):
        for f in range(6):
            data = base.replace(b"line %d " % (c * 7 + f), b"edit %d " % c) + b"tail %d\n" % c
            (path / f"f{f}.txt").write_bytes(data * (1 + f % 3))
        git(path, "add", "-A")
        git(path, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", f"c{c}")


def all_objects(path):
    out = git(path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return [bytes.fromhex(x.decode()) for x in out.split()]


@pytest.mark.parametrize("object_format,ofs", [("sha1", True), ("sha1", False), ("sha256", True)])
def test_every_object_matches_dulwich(tmp_path, object_format, ofs):
    repo = tmp_path / "r"
    make_history(repo, object_format)
    args = ["repack", "-adf", "--depth=50", "--window=50"]
    git(repo, *args)
    if not ofs:
        # Rewrite the pack with REF_DELTA entries only.
        packs = list((repo / ".git/objects/pack").glob("*.pack"))
        objs = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
        git(repo, "pack-objects", "-q", "--no-reuse-delta", ".git/objects/pack/ref", input=objs)
        for p in packs:
            p.unlink()
            p.with_suffix(".idx").unlink()
    verify = git(repo, "verify-pack", "-v", *[str(p) for p in (repo / ".git/objects/pack").glob("*.idx")])
    assert b"chain length" in verify  # deltas are really there
    oids = all_objects(repo)
    r = Repo(str(repo))
    try:
        packs = list(r.object_store.packs)
        assert len(packs) == 1
        reader = PackReader(packs[0])
        for oid in oids:
            assert reader.get_raw(oid) == r.object_store.get_raw(oid)
        reader.close()
    finally:
        r.close()


def test_odb_reads_blobs_like_cat_file(tmp_path):
    repo = tmp_path / "r"
    make_history(repo, commits=5)
    git(repo, "gc", "-q")
    (repo / "loose.txt").write_bytes(b"a loose object\n")
    loose = bytes.fromhex(git(repo, "hash-object", "-w", "loose.txt").decode().strip())
    odb = ObjectDatabase(str(repo / ".git/objects"))
    try:
        blobs = git(repo, "rev-list", "--objects", "--all").split(b"\n")
        for line in blobs:
            if not line:
                continue
            oid = bytes.fromhex(line.split()[0].decode())
            if git(repo, "cat-file", "-t", oid.hex()).strip() != b"blob":
                continue
            assert odb.read_blob(oid) == git(repo, "cat-file", "blob", oid.hex())
        assert odb.read_blob(loose) == b"a loose object\n"
    finally:
        odb.close()


def test_a_chain_of_large_similar_files_is_not_rebuilt_from_its_start(make_repo, monkeypatch):
    """Files of a few MiB stored as a delta chain, each against the one
    before (as ``git repack`` chains versions of data files): each is built
    from its base kept in the delta base cache, not by applying the whole
    chain again (which makes a checkout quadratic in the chain's length)."""
    import random

    from git_checkout_helper import packreader
    from git_checkout_helper.odb import ObjectDatabase

    repo = make_repo()
    rng = random.Random(7)
    data = bytearray(rng.randbytes(3 << 20))
    for i in range(12):
        pos = rng.randrange(len(data) - 64)
        data[pos:pos + 64] = rng.randbytes(64)
        (repo.path / f"data{i:02d}.bin").write_bytes(bytes(data))
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "data")
    repo.git("repack", "-adfq", "--depth=50", "--window=50")
    blobs = [line.split()[2] for line in repo.git("ls-tree", "HEAD").splitlines()]
    verify = repo.git("verify-pack", "-v", str(next((repo.git_dir / "objects/pack").glob("*.idx"))))
    deltas = sum(1 for line in verify.splitlines() if line.split()[:1] and line.split()[0] in blobs
                 and len(line.split()) >= 7)
    assert deltas >= 10  # git chained them
    applied = []
    real = packreader.apply_delta
    monkeypatch.setattr(packreader, "apply_delta", lambda base, delta: applied.append(1) or real(base, delta))
    odb = ObjectDatabase(str(repo.git_dir / "objects"))
    for sha in blobs:
        assert odb.read_blob(bytes.fromhex(sha.decode())) == repo.git("cat-file", "blob", sha.decode())
    assert len(applied) <= 2 * deltas
