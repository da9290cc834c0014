"""Streamed writes: git's stream filters, large blobs in bounded memory.

* The stream filters give the same bytes whatever the chunking (hypothesis
  splits the corpus texts at random points); whole-buffer results are held to
  git by ``test_convert.py``.
* Blobs above the helper's streaming threshold, loose and packed, every
  ``crlf_action`` with and without ident: byte-identical to git's worker.
* A blob of a few hundred MB is written with peak RSS far below its size
  (measured with ``wait4``), plain and through ident + LF->CRLF, and the
  converted one is byte-identical to git's worker.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from test_convert import (  # noqa: E402
    CRLF_ACTIONS,
    HELPER,
    Case,
    base_env,
    eol_contents,
    git,
    ident_contents,
    make_dirs,
    pack_batch,
    read_results,
)

from git_checkout_helper.convert import (  # noqa: E402
    NULL_FILTER,
    EolConfig,
    apply_filter,
    get_stream_filter,
)
from git_checkout_helper.entry import STREAM_THRESHOLD  # noqa: E402
from git_checkout_helper.odb import STREAM_PIECE  # noqa: E402

OID = bytes.fromhex("0123456789abcdef0123456789abcdef01234567")
TEXTS = eol_contents() + ident_contents()


@settings(max_examples=300, deadline=None)
@given(
    text=st.sampled_from(TEXTS),
    repeat=st.integers(1, 4),
    crlf=st.sampled_from([0, 1, 2, 3, 4, 6]),
    ident=st.booleans(),
    cuts=st.lists(st.integers(0, 400), max_size=12),
)
def test_stream_filters_do_not_depend_on_chunking(text, repeat, crlf, ident, cuts):
    data = text * repeat
    eol = EolConfig("true")
    whole = apply_filter(get_stream_filter(crlf, ident, None, OID, eol), data)
    filt = get_stream_filter(crlf, ident, None, OID, eol)
    assert filt is not None
    points = sorted({c % (len(data) + 1) for c in cuts})
    out = []
    prev = 0
    for p in [*points, len(data)]:
        out.append(filt.feed(data[prev:p]))
        prev = p
    out.append(filt.finish())
    assert b"".join(out) == whole


def test_plain_items_get_the_null_filter():
    eol = EolConfig("true", "crlf")
    for crlf in (1, 3, 6):
        assert get_stream_filter(crlf, 0, None, OID, eol) is NULL_FILTER
    assert get_stream_filter(2, 0, None, OID, EolConfig("false", "lf")) is NULL_FILTER
    for crlf in (5, 7):
        assert get_stream_filter(crlf, 0, None, OID, eol) is None  # AUTO: in core
    assert get_stream_filter(1, 0, b"UTF-16", OID, eol) is None


def write_loose(objects: str, chunks, size: int) -> str:
    """A loose blob from an iterable of chunks totalling ``size`` bytes (level 1)."""
    h = hashlib.sha1()
    comp = zlib.compressobj(1)
    tmp = os.path.join(objects, "tmp-large")
    with open(tmp, "wb") as f:
        head = b"blob %d\0" % size
        h.update(head)
        f.write(comp.compress(head))
        for c in chunks:
            h.update(c)
            f.write(comp.compress(c))
        f.write(comp.flush())
    oid = h.hexdigest()
    os.makedirs(os.path.join(objects, oid[:2]), exist_ok=True)
    os.rename(tmp, os.path.join(objects, oid[:2], oid[2:]))
    return oid


def file_sha1(path: str, blob: bool = False) -> str:
    """SHA-1 of a file's bytes (with ``blob``: its object id, as hash-object)."""
    h = hashlib.sha1()
    if blob:
        h.update(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return h.hexdigest()
            h.update(b)


# Runs argv[2:] as a child and writes its peak RSS (KiB) to argv[1]. A child
# of this test process would count the test's own pages (fork, and even
# posix_spawn's shared address space, start with them); a child of this small
# exec'd launcher starts from its few MiB.
_MEASURE = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_pair(cases, git_dir, env, where, name, who=("git", "ours")):
    """Run the workers on ``cases``; {who: (rc, stderr, results, peak RSS bytes, top)}."""
    batch = os.path.join(where, name + ".batch")
    with open(batch, "wb") as f:
        f.write(pack_batch(cases))
    out = {}
    for w in who:
        top = os.path.join(where, f"{name}.{w}")
        make_dirs(top, cases)
        cmd = ["git", "checkout--worker"] if w == "git" else [HELPER]
        if cmd[0] == "git":
            cmd[0] = shutil.which("git")
        with open(batch, "rb") as fin, open(top + ".out", "wb") as fout:
            p = subprocess.run([sys.executable, "-S", "-c", _MEASURE, top + ".rss", *cmd], cwd=top,
                               env=dict(env, GIT_DIR=git_dir), stdin=fin, stdout=fout,
                               stderr=subprocess.PIPE)
        with open(top + ".rss") as f:
            rss = int(f.read()) << 10
        out[w] = (p.returncode, p.stderr, read_results(top + ".out"), rss, top)
    return out


@pytest.fixture(scope="module")
def stream_repo(tmp_path_factory):
    base = tmp_path_factory.mktemp("stream")
    home = base / "home"
    home.mkdir()
    env = base_env(str(home))
    env["GIT_CONFIG_PARAMETERS"] = "'core.autocrlf'='true'"
    repo = base / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    return base, env, repo


def test_streamed_blobs_match_git(stream_repo):
    """Blobs above the streaming threshold, loose and packed, with idents and
    CRs across the helper's inflate pieces: every crlf_action x ident gives
    git's bytes."""
    base, env, repo = stream_repo
    unit = b"l $Id$ x\r\n$Id: old $\n$I$Id$\r\r\n$Id:\nab\r$Id: a b $\n" + b"y" * 1001 + b"\n"
    data = unit * (STREAM_THRESHOLD // len(unit) + 2 * STREAM_PIECE // len(unit))
    assert len(data) > STREAM_THRESHOLD + STREAM_PIECE
    p = base / "big.txt"
    p.write_bytes(data)
    oid = git(repo, "hash-object", "-w", "--no-filters", str(p)).decode().strip()
    packed = base / "packed"
    subprocess.run(["git", "init", "-q", str(packed)], check=True, env=env)
    git(repo, "pack-objects", "-q", str(packed / ".git/objects/pack/pack"), input=oid.encode(), env=env)
    for name, r in (("loose", repo), ("packed", packed)):
        # Each crlf_action with and without ident, split over the two stores.
        flip = name == "packed"
        cases = [Case(b"f%d" % crlf, data, oid, crlf, (crlf + flip) % 2, None) for crlf in CRLF_ACTIONS]
        res = run_pair(cases, str(r / ".git"), env, str(base), name)
        g, o = res["git"], res["ours"]
        assert (g[0], g[1]) == (0, b"") and (o[0], o[1]) == (0, b"")
        assert o[2] == g[2]
        for c in cases:
            got = file_sha1(os.path.join(o[4], c.path.decode()))
            assert got == file_sha1(os.path.join(g[4], c.path.decode())), (name, c.crlf, c.ident)


LARGE = 300 << 20


def roomy_tmp(tmp_path) -> str:
    """tmpfs when it has room for the large files (faster), else tmp_path."""
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
        if st.f_bavail * st.f_frsize > 4 * LARGE and os.access(shm, os.W_OK):
            import tempfile

            return tempfile.mkdtemp(prefix="gch-large-", dir=shm)
    except OSError:
        pass
    return str(tmp_path)


def test_large_blob_streams_in_bounded_memory(tmp_path):
    """A 300 MiB loose blob: written plain, and through ident + LF->CRLF,
    with the helper's peak RSS far below the blob's size.

    The plain file must hash to the blob's id. git's worker needs ~12 s for
    the converted one (its filters go a byte at a time), so its bytes are
    checked here against the blob converted block by block with ``replace``
    -- right for this text, whose blocks end in LF and hold one "$Id$" and
    one CRLF each -- and the streamed path itself against git above."""
    where = roomy_tmp(tmp_path)
    try:
        _large_blob(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _large_blob(where: str) -> None:
    home = os.path.join(where, "home")
    os.makedirs(home)
    env = base_env(home)
    repo = os.path.join(where, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True, env=env)
    block = b"".join(b"%07d a line of the large blob with some text\n" % i for i in range(1 << 14))
    block = block[:-100] + b"$Id$ and an ident\r\n" + block[-81:]
    n = LARGE // len(block)
    size = n * len(block)
    oid = write_loose(os.path.join(repo, ".git", "objects"), (block for _ in range(n)), size)
    git_dir = os.path.join(repo, ".git")
    small = write_loose(os.path.join(repo, ".git", "objects"), [block[:100]], 100)
    base = run_pair([Case(b"small", b"", small, 4, 1, None)], git_dir, env, where, "small", who=("ours",))
    assert base["ours"][0] == 0
    base_rss = base["ours"][3]
    cases = [Case(b"plain", b"", oid, 1, 0, None), Case(b"crlf-ident", b"", oid, 4, 1, None)]
    ours = run_pair(cases[:1], git_dir, env, where, "plain", who=("ours",))["ours"]
    assert ours[0] == 0 and ours[1] == b"" and [s for _i, s in ours[2]] == [1]
    assert file_sha1(os.path.join(ours[4], "plain"), blob=True) == oid
    plain_rss = ours[3]
    os.unlink(os.path.join(ours[4], "plain"))
    o = run_pair(cases[1:], git_dir, env, where, "conv", who=("ours",))["ours"]
    assert (o[0], o[1], o[2]) == (0, b"", [(0, 1)])
    conv_rss = o[3]
    expect = block.replace(b"$Id$", b"$Id: " + oid.encode() + b" $")
    expect = expect.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    h = hashlib.sha1()
    for _ in range(n):
        h.update(expect)
    out_path = os.path.join(o[4], "crlf-ident")
    assert os.path.getsize(out_path) == n * len(expect)
    assert file_sha1(out_path) == h.hexdigest()
    sys.stderr.write(f"helper peak RSS: 100-byte blob {base_rss >> 20} MiB; {size >> 20} MiB blob: "
                     f"plain {plain_rss >> 20} MiB, ident+crlf {conv_rss >> 20} MiB\n")
    # The pieces in flight are a few MiB; reading the blob whole would add 300.
    assert plain_rss < base_rss + (32 << 20), (base_rss, plain_rss)
    assert conv_rss < base_rss + (32 << 20), (base_rss, conv_rss)
