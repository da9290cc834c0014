"""ignore.py against ``git check-ignore --no-index``: the same paths excluded."""

from __future__ import annotations

import os
import subprocess

from git_checkout_helper.ignore import IgnoreRules

FILES = {
    ".gitignore": b"*.o\n!keep.o\nbuild/\n/top.txt\n# comment\nsp\\ \nd/**/deep\n\\#hash\n*.tmp\r\n",
    "src/.gitignore": b"local\n!*.tmp\nsub/x\n",
    "d/.gitignore": b"*.c\n",
}
PATHS = ["a.o", "keep.o", "src/keep.o", "build", "build/x", "src/build", "src/build/y", "top.txt",
         "src/top.txt", "sp ", "sp", "d/a/deep", "d/deep", "#hash", "x.tmp", "src/x.tmp", "src/local",
         "local", "src/sub/x", "sub/x", "d/f.c", "f.c", "d/e/g.c", "info.ex", "d/info.ex", "glob.gx",
         "build.o/z", "src/build/keep.o"]


def test_matches_git(tmp_path):
    from conftest import isolated_git_env

    env = isolated_git_env(tmp_path)
    r = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(r)], check=True, env=env)
    for name, data in FILES.items():
        (r / name).parent.mkdir(parents=True, exist_ok=True)
        (r / name).write_bytes(data)
    (r / ".git" / "info" / "exclude").write_bytes(b"info.ex\n")
    (tmp_path / "gx").write_bytes(b"*.gx\n")
    subprocess.run(["git", "config", "core.excludesFile", str(tmp_path / "gx")], cwd=r, check=True, env=env)
    for p in PATHS:  # directories exist where a path goes below them
        if "/" in p:
            os.makedirs(r / os.path.dirname(p), exist_ok=True)
    p = subprocess.run(["git", "check-ignore", "--no-index", "--", *PATHS], cwd=r, env=env, capture_output=True)
    want = set(p.stdout.decode().splitlines())
    rules = IgnoreRules(os.fsencode(r) + b"/", set(), b"info.ex\n", b"*.gx\n")
    got = {q for q in PATHS if rules(q.encode())}
    assert got == want


def test_per_directory_only_ignores_info_exclude(tmp_path):
    (tmp_path / ".gitignore").write_bytes(b"*.o\n")
    rules = IgnoreRules(os.fsencode(tmp_path) + b"/", set(), b"*.x\n", b"*.y\n", per_directory_only=True)
    assert rules(b"a.o") and not rules(b"a.x") and not rules(b"a.y")
