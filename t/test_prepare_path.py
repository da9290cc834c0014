"""``Checkout.prepare_path`` and ``remove_files``: what is in an entry's way
removed, as checkout_entry does, and a leaving file, as unlink_entry does.

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


def test_remove_files_unlinks_unlooked_and_looks_when_that_fails(co, monkeypatch):
    """``remove_files`` (unlink_entry) the same way: a leaving file is
    unlinked without an lstat; a leaving directory (a submodule's) is
    removed when empty, else warned about; nothing there is nothing to do,
    whatever the unlink said; a file that stays is named."""
    c, top, looked = co
    (top / "d" / "empty").mkdir()
    (top / "d" / "other").write_text("o")
    c.remove_files([b"d/file", b"d/empty", b"d/sub", b"d/gone"])
    assert not (top / "d" / "file").exists() and not (top / "d" / "empty").exists()
    assert os.fsencode(top / "d" / "file") not in looked
    assert (top / "d" / "sub" / "y").exists()  # not empty: kept, with git's warning
    assert c.err.getvalue().startswith("warning: unable to rmdir 'd/sub': ")
    assert c.report.removed == 4 and not c.errors

    def read_only(p):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), p)

    monkeypatch.setattr(updates.os, "unlink", read_only)
    c.remove_files([b"d/gone", b"d/other"])
    assert c.errors == [f"unable to unlink 'd/other': {os.strerror(errno.EROFS)}"]
    assert (top / "d" / "other").exists()
