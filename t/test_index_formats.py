"""Every index git writes, read and written back as git would.

Round trip: indexes made by git in every mode, parsed and serialized
unchanged, are byte-identical. Fail closed: indexes we cannot keep are
refused (exit 128) with nothing touched. Twins: the same repository made
twice, ``git checkout`` in one, ours in the other, for each index format x
operation; the entries, index version, extension signatures (and the split
index's own entries and bitmaps) read from the files, ``git status``,
``git diff-files`` and ``git write-tree`` must agree.
"""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, isolated_git_env, run_git

from git_checkout_helper import index_file
from git_checkout_helper.ewah import EwahBuilder, ewah_bits, ewah_read
from git_checkout_helper.index_file import decode_varint, encode_varint, parse_index, serialize_index_file

PY = sys.executable
OURS = [PY, "-m", "git_checkout_helper"]


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = master\n[user]\n\tname = A\n\temail = a@b\n")
    return isolated_git_env(home)


def run(cmd, cwd, env, check=True):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    if check and p.returncode:
        raise AssertionError(f"{cmd} failed {p.returncode}: {p.stderr.decode()}")
    return p


MODES = {
    "v2": [],
    "v3": [["!", "echo i > ita"], ["add", "-N", "ita"], ["update-index", "--skip-worktree", "b/f2"]],
    "v4": [["update-index", "--index-version", "4"]],
    "split": [["update-index", "--split-index"]],
    "split-v4": [["update-index", "--index-version", "4"], ["update-index", "--split-index"]],
    "split-config": [["config", "core.splitIndex", "true"], ["status"]],
    "split-0pct": [["config", "splitIndex.maxPercentChange", "0"], ["update-index", "--split-index"]],
    "split-100pct": [["config", "splitIndex.maxPercentChange", "100"], ["update-index", "--split-index"]],
    "untracked-cache": [["config", "core.untrackedCache", "true"], ["!", "echo u > untracked1; mkdir ud; echo u > ud/x"],
                        ["status", "-uall"]],
    "many-files": [["config", "feature.manyFiles", "true"], ["!", "rm .git/index"], ["reset", "-q"],
                   ["!", "echo u > untracked1"], ["status"]],
    "fsmonitor": [["!", "printf '#!/bin/sh\\nprintf \"token\\\\0/\\\\0\"\\n' > .git/fsm-hook; chmod +x .git/fsm-hook; "
                         "git config core.fsmonitor \"$PWD/.git/fsm-hook\""], ["status"]],
    "sparse-index": [["sparse-checkout", "set", "--cone", "--sparse-index", "a"]],
    "threads": [["config", "index.threads", "2"], ["config", "index.recordOffsetTable", "true"],
                ["config", "index.recordEndOfIndexEntries", "true"], ["update-index", "--index-version", "4"]],
}


def setup(path: Path, env, mode: str) -> None:
    """The twins' repository: three directories, branches near and far."""
    git(path.parent, "init", "-q", path.name, env=env)
    for d in "abc":
        (path / d / "sub").mkdir(parents=True)
        for i in range(1, 7):
            (path / d / f"f{i}").write_text(f"{d} {i}\n")
            (path / d / "sub" / f"g{i}").write_text(f"{d} s {i}\n")
    (path / "top").write_text("top\n")
    git(path, "add", ".", env=env)
    git(path, "commit", "-qm", "one", env=env)
    git(path, "checkout", "-qb", "far", env=env)
    for i in range(1, 7):
        (path / "a" / f"f{i}").write_text(f"far {i}\n")
        with open(path / "b" / "sub" / f"g{i}", "a") as f:
            f.write("x\n")
    git(path, "rm", "-q", "c/f1", env=env)
    (path / "c" / "new").write_text("new\n")
    git(path, "add", ".", env=env)
    git(path, "commit", "-qm", "far", env=env)
    git(path, "checkout", "-q", "master", env=env)
    git(path, "checkout", "-qb", "near", env=env)
    (path / "a" / "f1").write_text("near\n")
    git(path, "commit", "-qam", "near", env=env)
    git(path, "checkout", "-q", "master", env=env)
    # No racily clean entry: which entries a split index keeps depends on it.
    old = 1577836800
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".git"]
        for f in files:
            os.utime(os.path.join(root, f), (old, old))
    git(path, "update-index", "-q", "--refresh", env=env)
    for step in MODES[mode]:
        if step[0] == "!":
            run(["sh", "-c", step[1]], path, env)
        else:
            git(path, *step, env=env)


def index_view(path: Path) -> list:
    """What the files say: header, extension signatures, the split part's
    own entries (names, modes, ids, flags) and bitmaps, TREE and REUC bytes."""
    data = (path / ".git" / "index").read_bytes()
    idx = parse_index(data)
    out = [idx.version, [s for s, _ in idx.extensions],
           [(e.name, e.mode, e.oid, e.flags, e.extended_flags) for e in idx.entries]]
    link = idx.extension(b"link")
    if link is not None and len(link) > 20:
        _, words, _, used = ewah_read(link[20:])
        out.append(("delete", ewah_bits(words)))
        _, words, _, _ = ewah_read(link[20:], used)
        out.append(("replace", ewah_bits(words)))
    for sig in (b"TREE", b"REUC"):
        if idx.extension(sig) is not None:
            out.append((sig, idx.extension(sig)))
    return out


def state(path: Path, env) -> list:
    view = index_view(path)  # before git status rewrites the index
    shared = sorted(n for n in os.listdir(path / ".git") if n.startswith("sharedindex."))
    return [
        view, len(shared),
        git(path, "ls-files", "-s", env=env).decode(),
        git(path, "ls-files", "-t", env=env).decode(),
        git(path, "status", "--porcelain", "-uall", env=env).decode(),
        run_git(path, "diff-files", "--quiet", env=env, check=False).returncode,
        git(path, "write-tree", env=env).decode(),
        sorted((str(p.relative_to(path)), p.read_bytes()) for p in path.rglob("*")
               if p.is_file() and ".git" not in p.parts),
    ]


OPS = {
    # name: (git's command, ours, a step before both)
    "switch": (["checkout", "-q", "near"], ["parallel-checkout", "-q", "near"], None),
    "far-switch": (["checkout", "-q", "far"], ["parallel-checkout", "-q", "far"], None),
    "force": (["checkout", "-q", "-f", "far"], ["parallel-checkout", "-q", "-f", "far"], "echo dirty > a/f3"),
    "restore-paths": (["checkout", "far", "--", "a", "b/sub"], ["parallel-checkout", "far", "--", "a", "b/sub"], None),
    "all": (["checkout-index", "-u", "-a"], ["parallel-checkout", "--all", "-u"], "rm a/f2"),
    "nothing": (["checkout", "-q", "master"], ["parallel-checkout", "-q", "master"], None),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("mode", list(MODES))
def test_twin_formats_and_operations(tmp_path, env, mode, op):
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    setup(theirs, env, mode)
    setup(ours, env, mode)
    gcmd, ocmd, before = OPS[op]
    if before:
        run(["sh", "-c", before], theirs, env)
        run(["sh", "-c", before], ours, env)
    g = run_git(theirs, *gcmd, env=env, check=False)
    o = run([*OURS, *ocmd], ours, env, check=False)
    assert (o.returncode, o.stdout) == (g.returncode, g.stdout), o.stderr
    assert state(ours, env) == state(theirs, env)


@pytest.mark.parametrize("mode", ["v2", "split", "many-files", "sparse-index"])
def test_twin_clone(tmp_path, env, mode):
    """``sparse-index``: ``clone --sparse`` with ``index.sparse``, whose
    checkout still writes a full index."""
    src = tmp_path / "src"
    setup(src, env, "v2")
    cfg = {"split": ["-c", "core.splitIndex=true"], "many-files": ["-c", "feature.manyFiles=true"],
           "sparse-index": ["-c", "index.sparse=true"]}.get(mode, [])
    args = ["--sparse"] if mode == "sparse-index" else []
    env = dict(env)
    # Settings for the new repository as a user's own configuration.
    gc = Path(env["HOME"]) / ".gitconfig"
    if cfg:
        key, val = cfg[1].split("=")
        section, name = key.split(".")
        gc.write_text(gc.read_text() + f"[{section}]\n\t{name} = {val}\n")
    run_git(tmp_path, "clone", "-q", *args, str(src), "theirs", env=env)
    run([*OURS, "parallel-clone", "-q", *args, str(src), "ours"], tmp_path, env)
    assert state(tmp_path / "ours", env) == state(tmp_path / "theirs", env)


# -- round trip ---------------------------------------------------------------

ROUND_TRIP_MODES = list(MODES) + ["reuc", "fsmonitor-hook", "sha256"]


def _make_for_round_trip(tmp_path, env, mode) -> Path:
    path = tmp_path / "r"
    if mode == "sha256":
        git(tmp_path, "init", "-q", "--object-format=sha256", "r", env=env)
        (path / "f").write_text("x\n")
        git(path, "add", "f", env=env)
        git(path, "commit", "-qm", "1", env=env)
        git(path, "update-index", "--split-index", env=env)
        return path
    setup(path, env, mode if mode in MODES else "v2")
    if mode == "reuc":
        git(path, "checkout", "-qb", "x", "near", env=env)
        (path / "a" / "f1").write_text("x\n")
        git(path, "commit", "-qam", "x", env=env)
        run_git(path, "merge", "far", env=env, check=False)
        (path / "a" / "f1").write_text("resolved\n")
        git(path, "add", "a", env=env)
    if mode == "fsmonitor-hook":
        hook = path / "fsm-hook"
        hook.write_text("#!/bin/sh\nprintf 'token\\0/\\0'\n")
        hook.chmod(0o755)
        git(path, "config", "core.fsmonitor", str(hook), env=env)
        git(path, "status", env=env)
    return path


def _round_trip(path: Path, rawsz: int) -> set[bytes]:
    """Every index file of ``path`` read and written again byte for byte;
    the extensions they had."""
    gitdir = path / ".git"
    files = [gitdir / "index"] + sorted(gitdir.glob("sharedindex.*"))
    sigs = set()
    for f in files:
        data = f.read_bytes()
        idx = parse_index(data, rawsz)
        sigs.update(s for s, _ in idx.extensions)
        ieot = idx.extension(b"IEOT")
        blocks = (len(ieot) - 4) // 8 if ieot else 0
        again = serialize_index_file(idx.version, idx.entries, idx.extensions, rawsz, blocks,
                                     idx.extension(b"EOIE") is not None)
        assert again == data, f.name
    return sigs


@pytest.mark.parametrize("mode", ROUND_TRIP_MODES)
def test_round_trip_byte_identical(tmp_path, env, mode):
    path = _make_for_round_trip(tmp_path, env, mode)
    sigs = _round_trip(path, 32 if mode == "sha256" else 20)
    expected = {"split": b"link", "split-v4": b"link", "sha256": b"link", "untracked-cache": b"UNTR",
                "many-files": b"UNTR", "threads": b"IEOT", "reuc": b"REUC", "fsmonitor": b"FSMN",
                "fsmonitor-hook": b"FSMN", "sparse-index": b"sdir"}.get(mode)
    if expected:
        assert expected in sigs
    if mode == "threads":
        assert b"EOIE" in sigs


@pytest.mark.parametrize("mode", ["threads", "v4", "split"])
def test_round_trip_in_small_chunks(tmp_path, env, mode, monkeypatch):
    """Handed out a few entries at a time, the index is still git's byte
    for byte: its hash, and the offsets its IEOT and EOIE record, count the
    chunks already handed out."""
    path = _make_for_round_trip(tmp_path, env, mode)
    monkeypatch.setattr(index_file, "CHUNK_SIZE", 100)
    idx = max((parse_index(f.read_bytes()) for f in (path / ".git").glob("*index*")), key=lambda i: len(i.entries))
    assert len(list(index_file.index_file_chunks(idx.version, idx.entries, idx.extensions))) > 3
    _round_trip(path, 20)


def test_varint_as_git():
    for v in (0, 1, 127, 128, 255, 16511, 16512, 1 << 20, (1 << 40) + 5):
        enc = encode_varint(v)
        assert decode_varint(enc, 0) == (v, len(enc))
    assert encode_varint(128) == b"\x80\x00"  # git's offset encoding, not LEB128


def test_ewah_positions_round_trip():
    import random

    rnd = random.Random(7)
    for n in (0, 1, 63, 64, 65, 200, 5000):
        positions = sorted(rnd.sample(range(n * 3 + 1), n)) if n else []
        positions += list(range(positions[-1] + 1 if positions else 0, (positions[-1] if positions else 0) + 300))
        b = EwahBuilder()
        for p in positions:
            b.set(p)
        _, words, _, used = ewah_read(b.serialize())
        assert ewah_bits(words) == positions
        assert used == len(b.serialize())


# -- fail closed --------------------------------------------------------------


def _sealed(body: bytes) -> bytes:
    return body + hashlib.sha1(body).digest()


def _with_extension(index: bytes, sig: bytes, payload: bytes) -> bytes:
    return _sealed(index[:-20] + sig + struct.pack(">I", len(payload)) + payload)


def _refused(path: Path, env, expect: str, *args: str) -> None:
    before_index = (path / ".git" / "index").read_bytes()
    before_files = sorted((str(p), p.read_bytes()) for p in path.rglob("*") if p.is_file() and ".git" not in p.parts)
    head = (path / ".git" / "HEAD").read_bytes()
    p = run([*OURS, "parallel-checkout", *(args or ("far",))], path, env, check=False)
    assert p.returncode == 128, p.stderr
    assert expect in p.stderr.decode()
    assert p.stderr.decode().rstrip("\n").split("\n")[-1].startswith("fatal: ")
    assert (path / ".git" / "index").read_bytes() == before_index
    assert not (path / ".git" / "index.lock").exists()
    assert (path / ".git" / "HEAD").read_bytes() == head
    assert sorted((str(p), p.read_bytes()) for p in path.rglob("*")
                  if p.is_file() and ".git" not in p.parts) == before_files


@pytest.mark.parametrize("args", [(), ("-f", "far"), ("--all", "-f"), ("far", "--", "a")])
def test_refuses_unknown_required_extension(tmp_path, env, args):
    path = tmp_path / "r"
    setup(path, env, "v2")
    ix = path / ".git" / "index"
    ix.write_bytes(_with_extension(ix.read_bytes(), b"abcd", b"zz"))
    _refused(path, env, "error: index uses abcd extension, which we do not understand", *args)
    # git itself refuses it the same way
    p = run_git(path, "status", env=env, check=False)
    assert p.returncode == 128 and "abcd extension" in p.stderr.decode()


def test_ignores_unknown_optional_extension_like_git(tmp_path, env):
    path = tmp_path / "r"
    setup(path, env, "v2")
    ix = path / ".git" / "index"
    ix.write_bytes(_with_extension(ix.read_bytes(), b"ZZZZ", b"zz"))
    p = run([*OURS, "parallel-checkout", "-q", "far"], path, env)
    assert "ignoring ZZZZ extension" in p.stderr.decode()
    assert b"ZZZZ" not in ix.read_bytes()  # git does not write it back either
    assert run_git(path, "diff-files", "--quiet", env=env, check=False).returncode == 0


def test_refuses_bad_version_and_truncation(tmp_path, env):
    path = tmp_path / "r"
    setup(path, env, "v2")
    ix = path / ".git" / "index"
    good = ix.read_bytes()
    ix.write_bytes(_sealed(good[:4] + struct.pack(">I", 5) + good[8:-20]))
    _refused(path, env, "error: bad index version 5")
    ix.write_bytes(good[:40])
    _refused(path, env, "fatal: index file corrupt")


def _flip_last_hash_byte(path: Path) -> None:
    ix = path / ".git" / "index"
    data = ix.read_bytes()
    ix.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))


def _flip_shared_byte_before_hash(path: Path) -> None:
    (shared,) = (path / ".git").glob("sharedindex.*")
    data = shared.read_bytes()
    shared.write_bytes(data[:-21] + bytes([data[-21] ^ 1]) + data[-20:])


@pytest.mark.parametrize("mode, damage", [("v2", _flip_last_hash_byte), ("split", _flip_shared_byte_before_hash)])
def test_an_index_whose_hash_does_not_match_is_read_as_git_reads_it(tmp_path, env, mode, damage):
    """git checks an index's trailing hash only for fsck (verify_hdr's
    verify_index_checksum): a switch reads the index as it is, and writes
    it back with a hash of its own."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for path in (theirs, ours):
        setup(path, env, mode)
        damage(path)
    g = run_git(theirs, "checkout", "-q", "far", env=env, check=False)
    o = run([*OURS, "parallel-checkout", "-q", "far"], ours, env, check=False)
    assert (o.returncode, o.stdout, o.stderr) == (g.returncode, g.stdout, g.stderr) == (0, b"", b"")
    assert state(ours, env) == state(theirs, env)


def test_zero_trailing_hash_is_read(tmp_path, env):
    """index.skipHash (git 2.40+) writes a zero hash; it is not a mismatch."""
    path = tmp_path / "r"
    setup(path, env, "v2")
    ix = path / ".git" / "index"
    ix.write_bytes(ix.read_bytes()[:-20] + b"\0" * 20)
    run([*OURS, "parallel-checkout", "-q", "far"], path, env)
    assert run_git(path, "diff-files", "--quiet", env=env, check=False).returncode == 0


def test_index_skiphash_writes_a_zero_trailer(tmp_path, env):
    path = tmp_path / "r"
    setup(path, env, "v2")
    git(path, "config", "index.skipHash", "true", env=env)
    run([*OURS, "parallel-checkout", "-q", "far"], path, env)
    assert (path / ".git" / "index").read_bytes()[-20:] == b"\0" * 20
    assert git(path, "status", "--porcelain", env=env).decode() == ""


def test_refuses_missing_or_corrupt_shared_index(tmp_path, env):
    path = tmp_path / "r"
    setup(path, env, "split")
    (shared,) = (path / ".git").glob("sharedindex.*")
    data = shared.read_bytes()
    shared.unlink()
    _refused(path, env, "index file open failed: No such file or directory")
    shared.write_bytes(_sealed(data[:-20] + b"TREE\0\0\0\0"))
    _refused(path, env, "fatal: broken index, expect")


def test_split_index_is_never_destroyed(tmp_path, env):
    """The split index read before: every entry survives a switch whose
    files do not change (it used to come back as one nameless entry)."""
    path = tmp_path / "r"
    setup(path, env, "split")
    git(path, "checkout", "-qb", "same", env=env)
    run([*OURS, "parallel-checkout", "-q", "master"], path, env)
    assert len(git(path, "ls-files", "-s", env=env).decode().splitlines()) == 37
    assert git(path, "status", "--porcelain", env=env).decode() == ""
    assert (git(path, "write-tree", env=env).decode()
            == git(path, "rev-parse", "master^{tree}", env=env).decode())


@pytest.mark.parametrize("mode", ["split", "split-v4", "untracked-cache", "threads"])
def test_twin_far_switch_with_helpers(tmp_path, env, mode):
    """The same with two helper processes writing the files."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    setup(theirs, env, mode)
    setup(ours, env, mode)
    git(theirs, "checkout", "-q", "far", env=env)
    run([*OURS, "parallel-checkout", "-q", "far"], ours, dict(env, GIT_TEST_CHECKOUT_WORKERS="2"))
    assert state(ours, env) == state(theirs, env)


@pytest.mark.parametrize("ours_cmd,git_cmd", [
    (["parallel-checkout", "--all", "-u"], ["checkout-index", "-u", "-a"]),
    (["parallel-checkout", "--", "a/f2"], ["checkout", "--", "a/f2"]),
    (["parallel-checkout", "-q", "-f", "far"], ["checkout", "-q", "-f", "far"]),
])
def test_unmerged_entries_kept_or_dropped_as_git(tmp_path, env, ours_cmd, git_cmd):
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for p in (theirs, ours):
        setup(p, env, "v2")
        git(p, "checkout", "-qb", "x", "near", env=env)
        (p / "a" / "f1").write_text("x\n")
        git(p, "commit", "-qam", "x", env=env)
        run_git(p, "merge", "far", env=env, check=False)
        assert "a/f1" in git(p, "ls-files", "-u", env=env).decode()
    run_git(theirs, *git_cmd, env=env, check=False)
    run([*OURS, *ours_cmd], ours, env, check=False)
    assert git(ours, "ls-files", "-s", env=env).decode() == git(theirs, "ls-files", "-s", env=env).decode()
    assert (git(ours, "status", "--porcelain", env=env).decode()
            == git(theirs, "status", "--porcelain", env=env).decode())


def test_lock_commit_of_chunks_that_fail_keeps_the_old_index(tmp_path):
    """The index is written as its chunks come: one that cannot be made
    (a split index's shared index gone, say) leaves no ``index.lock``
    and the old index as it was; chunks that all come are the new index."""
    from git_checkout_helper.index import IndexLock

    index = tmp_path / "index"
    index.write_bytes(b"old")

    def failing():
        yield b"new, "
        raise RuntimeError("no shared index")

    lock = IndexLock(str(index))
    with pytest.raises(RuntimeError):
        lock.commit(failing())
    assert index.read_bytes() == b"old"
    assert not (tmp_path / "index.lock").exists()
    lock = IndexLock(str(index))  # (not left locked)
    lock.commit(iter([b"new, ", b"in ", b"chunks"]))
    assert index.read_bytes() == b"new, in chunks"
    assert not (tmp_path / "index.lock").exists()


def test_entries_keep_their_stat_data_packed():
    """Memory: an entry's stat data are one packed bytes object (read from an
    index by slices, filled from a helper's results as they came), read by
    the fields' names; its mode is one int object for all equal modes. Nine
    int attributes, about six int objects an entry, were a sixth of the
    coordinator's peak at 100,000 files."""
    from git_checkout_helper.index import STAT_DATA, Entry
    from git_checkout_helper.workers import Results

    records = [(1_700_000_000 + i // 50, 1000 + i, 1_700_000_000 + i // 50, 2000 + i, 2049, 5000 + i, 0, 0, 300 + i)
               for i in range(100)]
    results = Results(100)
    for i, r in enumerate(records):
        results.save(i, 1, r)
    written = [Entry(b"f%03d" % i, 0o100644, bytes(20)) for i in range(100)]
    for e, sd in zip(written, results.all_stat_data(), strict=True):
        e.fill_stat_data(sd)
    data = serialize_index_file(2, written, [])
    read = parse_index(data).entries
    for entries in (written, read):
        assert [(e.ctime_s, e.ctime_ns, e.mtime_s, e.mtime_ns, e.dev, e.ino, e.uid, e.gid, e.size)
                for e in entries] == records
        assert all(type(e.sd) is bytes and STAT_DATA.unpack(e.sd) == r for e, r in zip(entries, records, strict=True))
    assert all(e.uptodate for e in written) and not any(e.uptodate for e in read)
    assert len({id(e.mode) for e in read}) == 1
    read[0].smudge()
    assert read[0].size == 0 and read[0].mtime_s == records[0][2]


def test_an_entry_keeps_its_flags_in_one_word():
    """An entry is six slots (80 bytes; eight were 96): its on-disk flags
    and extended flags share one word, laid out as git's in-core
    ``ce_flags`` (CE_SKIP_WORKTREE 1 << 30, CE_INTENT_TO_ADD 1 << 29), each
    distinct word one int object; a split index's position (``base``) only
    on a :class:`index.SharedEntry`, kept by a copy."""
    from git_checkout_helper.index import Entry, SharedEntry
    from git_checkout_helper.index_file import CE_INTENT_TO_ADD, CE_SKIP_WORKTREE, CE_VALID

    e = Entry(b"a", 0o100644, bytes(20))
    assert sys.getsizeof(e) <= 80 and e.ce_flags == 0 and e.base == 0
    e.extended_flags = CE_SKIP_WORKTREE
    e.flags = CE_VALID | 0x1000
    assert e.ce_flags == 1 << 30 | 0x8000 | 0x1000
    assert (e.flags, e.extended_flags) == (CE_VALID | 0x1000, CE_SKIP_WORKTREE)
    e.extended_flags |= CE_INTENT_TO_ADD
    e.flags = 0
    assert e.ce_flags == 1 << 30 | 1 << 29 and e.extended_flags == CE_SKIP_WORKTREE | CE_INTENT_TO_ADD
    f = Entry(b"b", 0o100644, bytes(20), flags=0, extended_flags=CE_SKIP_WORKTREE | CE_INTENT_TO_ADD)
    assert f.ce_flags is e.ce_flags  # (one int object a distinct word)
    with pytest.raises(AttributeError):
        e.base = 3  # (no slot: an entry of no split index)
    s = e.copy(7)
    assert type(s) is SharedEntry and s.base == 7 and s.fields()[:-1] == e.fields()[:-1] and s != e
    assert s.copy() == s and type(s.copy()) is SharedEntry and e.copy() == e and type(e.copy()) is Entry
    s.base = 0
    assert s == e and "extended_flags=24576" in repr(e)


def test_reading_an_index_lets_its_bytes_go_before_its_dictionary_is_made(tmp_path):
    """``read_index_state``: the file's bytes go once its entries are
    parsed, before the dictionary of them by name is made, so that the
    read's peak holds one of the two beside the entries, not both (10 MiB
    more at 100,000 entries)."""
    import tracemalloc

    from git_checkout_helper.index import Entry
    from git_checkout_helper.index_state import read_index_state

    n = 20_000
    entries = [Entry(b"d%02d/f%05d" % (i % 50, i), 0o100644, hashlib.sha1(b"%d" % i).digest()) for i in range(n)]
    entries.sort(key=lambda e: e.name)
    path = tmp_path / "index"
    path.write_bytes(serialize_index_file(2, entries, []))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        read = read_index_state(str(path), None)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [e.name for e in read.source.entries] == [e.name for e in entries] and len(read.entries) == n
    assert peak - after < size * 0.8  # (the whole file beside the dictionary: its size and more)


def test_a_big_index_is_hashed_by_openssl_a_small_one_by_the_builtin_code():
    """``index_file_chunks`` tells the hash the least the file will hold: an
    index of 20,000 entries (more than ``OPENSSL_FROM`` bytes) is hashed by
    hashlib's code, in a process that had not loaded it, unless told not to
    (``openssl=False``, a clone's); one of 100, by the interpreter's own
    (hashlib left unloaded). Same digest either way."""
    code = """
import sys
from git_checkout_helper.index import Entry
from git_checkout_helper.index_file import serialize_index_file
n = int(sys.argv[1])
entries = [Entry(b"f%05d" % i, 0o100644, bytes(20)) for i in range(n)]
data = serialize_index_file(2, entries, [], openssl=sys.argv[2] == "yes")
loaded = "hashlib" in sys.modules
import hashlib
print(loaded, hashlib.sha1(data[:-20]).digest() == data[-20:])
"""
    for n, openssl, loaded in ((20_000, "yes", "True"), (20_000, "no", "False"), (100, "yes", "False")):
        out = subprocess.run([PY, "-c", code, str(n), openssl], capture_output=True, text=True,
                             check=True).stdout.split()
        assert out == [loaded, "True"], (n, openssl)


@pytest.mark.parametrize("version", ["2", "4"])
def test_round_trip_of_a_big_index_in_blocks_and_batches(tmp_path, env, version):
    """An index of 30,000 entries as git writes it with three offset-table
    blocks (IEOT, EOIE), some entries skip-worktree (extended flags: version
    3 unless 4) and one name of more than CE_NAMEMASK bytes, read and
    written again byte for byte: the writer's batches of entries (a
    thousand and more) never cross a block, and a batch holding an unusual
    entry is written as it is."""
    path = tmp_path / "r"
    git(tmp_path, "init", "-q", "r", env=env)
    blob = git(path, "hash-object", "-w", "--stdin", env=env, input=b"x\n").strip().decode()
    names = ["a-long/" + "n" * 5000] + [f"d{i // 300:03d}/f{i:05d}" for i in range(30_000)]  # (in index order)
    lines = "".join(f"100644 {blob}\t{n}\n" for n in names)
    git(path, "update-index", "--index-info", env=env, input=lines.encode())
    git(path, "update-index", "--skip-worktree", *names[2000::997], env=env)  # (none in the first batch)
    git(path, "-c", "index.threads=3", "-c", "index.recordOffsetTable=true", "-c", "index.recordEndOfIndexEntries=true",
        "update-index", "--index-version", version, env=env)
    idx = parse_index((path / ".git" / "index").read_bytes())
    assert len(idx.entries) == 30_001 and idx.version == (4 if version == "4" else 3)
    assert {b"IEOT", b"EOIE"} <= {s for s, _ in idx.extensions}
    _round_trip(path, 20)


def test_the_index_of_a_checkout_writing_every_entry_is_hashed_by_the_builtin_code(tmp_path, env):
    """A checkout that writes every entry (``-f`` into an empty work tree,
    as a clone's) hashes its index, 20,000 entries, with the interpreter's
    code (OpenSSL's library would add 4 MiB at the coordinator's peak); a
    switch that writes a few of them, with hashlib's. The switch's index
    is git's either way (``git status`` clean, stat data fresh)."""
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", "src", env=env)
    blobs = "".join(f"blob\nmark :{i + 1}\ndata 2\n{i % 10}\n" for i in range(10))
    files = "".join(f"M 100644 :{i % 10 + 1} d{i // 500:02d}/f{i:05d}\n" for i in range(20_000))
    stream = (f"{blobs}commit refs/heads/master\ncommitter A <a@b> 0 +0000\ndata 2\n1\n{files}"
              "commit refs/heads/next\ncommitter A <a@b> 1 +0000\ndata 2\n2\nfrom refs/heads/master\n"
              "M 100644 :3 d00/f00000\n")
    git(src, "fast-import", "--quiet", env=env, input=stream.encode())
    dst = tmp_path / "dst"
    git(tmp_path, "clone", "-q", "--no-checkout", str(src), "dst", env=env)
    code = """
import io, os, sys
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.repository import Repository
rev, force = sys.argv[1], sys.argv[2] == "-f"
run_checkout(Repository.open(".", dict(os.environ)), rev, CheckoutOptions(workers=1, force=force, quiet=True),
             err=io.StringIO(), out=io.StringIO())
print("hashlib" in sys.modules)
"""
    for rev, force, loaded in (("master", "-f", "False"), ("origin/next", "", "True")):
        out = subprocess.run([PY, "-c", code, rev, force], cwd=dst, env=env, capture_output=True, text=True,
                             check=True).stdout.split()
        assert out == [loaded], (rev, out)
    assert git(dst, "status", "--porcelain", env=env) == b""
    assert git(dst, "diff-files", "--name-only", env=env) == b""
