"""``Checkout.prepare_path``: what is in an entry's way removed, as checkout_entry does.

What is there is unlinked without an lstat first; only when the unlink
fails does it look (a directory: removed, or kept for a gitlink; nothing
there: nothing to do, whatever the error said; anything else: the error).
"""

from __future__ import annotations

import errno
import io
import os
import subprocess

import pytest

from git_checkout_helper.checkout import updates
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.updates import Checkout
from git_checkout_helper.repository import Repository


@pytest.fixture
def co(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    c = Checkout(Repository.open(str(tmp_path), {}), CheckoutOptions(), io.StringIO())
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "file").write_text("x")
    (tmp_path / "d" / "sub").mkdir()
    (tmp_path / "d" / "sub" / "y").write_text("y")
    looked = []
    real = os.lstat
    monkeypatch.setattr(updates.os, "lstat", lambda p, **kw: looked.append(p) or real(p, **kw))
    return c, tmp_path, looked


def test_a_file_in_the_way_is_unlinked_unlooked(co):
    c, top, looked = co
    c.prepare_path(b"d/file")
    assert not (top / "d" / "file").exists()
    assert os.fsencode(top / "d" / "file") not in looked


def test_a_directory_in_the_way(co):
    c, top, looked = co
    c.prepare_path(b"d/sub", keep_dir=True)  # a submodule's work tree: kept
    assert (top / "d" / "sub" / "y").exists()
    c.prepare_path(b"d/sub")
    assert not (top / "d" / "sub").exists()


def test_nothing_there(co, monkeypatch):
    c, top, looked = co
    c.prepare_path(b"d/new")
    real_unlink = os.unlink

    def read_only(p):  # a read-only file system refuses before it looks
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), p)

    monkeypatch.setattr(updates.os, "unlink", read_only)
    c.prepare_path(b"d/new")  # nothing there: nothing to do
    with pytest.raises(OSError) as e:
        c.prepare_path(b"d/file")
    assert e.value.errno == errno.EROFS
    monkeypatch.setattr(updates.os, "unlink", real_unlink)
    assert (top / "d" / "file").exists()
