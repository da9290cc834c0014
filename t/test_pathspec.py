"""pathspec.py against git: which index paths each pathspec selects (``git ls-files``)."""

from __future__ import annotations

import subprocess

import pytest

from git_checkout_helper.pathspec import PathspecError, parse_pathspec

PATHS = ["d", "e/f", "e/g/h.txt", "s p", "g h/i", "a.txt", "A.txt", "\u00fc.txt", "x*y", "b/c/d.o",
         "[ab]", "ab"]
SPECS = ["d", "d/", "e/", "e//f", "./d", "*/", "e/*", "e*", "?", "[de]", "*f", "s p", "g h/", "\\d",
         "e/./f", "d/..", "*", ":(glob)*", ":(glob)**/*.txt", ":(glob)e/**", ":/d", ":!d", ":^e", ":(icase)*.TXT",
         ":(literal)x*y", "x\\*y", "[!a]*", "[a-c]*", "*.txt", "e/g", "b/**/d.o", ":(glob)b/**/d.o",
         "[[:upper:]]*", "\\[ab]", "[ab]", "nope", "e/f/", ":(exclude)*.txt", ":!*.o", "."]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    from conftest import isolated_git_env

    top = tmp_path_factory.mktemp("ps")
    env = isolated_git_env(top)
    r = top / "r"
    subprocess.run(["git", "init", "-q", str(r)], check=True, env=env)
    for p in PATHS:
        (r / p).parent.mkdir(parents=True, exist_ok=True)
        (r / p).write_text(p)
    subprocess.run(["git", "add", "--", "."], cwd=r, check=True, env=env)
    return r, env


@pytest.mark.parametrize("spec", SPECS)
def test_selects_like_git(repo, spec):
    r, env = repo
    p = subprocess.run(["git", "-c", "core.quotePath=false", "ls-files", "--error-unmatch", "--", spec],
                       cwd=r, env=env, capture_output=True)
    ps = parse_pathspec([spec])
    ours = sorted(path for path in sorted(PATHS, key=str.encode)
                  if ps.match(path.encode()))
    if p.returncode:
        assert ps.unmatched() == [spec], (p.stderr, ours)
    else:
        assert not ps.unmatched()
        assert ours == sorted(p.stdout.decode().splitlines())


def test_overlapping_specs_all_marked():
    ps = parse_pathspec(["src", "src/y", "src/*"])
    assert ps.match(b"src/y")
    assert ps.unmatched() == []


def test_outside_and_bad_magic():
    with pytest.raises(PathspecError):
        parse_pathspec([".."])
    with pytest.raises(PathspecError):
        parse_pathspec([":(nosuch)x"])


def test_prefix():
    ps = parse_pathspec(["f", "../d", ":/s p"], "e")
    assert ps.match(b"e/f") and ps.match(b"d") and ps.match(b"s p") and not ps.match(b"f")
