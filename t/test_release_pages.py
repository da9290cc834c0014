"""Pack pages a process has mapped are let go (``PackReader.release_pages``),
and a tree walk does so as it goes: the coordinator's peak memory at 100,000
files was mostly the pages of the pack its tree walk had mapped."""

from __future__ import annotations

import random
import subprocess

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
    monkeypatch.setattr(r.odb, "release_pages", lambda: released.append(1))
    monkeypatch.setattr(repository, "TREES_PER_RELEASE", 8)
    files = r.tree_of(r.resolve("HEAD")[0]).files
    assert len(files) == 60
    assert len(released) == 31 // 8 + 1  # every eighth tree, and at the end
