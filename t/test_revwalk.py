"""revwalk.CommitWalk.limited against `git rev-list <in> --not <out>`, which
walks with the same limit_list: random histories whose committer dates
repeat and run backwards (clock skew), merges of up to three parents,
several roots, shallow and grafted parents; the commits listed and their
order must be git's. And the abbreviated ids the messages print
(odb.ObjectDatabase.ids_with_prefix) against git's."""

from __future__ import annotations

import random

import pytest
from conftest import git

from git_checkout_helper.repository import Repository
from git_checkout_helper.revision import approximate_object_count, find_unique_abbrev


def _history(path, env, rng: random.Random, n: int) -> list[bytes]:
    """``n`` commits made by fast-import, each with 0 to 3 earlier parents
    and a date near its place in the history (equal ones and skew included)."""
    git(path.parent, "init", "-q", str(path), env=env)
    stream = []
    for i in range(n):
        parents = [] if i == 0 or rng.random() < 0.05 else rng.sample(range(i), min(i, rng.choice((1, 1, 1, 2, 3))))
        date = 1_700_000_000 + i * 10 + rng.choice((0, 0, 0, 5, -30, -100, 60, 400, -3000))
        stream.append(f"commit refs/heads/b{i}\nmark :{i + 1}\n"
                      f"author A <a@x> {date} +0000\ncommitter C <c@x> {date} +0000\n"
                      f"data {len(str(i))}\n{i}\n")
        if parents:
            stream.append(f"from :{parents[0] + 1}\n")
            stream.extend(f"merge :{p + 1}\n" for p in parents[1:])
        else:
            stream.append("deleteall\n")
        stream.append("\n")
    git(path, "fast-import", "--quiet", env=env, input="".join(stream).encode())
    return [git(path, "rev-parse", f"refs/heads/b{i}", env=env).strip() for i in range(n)]


def _compare(path, env, rng: random.Random, ids: list[bytes], queries: int) -> int:
    nonempty = 0
    for _ in range(queries):
        include = rng.sample(ids, rng.choice((1, 1, 2)))
        exclude = rng.sample(ids, rng.choice((0, 1, 2, 3)))
        want = git(path, "rev-list", *map(bytes.decode, include), "--not", *map(bytes.decode, exclude),
                   env=env).split()
        # A repository (and walk) of its own, as each rev-list is a process of its
        # own: one walk marks through what an earlier one parsed, as in one git process.
        repo = Repository.open(str(path), environ=env)
        try:
            assert repo.commit_walk().limited(include, exclude) == want, (include, exclude)
        finally:
            repo.close()
        nonempty += bool(want) and bool(exclude)
    return nonempty


@pytest.mark.parametrize("seed", range(4))
def test_limited_lists_what_rev_list_lists(git_env, tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "r"
    ids = _history(path, git_env, rng, 80)
    assert _compare(path, git_env, rng, ids, 150) > 30  # (the queries exclude something and list something)


def test_limited_follows_shallow_and_grafted_parents(git_env, tmp_path):
    rng = random.Random(7)
    path = tmp_path / "r"
    ids = _history(path, git_env, rng, 60)
    cut = rng.sample(ids[10:], 4)
    (path / ".git" / "shallow").write_bytes(b"".join(c + b"\n" for c in cut))
    graft = ids[45]
    (path / ".git" / "info").mkdir(exist_ok=True)
    (path / ".git" / "info" / "grafts").write_bytes(graft + b" " + ids[3] + b"\n")
    env = dict(git_env, GIT_CONFIG_PARAMETERS="'advice.graftfiledeprecated=false'")
    assert git(path, "rev-list", "--count", ids[45].decode(), env=env).strip() \
        != git(path, "rev-list", "--count", ids[45].decode(), env=dict(env, GIT_GRAFT_FILE="/nonexistent")).strip()
    assert _compare(path, env, rng, ids, 60) > 10


def test_abbreviations_are_gits(git_env, tmp_path):
    """Packed and loose objects, prefixes shared by several ids: the
    shortest unique abbreviation and the object count git's auto length
    comes from."""
    rng = random.Random(3)
    path = tmp_path / "r"
    ids = _history(path, git_env, rng, 300)
    git(path, "repack", "-adq", env=git_env)
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    for i in range(600):
        (blobs / str(i)).write_text(f"loose {i}\n")
    loose = git(path, "hash-object", "-w", "--stdin-paths", env=git_env,
                input="".join(f"{blobs / str(i)}\n" for i in range(600)).encode()).split()
    assert (path / ".git" / "objects" / loose[0][:2].decode() / loose[0][2:].decode()).exists()
    repo = Repository.open(str(path), environ=git_env)
    assert repo.odb.ids_with_prefix(b"0000") is not None  # (our own search, not the fallback)
    assert repo.odb.approximate_object_count() == approximate_object_count(repo)
    assert approximate_object_count(repo) == int(
        [line for line in git(path, "count-objects", "-v", env=git_env).decode().splitlines()
         if line.startswith("in-pack:")][0].split()[1])
    for length in (4, 5, 7):
        for oid in [*ids[:100], *loose[:100]]:
            want = git(path, "rev-parse", f"--short={length}", oid.decode(), env=git_env).strip().decode()
            assert find_unique_abbrev(repo, oid, length) == want


@pytest.mark.parametrize("chain", [4, 5, 6])
def test_limited_stops_as_git_does_after_slop_commits(git_env, tmp_path, chain):
    """A commit kept early (dated after the uninteresting commits below
    it: clock skew) is found uninteresting only if the walk reaches it
    within SLOP commits once nothing interesting is queued: git lists it
    when the path to it is longer."""
    path = tmp_path / "r"
    git(tmp_path, "init", "-q", str(path), env=git_env)
    marks = [("k", 1500, None), ("y", 2000, "k")]
    below = "k"
    for i in range(chain):
        marks.append((f"u{i}", 100 + i, below))
        below = f"u{i}"
    marks.append(("x", 1000, below))
    stream = []
    for n, (name, date, parent) in enumerate(marks, 1):
        stream.append(f"commit refs/heads/{name}\nmark :{n}\nauthor A <a@x> {date} +0000\n"
                      f"committer C <c@x> {date} +0000\ndata {len(name)}\n{name}")
        stream.append(f"from refs/heads/{parent}\n\n" if parent else "\n")
    git(path, "fast-import", "--quiet", env=git_env, input="".join(stream).encode())
    y, x = (git(path, "rev-parse", name, env=git_env).strip() for name in ("y", "x"))
    want = git(path, "rev-list", y.decode(), "--not", x.decode(), env=git_env).split()
    assert len(want) == (1 if chain <= 5 else 2)  # (y alone, or k too: beyond git's SLOP of 5)
    assert Repository.open(str(path), environ=git_env).commit_walk().limited([y], [x]) == want


def test_commit_date_reads_the_number_as_parse_commit_date_does():
    """After the first ``>`` of the committer line, as ``strtoumax``: blanks
    and a sign skipped, a minus wrapping around, an overflow clamped; no
    author line first, no committer line, no digits: 0."""
    from git_checkout_helper.revwalk import commit_date

    def date(committer: bytes, author: bytes = b"author A <a@x> 1 +0000\n") -> int:
        return commit_date(author + b"committer " + committer + b"\n\nmessage\n", 0)

    assert date(b"C <c@x> 1700000000 +0000") == 1700000000
    assert date(b"C <c@x>\t +42 +0000") == 42
    assert date(b"C <c@x> -5 +0000") == (1 << 64) - 5
    assert date(b"C <c@x> 99999999999999999999999 +0000") == (1 << 64) - 1
    assert date(b"C <c@x> 12abc") == 12
    assert date(b"C <c@x> now") == 0
    assert date(b"C c@x 1700000000") == 0  # (no '>')
    assert date(b"C <c@x> 5", author=b"") == 0  # (the committer line must follow an author line)
    assert commit_date(b"author A <a@x> 1 +0000\n", 0) == 0
