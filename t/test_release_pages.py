"""Pack pages a process has mapped are let go (``PackReader.release_pages``):
by a tree walk as it goes (the coordinator's peak memory at 100,000 files was
mostly the pages of the pack its tree walk had mapped), with the pack index's
at its end, and by a helper after each batch."""

from __future__ import annotations

import os
import random
import subprocess

import pytest
from conftest import git

from git_checkout_helper import repository
from git_checkout_helper.odb import ObjectDatabase
from git_checkout_helper.repository import Repository


def _mapped_kib() -> int:
    """This process's resident file-backed and shared pages (a pack on tmpfs is shmem)."""
    out = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssFile:", "RssShmem:")):
                out += int(line.split()[1])
    return out


def _repo(tmp_path, files: int, dirs: int):
    src = tmp_path / "src"
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    rnd = random.Random(1)
    for i in range(files):
        d = src / f"d{i % dirs}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}").write_bytes(rnd.randbytes(8192))  # incompressible: the pack is as large
    git(src, "add", ".")
    git(src, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "x")
    git(src, "gc", "-q")
    return src


def test_release_pages_drops_the_mapped_pack(tmp_path):
    src = _repo(tmp_path, 2000, 10)  # a pack of about 16 MiB
    oids = git(src, "rev-list", "--objects", "--all").split()
    odb = ObjectDatabase(str(src / ".git" / "objects"), "sha1", [])
    before = _mapped_kib()
    for oid in oids[::2]:
        if len(oid) == 40:
            odb.read_raw(bytes.fromhex(oid.decode()))
    grown = _mapped_kib() - before
    assert grown > 4096, grown  # the reads mapped megabytes of the pack
    odb.release_pages()
    assert _mapped_kib() - before < grown / 4
    odb.read_raw(bytes.fromhex(oids[0].decode()))  # still readable after
    odb.close()


def test_tree_walk_releases_as_it_goes(tmp_path, monkeypatch):
    src = _repo(tmp_path, 60, 30)  # 31 trees
    r = Repository.open(str(src), {})
    released = []
    monkeypatch.setattr(r.odb, "release_pages", lambda finished=False: released.append(finished))
    monkeypatch.setattr(repository, "TREES_PER_RELEASE", 8)
    files = r.tree_of(r.resolve("HEAD")[0]).files
    assert len(files) == 60
    # Every eighth tree, and at the end, the pack index's pages too then.
    assert released == [False] * (31 // 8) + [True]


def _resident_kib(directory, suffix: str) -> int:
    """Resident pages of this process's mappings of files ``directory/*suffix``."""
    out, mine, prefix = 0, False, f"{directory}/"
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not line[0].isupper():
                mine = head[-1].startswith(prefix) and head[-1].endswith(suffix)
            elif mine and head[0] == "Rss:":
                out += int(head[1])
    return out


def test_release_pages_can_drop_the_pack_index(tmp_path):
    src = _repo(tmp_path, 2000, 10)  # an index of 56 KiB
    oids = [bytes.fromhex(o.decode()) for o in git(src, "rev-list", "--objects", "--all").split() if len(o) == 40]
    odb = ObjectDatabase(str(src / ".git" / "objects"), "sha1", [])
    packs = src / ".git" / "objects" / "pack"
    try:
        assert all(odb.has_object(o) for o in oids)
        searched = _resident_kib(packs, ".idx")
        assert searched > 0
        odb.release_pages()  # (a helper's, after each batch: the index stays)
        assert _resident_kib(packs, ".idx") == searched
        odb.release_pages(finished=True)  # (the coordinator's, after a tree walk)
        assert _resident_kib(packs, ".idx") == 0
        assert odb.has_object(oids[-1])  # still searched after
    finally:
        odb.close()


def test_a_finished_reader_lets_go_of_its_delta_bases(tmp_path):
    src = tmp_path / "src"
    git(None, "init", "-q", str(src))
    text = b"".join(b"line %d of a file that changes a little each time\n" % i for i in range(400))
    for n in range(6):
        (src / "f").write_bytes(text + b"change %d\n" % n)
        git(src, "add", "f")
        git(src, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", f"v{n}")
    git(src, "gc", "-q")
    blobs = [bytes.fromhex(git(src, "rev-parse", f"HEAD~{n}:f").decode().strip()) for n in range(6)]
    odb = ObjectDatabase(str(src / ".git" / "objects"), "sha1", [])
    try:
        assert [odb.read_raw(b)[1][-9:] for b in blobs] == [b"change %d\n" % n for n in range(5, -1, -1)]
        (pack,) = odb._packs
        assert pack._cached > 0  # delta bases kept for the next object
        odb.release_pages()
        assert pack._cached > 0
        odb.release_pages(finished=True)
        assert (pack._cached, len(pack._cache)) == (0, 0)
        assert odb.read_raw(blobs[-1])[1] == text + b"change 0\n"
    finally:
        odb.close()


def test_a_helper_releases_after_each_batch(tmp_path, monkeypatch):
    from git_checkout_helper import helper
    from git_checkout_helper.entry import CheckoutState
    from git_checkout_helper.pktline import FLUSH_PKT, pkt_line
    from git_checkout_helper.wire import REQUEST_LAYOUTS, PcItem, native_stat_layout

    src = _repo(tmp_path, 6, 2)
    wt = tmp_path / "wt"
    (wt / "d0").mkdir(parents=True)
    (wt / "d1").mkdir()
    rows = [line.split(b"\t") for line in git(src, "ls-tree", "-r", "HEAD").splitlines()]
    items = [PcItem(id=i, oid=bytes.fromhex(meta.split()[2].decode()), ce_mode=0o100644, name=name)
             for i, (meta, name) in enumerate(rows)]
    layout = REQUEST_LAYOUTS["git"]
    batch = [b"".join(pkt_line(it.encode(layout)) for it in part) + FLUSH_PKT for part in (items[:3], items[3:])]
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    os.write(w_in, b"".join(batch))
    os.close(w_in)
    odb = ObjectDatabase(str(src / ".git" / "objects"), "sha1", [])
    released = []
    monkeypatch.setattr(odb, "release_pages", lambda: released.append(1))
    state = CheckoutState(odb, base_dir=os.fsencode(wt) + b"/")
    try:
        assert helper.serve(r_in, w_out, state, layout, native_stat_layout(), odb.hash_algo) == 6
    finally:
        odb.close()
        for fd in (r_in, r_out, w_out):
            os.close(fd)
    assert len(released) == 2
    assert sorted(p.name for p in wt.rglob("f*")) == sorted(n.rsplit(b"/")[-1].decode() for _m, n in rows)


def test_sequential_writes_release_every_few_hundred_items(tmp_path, monkeypatch):
    from git_checkout_helper.checkout import checkout
    from git_checkout_helper.checkout.parallel import RELEASE_EVERY_ITEMS

    src = _repo(tmp_path, 2 * RELEASE_EVERY_ITEMS + 10, 4)  # 5 trees
    wt = tmp_path / "wt"
    git(None, "clone", "-q", "--no-checkout", str(src), str(wt))
    released = []
    monkeypatch.setattr(ObjectDatabase, "release_pages", lambda self, finished=False: released.append(finished))
    report = checkout(str(wt), None, workers=1, force=True)
    assert report.sequential_items == 2 * RELEASE_EVERY_ITEMS + 10
    # The tree walk's end and the queue's start (the special entries
    # written), then two in the queue's writes.
    assert released == [True, True, False, False]
    assert git(wt, "status", "--porcelain") == b""


@pytest.mark.parametrize("recurse", [False, True])
def test_a_forced_checkout_plans_in_the_targets_own_files(tmp_path, monkeypatch, recurse):
    """A oneway merge takes the target's dictionary of files over for its
    entries (oneway.plan_reset's ``consume``), unless submodule moves are
    planned from those files after it; the checkout is the same."""
    from git_checkout_helper.checkout import checkout, switch

    src = _repo(tmp_path, 40, 4)
    wt = tmp_path / "wt"
    git(None, "clone", "-q", "--no-checkout", str(src), str(wt))
    if recurse:
        git(wt, "config", "submodule.recurse", "true")
    seen = []
    plan_reset = switch.plan_reset

    def planned(target, *a, **k):
        files = target.files
        plan = plan_reset(target, *a, **k)
        seen.append((plan.entries is files, len(target.files)))
        return plan

    monkeypatch.setattr(switch, "plan_reset", planned)
    checkout(str(wt), None, workers=1, force=True)
    assert seen == ([(False, 40)] if recurse else [(True, 0)])
    assert git(wt, "status", "--porcelain") == b""
    assert git(wt, "ls-files", "-s") == git(src, "ls-files", "-s")


def test_a_checkout_writing_every_entry_lets_the_plans_dictionary_go(tmp_path, monkeypatch):
    """A oneway merge that writes every entry (a clone's checkout) needs its
    dictionary of entries no more once the paths are checked: the new
    index's order is the plan's list of writes (switch._checked_oneway,
    unpack.index_order), so nothing holds the dictionary while the files
    are written. One that keeps entries (a ``-f`` over files already right)
    keeps it for the order; both checkouts are git's."""
    import sys

    from git_checkout_helper.checkout import checkout, switch, updates

    src = _repo(tmp_path, 40, 4)
    (src / "link").symlink_to("d0")
    git(src, "add", "link")
    git(src, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "link")
    wt = tmp_path / "wt"
    git(None, "clone", "-q", "--no-checkout", str(src), str(wt))
    plans, seen = [], []
    plan_reset = switch.plan_reset

    def planned(*a, **k):
        plan = plan_reset(*a, **k)
        plans.append((plan, plan.entries))
        return plan

    write_entries = updates.Checkout.write_entries

    def writing(self, entries):
        seen.append((plans[-1][0].entries is None, sys.getrefcount(plans[-1][1])))  # (the tuple above; the argument)
        return write_entries(self, entries)

    monkeypatch.setattr(switch, "plan_reset", planned)
    monkeypatch.setattr(updates.Checkout, "write_entries", writing)
    checkout(str(wt), None, workers=1, force=True)
    assert git(wt, "ls-files", "-s") == git(src, "ls-files", "-s")
    assert git(wt, "status", "--porcelain") == b""
    (wt / "d1" / "f1").write_bytes(b"changed\n")
    checkout(str(wt), None, workers=1, force=True)  # one entry written, 40 kept
    assert seen[0] == (True, 2) and seen[1][0] is False
    assert git(wt, "ls-files", "-s") == git(src, "ls-files", "-s")
    assert git(wt, "status", "--porcelain") == b""
