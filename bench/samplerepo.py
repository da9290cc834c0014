"""A deterministic sample repository shaped like a real project.

Used by the benchmark (``python -m bench``), the demo and
tests. It is test/bench infrastructure, so it runs git itself; the product's
checkout path never does.

Shape, at HEAD (``files`` regular files, by default 5,000):

* a few hundred directories (one per ~17 files), up to six levels deep, with a
  skewed number of files per directory (a few big directories, many small),
  as in git.git or the kernel;
* sizes log-normal around 4 KB (median 4 KiB, sigma 1.1, cap 400 KB, 1% empty
  files) plus a few multi-MB files (4, and one more per 20,000 files): half of
  them text that grows like a changelog, half binary (fewer below 1,000
  files, none below 250, so that test repositories stay small);
* about 25% executables (mode 100755) and a few symlinks (relative, to files
  of the repository);
* a top-level ``.gitattributes`` like git.git's (``diff=``, ``whitespace=``,
  ``text eol=lf`` for shell scripts): a real project makes every tool resolve
  attributes per path, though nothing is converted on LF content;
* text made of lines drawn from a fixed pool of pseudo-source lines, so that
  zlib and deltas behave like on source code rather than on random bytes.

History: a root commit, two more commits, the tag ``v1.0.0`` (the *old* tag),
six commits, the tag ``v1.8.0`` (the *recent* tag), three commits, ``main``
(HEAD). Files are added, edited (3-15% of their lines replaced, inserted or
deleted, size-neutral on average so that the newest version is not always the
biggest and git stores HEAD blobs as deltas too) and deleted along the way, with
probabilities chosen so that

* old -> HEAD (the *far* switch) rewrites about 70% of HEAD's files
  (25% added after the old tag, the rest changed) and deletes ~8%,
* recent -> HEAD (the *near* switch) rewrites about a third (5% added, 29%
  changed) and deletes ~2%;
* about half of HEAD's blobs end up stored as deltas (git.git: 65%): half the
  files have more than one version, and an edit is as likely to shrink a file
  as to grow it, so git's biggest-version-as-base choice often falls on an
  older version.

Why ``git fast-import``: one process builds every blob, tree and commit from a
stream, 10-100x faster than a work tree plus ``git add``/``commit`` per commit.
Why ``git repack -adF --window=50 --depth=50`` afterwards (``repack=True``): fast-import only
deltas a blob against the previous blob it wrote, while a real repository's
pack (after ``gc``) holds delta chains chosen across the whole history; window
50 finds the versions of a path (they sort next to each other by name hash) at
a fraction of ``gc --aggressive``'s window 250 time.

Determinism: only ``random.Random(seed)`` draws, fixed author/committer dates
and names, so the same ``(files, seed)`` gives the same commit ids on every
machine. ``with_history=False`` writes the same HEAD tree as a single commit
(no tags): the fast variant for tests that need only a tree.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
from array import array
from operator import itemgetter

__all__ = ["GENERATOR_VERSION", "OLD_TAG", "RECENT_TAG", "HEAD_BRANCH", "make_sample_repo"]

# Part of the bench's cache key: bump whenever the output for a given
# (files, seed) changes.
GENERATOR_VERSION = 2

OLD_TAG = "v1.0.0"
RECENT_TAG = "v1.8.0"
HEAD_BRANCH = "main"

_POOL_LINES = 1 << 15
_EPOCH = 1_600_000_000
_IDENT = b"Sample Author <sample@example.invalid>"

# Commit numbers of each era (see the module docstring).
_PRE = (1, 2)
_OLD_AT = 2
_MID = (3, 4, 5, 6, 7, 8)
_RECENT_AT = 8
_LATE = (9, 10, 11)
_NCOMMITS = 12

# Like git.git's: attributes that cost a lookup per path but convert nothing on
# LF content (eol=lf), as in most real projects.
_GITATTRIBUTES = b"""\
* whitespace=!indent,trail,space
*.[ch] whitespace=indent,trail,space diff=cpp
*.sh whitespace=indent,trail,space text eol=lf
*.py diff=python
*.md diff=markdown
*.go diff=golang
*.rs diff=rust
*.html diff=html
*.bin binary
"""

_EXTS = [
    (".c", 20), (".h", 12), (".py", 10), (".js", 6), (".txt", 8), (".md", 6), (".sh", 5),
    (".json", 4), (".rs", 5), (".go", 5), (".html", 3), ("", 4), (".yml", 3), (".S", 2),
]


def _syllables(rng: random.Random) -> list[str]:
    cons = "bcdfghjklmnprstvwz"
    vows = "aeiou"
    return sorted({rng.choice(cons) + rng.choice(vows) + rng.choice(["", "n", "r", "s", "t", "x"])
                   for _ in range(400)})


def _words(rng: random.Random, n: int) -> list[str]:
    syl = _syllables(rng)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        w = "".join(rng.choice(syl) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _line_pool(rng: random.Random, words: list[str]) -> list[bytes]:
    """Lines that look enough like code: indentation, identifiers, punctuation."""
    punct = [" = ", "(", ", ", ");", " {", "}", " + ", "->", ".", " == ", " /* ", " */", ": ", "[", "]"]
    # Drawn in bulk (choices with k=...): a draw per word costs seconds.
    counts = rng.choices(range(10), (8, 10, 10, 10, 10, 10, 10, 10, 10, 10), k=_POOL_LINES)
    indents = rng.choices((0, 4, 8, 12, 16), (2, 2, 2, 1, 1), k=_POOL_LINES)
    total = sum(counts)
    ws = rng.choices(words, k=total)
    seps = rng.choices(punct + [" "], [1] * len(punct) + [len(punct) * 3 // 2], k=total)
    pool = []
    at = 0
    for n, ind in zip(counts, indents, strict=True):
        if n == 0:
            pool.append(b"\n")
            continue
        parts = [" " * ind]
        for k in range(at, at + n):
            parts.append(ws[k])
            parts.append(seps[k])
        at += n
        pool.append(("".join(parts).rstrip() + "\n").encode())
    return pool


class _File:
    __slots__ = ("path", "mode", "kind", "lines", "data", "born", "dies", "edits")

    def __init__(self, path: str, mode: int, kind: str) -> None:
        self.path = path
        self.mode = mode
        self.kind = kind  # "text", "binary", "link"
        self.lines: array | None = None
        self.data: bytes = b""
        self.born = 0
        self.dies: int | None = None
        self.edits: list[int] = []


class _Generator:
    def __init__(self, files: int, seed: int) -> None:
        self.rng = rng = random.Random(f"sample-repo/{seed}")
        self.words = _words(rng, 3000)
        self.pool = _line_pool(rng, self.words)
        self.avg_line = sum(map(len, self.pool)) / len(self.pool)
        self.nfiles = files
        self.dirs = self._make_dirs(max(8, round(files / 17)))
        self.files: list[_File] = []
        self._names: dict[str, set[str]] = {d: set() for d in self.dirs}
        for d in self.dirs:
            if d:
                parent, _, name = d.rpartition("/")
                self._names[parent].add(name)

    # -- layout ---------------------------------------------------------------
    def _make_dirs(self, n: int) -> list[str]:
        rng = self.rng
        dirs = [""]
        depth = {"": 0}
        names: dict[str, set[str]] = {"": set()}
        tops = max(4, min(14, n // 20))
        while len(dirs) < n + 1:
            if len(dirs) <= tops:
                parent = ""
            else:
                parent = dirs[rng.randrange(1, len(dirs))]
                if depth[parent] >= 6:
                    parent = ""
            while True:
                name = rng.choice(self.words)[:12]
                if name not in names[parent]:
                    break
            names[parent].add(name)
            path = f"{parent}/{name}" if parent else name
            dirs.append(path)
            depth[path] = depth[parent] + 1
            names[path] = set()
        return dirs

    def _unique_name(self, d: str, ext: str) -> str:
        taken = self._names[d]
        rng = self.rng
        while True:
            name = rng.choice(self.words) + ext
            if name not in taken:
                taken.add(name)
                return f"{d}/{name}" if d else name
            ext = f"{rng.randint(0, 99)}{ext}"

    # -- content ---------------------------------------------------------------
    def _text(self, size: int) -> array:
        n = 0 if size == 0 else max(1, round(size / self.avg_line))
        rnd = self.rng.random
        return array("H", [int(rnd() * _POOL_LINES) for _ in range(n)])

    def _edit_text(self, lines: array, grow: bool = False) -> array:
        rng = self.rng
        out = list(lines)
        if not out:
            return array("H", [rng.randrange(_POOL_LINES) for _ in range(rng.randint(1, 20))])
        # 3-15% of the lines, but at most 200 edits: a multi-MB file changes
        # like a changelog (a few hundred lines), not by 15% of itself.
        for _ in range(min(200, max(1, round(len(out) * rng.uniform(0.03, 0.15))))):
            r = rng.random()
            pos = rng.randrange(len(out) + 1)
            if grow and r < 0.6:
                pos = len(out) - rng.randrange(min(len(out), 40) + 1)
                out[pos:pos] = [rng.randrange(_POOL_LINES) for _ in range(rng.randint(1, 30))]
            elif r < 0.5 and pos < len(out):
                out[pos] = rng.randrange(_POOL_LINES)
            elif r < 0.7 or len(out) < 4:
                out[pos:pos] = [rng.randrange(_POOL_LINES) for _ in range(rng.randint(1, 4))]
            else:
                del out[pos : pos + rng.randint(1, 4)]
        return array("H", out)

    def _edit_binary(self, data: bytes) -> bytes:
        rng = self.rng
        buf = bytearray(data)
        for _ in range(rng.randint(3, 12)):
            pos = rng.randrange(max(1, len(buf) - 4096))
            n = rng.randint(16, 4096)
            buf[pos : pos + n] = rng.randbytes(n)
        return bytes(buf)

    def content(self, f: _File) -> bytes:
        if f.kind == "text":
            lines = f.lines
            if not lines:
                return b""
            if len(lines) == 1:
                return self.pool[lines[0]]
            return b"".join(itemgetter(*lines)(self.pool))
        return f.data

    # -- plan -----------------------------------------------------------------
    def plan(self) -> None:
        """Decide every file's path, kind, birth, edits and death."""
        rng = self.rng
        n = self.nfiles - 1  # and .gitattributes
        n_big = min(4, n // 250) + n // 20000
        n_links = 4 + self.nfiles // 5000
        n_die_mid = round(0.08 * n)
        n_die_late = round(0.02 * n)
        total = n + n_die_mid + n_die_late
        weights = [rng.paretovariate(1.1) for _ in self.dirs]
        weights[0] = sum(weights) / 150  # the top level holds ~0.7%: README, Makefile, ...
        where = rng.choices(self.dirs, weights, k=total)
        exts = [e for e, _ in _EXTS]
        ext_w = [w for _, w in _EXTS]
        mu = math.log(4096)
        regular: list[_File] = []
        for i in range(total):
            big = i < n_big
            ext = (".log" if i % 2 == 0 else ".bin") if big else rng.choices(exts, ext_w)[0]
            mode = 0o100755 if rng.random() < 0.25 else 0o100644
            if big:
                mode = 0o100644
            f = _File(self._unique_name(where[i], ext), mode, "binary" if big and i % 2 else "text")
            if big:
                size = int(rng.uniform(1.5, 6.0) * 1024 * 1024)
            elif rng.random() < 0.01:
                size = 0
            else:
                size = min(400_000, int(rng.lognormvariate(mu, 1.1)))
            if f.kind == "text":
                f.lines = self._text(size)
            else:
                f.data = rng.randbytes(size)
            self._fate(f, i, n, n_die_mid, big)
            regular.append(f)
        links = []
        for _ in range(n_links):
            target = rng.choice(regular[n_big:n])  # alive at HEAD
            d = rng.choice(self.dirs)
            link = _File(self._unique_name(d, ""), 0o120000, "link")
            link.data = _relative(target.path, d).encode()
            link.edits = [rng.choice(_MID)] if rng.random() < 0.3 else []
            links.append(link)
        attrs = _File(".gitattributes", 0o100644, "binary")
        attrs.data = _GITATTRIBUTES
        self._names[""].add(".gitattributes")
        self.files = [attrs, *regular, *links]

    def _fate(self, f: _File, i: int, n: int, n_die_mid: int, big: bool) -> None:
        """Birth, edits and death such that the switches rewrite the intended shares."""
        rng = self.rng
        pick = rng.random
        if big:
            # Every multi-MB file exists at the old tag; the text ones grow in every
            # era, the binary ones change once between the tags.
            f.edits = [1, rng.choice(_MID), rng.choice(_MID[3:]), rng.choice(_LATE)] if f.kind == "text" \
                else [rng.choice(_MID)]
            f.edits = sorted(set(f.edits))
            return
        if i >= n:  # deleted along the way
            f.dies = rng.choice(_MID) if i < n + n_die_mid else rng.choice(_LATE)
            if pick() < 0.3:
                f.edits = [rng.choice(_PRE)]
            return
        edits: set[int] = set()
        u = pick()
        if u < 0.05:  # added after the recent tag
            f.born = rng.choice(_LATE)
            return
        if u < 0.25:  # added between the tags, maybe edited before the recent tag
            f.born = rng.choice(_MID[:-1])
            if pick() < 0.5:
                edits.add(rng.choice([c for c in _MID if c > f.born]))
        if f.born == 0:
            for c in _PRE:
                if pick() < 0.45:
                    edits.add(c)
            if pick() < 0.43:  # changed between the tags
                edits.update(rng.sample(_MID, rng.choice((1, 1, 2))))
        if pick() < 0.31:  # changed after the recent tag
            edits.update(rng.sample(_LATE, rng.choice((1, 1, 2))))
        f.edits = sorted(edits)

    # -- stream ----------------------------------------------------------------
    def commit_events(self) -> list[list[tuple[str, _File]]]:
        events: list[list[tuple[str, _File]]] = [[] for _ in range(_NCOMMITS)]
        for f in self.files:
            events[f.born].append(("add", f))
            for c in f.edits:
                events[c].append(("edit", f))
            if f.dies is not None:
                events[f.dies].append(("delete", f))
        return events

    def apply(self, kind: str, f: _File) -> None:
        if kind != "edit":
            return
        if f.kind == "text":
            f.lines = self._edit_text(f.lines, grow=f.path.endswith(".log"))
        elif f.kind == "binary":
            f.data = self._edit_binary(f.data)
        else:
            target = self.rng.choice([g for g in self.files[1 : self.nfiles // 2] if g.kind == "text"])
            f.data = _relative(target.path, f.path.rpartition("/")[0]).encode()


def _relative(target: str, from_dir: str) -> str:
    return os.path.relpath(target, from_dir or ".")


def _git(repo: str, *args: str, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C")
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        env.pop(k, None)
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, **kw)


def make_sample_repo(
    path: str | os.PathLike[str],
    files: int = 5000,
    seed: int = 1,
    with_history: bool = True,
    *,
    bare: bool = True,
    repack: bool = True,
) -> dict:
    """Create the sample repository at ``path`` (which must not exist or be empty).

    Returns ``{"path", "head", "old", "recent", "tags", "commits", "files",
    "executables", "symlinks", "big_files", "dirs"}``: ``head`` is the branch
    HEAD names (``main``), ``old``/``recent`` the two tags (None without
    history), ``commits`` maps ``head``/``old``/``recent`` to commit ids.
    ``bare=False`` gives a repository with an empty work tree and no index
    (``git checkout -f`` or our coordinator fills it).
    """
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    if os.listdir(path):
        raise FileExistsError(f"{path} is not empty")
    _git(path, "init", "-q", "-b", HEAD_BRANCH, *(["--bare"] if bare else []), ".")
    gen = _Generator(files, seed)
    gen.plan()
    events = gen.commit_events()

    # When the repack below rewrites everything anyway (-F: recompress, recompute
    # deltas), fast-import need not compress nor delta: that halves the time. Without
    # the repack its pack is what readers get, so it is made as git would make it.
    fast = ["-c", "pack.compression=0", "fast-import", "--depth=0"] if repack else ["fast-import"]
    proc = subprocess.Popen(
        ["git", *fast, "--quiet", "--done"], cwd=path, stdin=subprocess.PIPE,
        env=dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull),
    )
    out = proc.stdin
    assert out is not None
    ref = f"refs/heads/{HEAD_BRANCH}".encode()

    def commit(mark: int, when: int, message: bytes, changes: list[tuple[str, _File]]) -> None:
        out.write(b"commit %s\nmark :%d\n" % (ref, mark))
        stamp = b"%d +0000" % (_EPOCH + when * 86400)
        out.write(b"author %s %s\ncommitter %s %s\n" % (_IDENT, stamp, _IDENT, stamp))
        out.write(b"data %d\n%s\n" % (len(message), message))
        for kind, f in changes:
            if kind == "delete":
                out.write(b"D %s\n" % f.path.encode())
                continue
            data = gen.content(f)
            out.write(b"M %o inline %s\ndata %d\n" % (f.mode, f.path.encode(), len(data)))
            out.write(data)
            out.write(b"\n")

    try:
        if with_history:
            for c, changes in enumerate(events):
                for kind, f in changes:
                    gen.apply(kind, f)
                commit(c + 1, c, b"commit %d of the sample history" % c, changes)
                if c == _OLD_AT:
                    out.write(b"reset refs/tags/%s\nfrom :%d\n\n" % (OLD_TAG.encode(), c + 1))
                elif c == _RECENT_AT:
                    out.write(b"reset refs/tags/%s\nfrom :%d\n\n" % (RECENT_TAG.encode(), c + 1))
        else:
            alive: dict[str, _File] = {}
            for changes in events:
                for kind, f in changes:
                    gen.apply(kind, f)
                    if kind == "delete":
                        alive.pop(f.path, None)
                    else:
                        alive[f.path] = f
            commit(1, _NCOMMITS - 1, b"the sample tree", [("add", f) for f in alive.values()])
        out.write(b"done\n")
        out.close()
    except BrokenPipeError:
        pass
    if proc.wait() != 0:
        raise RuntimeError(f"git fast-import failed with exit code {proc.returncode}")

    if repack:
        _git(path, "repack", "-adFq", "--window=50", "--depth=50")
        _git(path, "prune-packed")
    heads = {"head": _git(path, "rev-parse", HEAD_BRANCH).stdout.decode().strip()}
    if with_history:
        for key, tag in (("old", OLD_TAG), ("recent", RECENT_TAG)):
            heads[key] = _git(path, "rev-parse", tag).stdout.decode().strip()
    alive_files = [f for f in gen.files if f.dies is None]
    regular = [f for f in alive_files if f.kind != "link"]
    return {
        "path": path,
        "head": HEAD_BRANCH,
        "old": OLD_TAG if with_history else None,
        "recent": RECENT_TAG if with_history else None,
        "tags": {"old": OLD_TAG, "recent": RECENT_TAG} if with_history else {},
        "commits": heads,
        "files": len(regular),
        "executables": sum(1 for f in regular if f.mode == 0o100755),
        "symlinks": len(alive_files) - len(regular),
        "big_files": sum(1 for f in regular if f.path.endswith((".log", ".bin")) and
                         len(gen.content(f)) >= 1024 * 1024),
        "dirs": len(gen.dirs) - 1,
    }
