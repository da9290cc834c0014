"""verify_path.py gives dulwich's verdicts (dulwich.index's validators) on
every spelling of ``.git`` and its neighbours: NTFS (trailing dots and spaces,
``git~1``, alternate data streams, backslashes), HFS+ (ignorable code points,
case, decomposition, malformed UTF-8), and on whole paths; and the helper's
start-up imports neither dulwich's index nor its object store.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys

import dulwich.index as dw
import pytest
from dulwich.config import ConfigDict

from git_checkout_helper import verify_path as vp

ZW = "\u200c".encode()
BOM = "\ufeff".encode()
ELEMENTS = [
    b"", b".", b"..", b"...", b".git", b".GIT", b".Git", b".git.", b".git ", b".git. .", b".git::$INDEX_ALLOCATION",
    b".git:x", b".gitx", b".git~1", b"git~1", b"GIT~1", b"git~1.", b"git~1:a", b"git~2", b"git", b"gitmodules",
    b".gitmodules", b"x\\.git", b".git\\x", b"a\\b", b"g", b".g", b".gi", b"file.txt", b"con", b"aux.c", b"nul",
    b"COM1", b"lpt9.txt", b"C:", b"c:x", b"." + ZW + b"git", b".g" + BOM + b"it", ZW + b".git", b".git" + ZW,
    ".gi\u0301t".encode(), ".GİT".encode(), b"\xff\xfe", b".git\xff", "ǧit~1".encode(), b" .git", b"..git",
    b"a b", b".git  ", b"sub", b"\x01", b"-", b"~1",
]


def _random_elements(n: int, seed: int = 3):
    rng = random.Random(seed)
    alphabet = [b".", b"g", b"G", b"i", b"I", b"t", b"T", b"~", b"1", b" ", b":", b"\\", b"x", ZW, BOM, b"\xc3"]
    for _ in range(n):
        yield b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))


@pytest.mark.parametrize("name", ["default", "ntfs", "hfs"])
def test_element_validators_agree_with_dulwich(name):
    ours = getattr(vp, f"validate_path_element_{name}")
    theirs = getattr(dw, f"validate_path_element_{name}")
    for element in itertools.chain(ELEMENTS, _random_elements(5000)):
        assert ours(element) == theirs(element), element


def test_paths_agree_with_dulwich():
    parts = [b"a", b".git", b"", b"git~1", b".GIT.", b"b c", b"..", b"x\\.git"]
    for n in range(1, 4):
        for combo in itertools.product(parts, repeat=n):
            path = b"/".join(combo)
            for ours, theirs in ((vp.validate_path_element_default, dw.validate_path_element_default),
                                 (vp.validate_path_element_ntfs, dw.validate_path_element_ntfs)):
                assert vp.validate_path(path, ours) == dw.validate_path(path, theirs), path


@pytest.mark.parametrize("ntfs,hfs", [(None, None), (b"false", None), (b"true", b"true"), (b"false", b"false"),
                                      (None, b"true")])
def test_config_choice_agrees_with_dulwich(ntfs, hfs):
    config = ConfigDict()
    if ntfs is not None:
        config.set((b"core",), b"protectNTFS", ntfs)
    if hfs is not None:
        config.set((b"core",), b"protectHFS", hfs)
    ours, theirs = vp.get_path_element_validator(config), dw.get_path_element_validator(config)
    for element in itertools.chain(ELEMENTS, _random_elements(500)):
        assert ours(element) == theirs(element), element


def test_helper_never_imports_dulwich_object_store(make_repo):
    """A helper writing packed blobs: no dulwich.index, no dulwich.object_store."""
    repo = make_repo()
    (repo.path / "a.txt").write_bytes(b"hello\n" * 100)
    repo.git("add", "a.txt")
    repo.git("commit", "-q", "-m", "c")
    repo.git("repack", "-adq")
    oid = repo.git("rev-parse", "HEAD:a.txt").decode().strip()
    code = f"""
import os, sys
from git_checkout_helper.odb import ObjectDatabase
from git_checkout_helper.entry import CheckoutState, write_pc_item
from git_checkout_helper.wire import PcItem
odb = ObjectDatabase(".git/objects")
os.unlink("a.txt")
status, st = write_pc_item(PcItem(id=0, oid=bytes.fromhex("{oid}"), ce_mode=0o100644, name=b"a.txt"),
                           CheckoutState(odb))
assert status == 1, status
assert open("a.txt", "rb").read() == b"hello\\n" * 100
print(sorted(m for m in sys.modules if m in ("dulwich.index", "dulwich.object_store", "dulwich.pack")))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=repo.path, env=repo.env, capture_output=True,
                         check=True).stdout
    assert out.strip() == b"[]"


def test_invalid_paths_are_found_in_every_scan_and_in_order():
    """``invalid_paths`` joins at most ``PATHS_PER_SCAN`` paths at a time; an
    invalid path in any of those scans (first, last, across a boundary, as
    the first or last of one) is found, in the order given, from any
    iterable (a tree's dictionary, a generator)."""
    n = vp.PATHS_PER_SCAN
    paths = [b"d%05d/f" % i for i in range(3 * n + 5)]
    bad_at = [0, n - 1, n, 2 * n + 1, len(paths) - 1]
    for i in bad_at:
        paths[i] = b"d%05d/../x" % i if i % 2 else b".git/x%05d" % i
    expect = [paths[i] for i in bad_at]
    validator = vp.validate_path_element_default
    assert vp.invalid_paths(paths, validator) == expect
    assert vp.invalid_paths(iter(paths), validator) == expect
    assert vp.invalid_paths(dict.fromkeys(paths), validator) == expect
    assert vp.invalid_paths([], validator) == []
    links = {paths[-2]: 0, b"sub/.gitmodules": 0o120000}
    assert vp.invalid_paths([paths[-2], b"sub/.gitmodules"], validator, links.get) == [b"sub/.gitmodules"]
