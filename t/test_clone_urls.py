"""git parallel-clone against git clone: file:// URLs, plain paths, shallow sources, --depth,
--single-branch, --no-checkout, --origin, -b <tag>. Twins: the same source cloned by both,
then the same refs, config, shallow points, history, fsck, HEAD, reflog and work tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
UMASK = os.umask(0o022)
os.umask(UMASK)


def run(cmd, cwd, env, check=True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=check)


@pytest.fixture
def env(git_env):
    e = dict(git_env, PATH=f"{BIN}{os.pathsep}{git_env['PATH']}")
    return e


@pytest.fixture
def src(tmp_path, env):
    s = tmp_path / "src"
    run(["git", "init", "-q", str(s)], tmp_path, env)
    for i in range(1, 6):
        (s / "f").write_text(f"{i}\n")
        (s / f"g{i}").write_text("x\n")
        run(["git", "add", "."], s, env)
        run(["git", "commit", "-qm", f"c{i}"], s, env)
    run(["git", "branch", "b2", "HEAD~2"], s, env)
    run(["git", "tag", "v1", "HEAD~1"], s, env)
    run(["git", "tag", "-a", "-m", "annotated", "atip", "HEAD"], s, env)
    return s


def view(repo: Path, env, name: str) -> dict:
    def out(*args, check=True):
        r = run(["git", *args], repo, env, check=check)
        return (r.returncode, r.stdout.replace(name, "X"), r.stderr.replace(name, "X"))

    shallow = repo / ".git" / "shallow"
    packed = repo / ".git" / "packed-refs"
    return {
        "refs": out("show-ref", check=False),
        # Annotated tags peeled (their ^{} lines), and packed-refs as git writes it.
        "peeled": out("show-ref", "-d", check=False),
        "packed-refs": packed.read_bytes() if packed.exists() else None,
        "config": out("config", "-l", "--local"),
        "shallow": sorted(set(shallow.read_text().split())) if shallow.exists() else None,
        "log": out("log", "--format=%H %s", "--all", check=False),
        "fsck": out("fsck", "--no-progress", check=False)[0],
        "head": out("rev-parse", "--symbolic-full-name", "HEAD", check=False),
        "reflog": out("log", "-g", "--format=%H %gs", "HEAD", check=False),
        "index": (repo / ".git" / "index").exists(),
        "status": out("status", "--porcelain", check=False),
        "files": sorted(p.name for p in repo.iterdir() if p.name != ".git"),
        # The git directory's layout and modes (templates copied as copy_file makes them).
        "gitdir": sorted((str(p.relative_to(repo / ".git")), p.lstat().st_mode)
                         for p in (repo / ".git").rglob("*") if "objects" not in p.parts),
    }


def twins(tmp_path, env, *args, quiet: bool = True) -> tuple[dict, dict]:
    """git clone and ours of the same source, with the same exit code and
    messages (``quiet``: with -q; else "done." and the rest in their order)."""
    g, o = tmp_path / "g", tmp_path / "o"
    q = ["-q"] if quiet else []
    rg = run(["git", "clone", *q, *args, str(g)], tmp_path, env, check=False)
    ro = run(["git-parallel-clone", *q, *args, str(o)], tmp_path, env, check=False)
    assert (ro.returncode, ro.stderr.replace(str(o), "X")) == (rg.returncode, rg.stderr.replace(str(g), "X"))
    if not g.exists():  # refused: nothing left behind either
        assert not o.exists()
        return {}, {}
    return view(o, env, str(o)), view(g, env, str(g))


def object_links(repo: Path) -> set[int]:
    out = set()
    for root, _dirs, files in os.walk(repo / ".git" / "objects"):
        for f in files:
            if not f.endswith((".idx", ".rev")) and "info" not in root:
                out.add(os.stat(os.path.join(root, f)).st_nlink)
    return out


def test_file_url_is_a_transport_and_recorded_as_given(tmp_path, env, src):
    url = f"file://{src}"
    ours, theirs = twins(tmp_path, env, url)
    assert ours == theirs
    assert f"remote.origin.url={url}\n" in ours["config"][1]
    assert object_links(tmp_path / "o") == {1}  # nothing hard-linked to the source
    assert ours["reflog"][1].strip().endswith(f"clone: from {url}")


def test_plain_path_keeps_local_hard_links(tmp_path, env, src):
    ours, theirs = twins(tmp_path, env, str(src))
    assert ours == theirs
    assert f"remote.origin.url={src}\n" in ours["config"][1]
    assert object_links(tmp_path / "o") == object_links(tmp_path / "g") and 1 not in object_links(tmp_path / "o")


@pytest.mark.parametrize("depth", ["1", "2", "4"])
def test_depth_over_file_url(tmp_path, env, src, depth):
    ours, theirs = twins(tmp_path, env, "--depth", depth, f"file://{src}")
    assert ours == theirs
    assert ours["shallow"] and ours["fsck"] == 0


def test_depth_without_single_branch(tmp_path, env, src):
    ours, theirs = twins(tmp_path, env, "--depth", "1", "--no-single-branch", f"file://{src}")
    assert ours == theirs


def test_depth_on_a_plain_path_is_ignored_with_git_warning(tmp_path, env, src):
    ours, theirs = twins(tmp_path, env, "--depth", "1", str(src))
    assert ours == theirs and ours["shallow"] is None


@pytest.mark.parametrize("how", ["path", "url", "url-depth"])
def test_shallow_source_gives_a_working_shallow_clone(tmp_path, env, src, how):
    shal = tmp_path / "shal"
    run(["git", "clone", "-q", "--depth", "3", f"file://{src}", str(shal)], tmp_path, env)
    source = {"path": [str(shal)], "url": [f"file://{shal}"], "url-depth": ["--depth", "2", f"file://{shal}"]}
    ours, theirs = twins(tmp_path, env, *source[how])
    assert ours == theirs
    assert ours["shallow"] and ours["fsck"] == 0 and ours["log"][0] == 0


@pytest.mark.parametrize("args", [["--single-branch", "-b", "b2"], ["--single-branch"], ["-b", "b2"],
                                  ["-b", "v1"], ["--single-branch", "-b", "v1"], ["-o", "up"], ["-n"],
                                  ["-n", "-o", "up", "-b", "b2"], ["-o", "up", "-b", "nosuch"]])
@pytest.mark.parametrize("kind", ["path", "url"])
def test_branch_origin_single_branch_no_checkout(tmp_path, env, src, args, kind):
    """Also: a tag's own refspec with --single-branch, the detached-HEAD
    advice a clone on a tag gives even with -q, the remote's name in the
    message for a branch it lacks."""
    ours, theirs = twins(tmp_path, env, *args, str(src) if kind == "path" else f"file://{src}")
    assert ours == theirs


@pytest.mark.parametrize("args", [[], ["-q"], ["--single-branch"], ["-n"], ["-b", "v1"],
                                  ["--single-branch", "-b", "b2"], ["advice off"]])
@pytest.mark.parametrize("at", ["b2", "no branch"])
@pytest.mark.parametrize("kind", ["path", "url"])
def test_a_source_on_a_detached_head(tmp_path, env, src, args, at, kind):
    """guess_remote_head: a source whose HEAD is detached at a branch's
    commit is cloned on that branch (its remote HEAD and --single-branch
    refspec that branch's); at no branch, the clone is detached there too,
    with git's advice first, no branch made and no refspec with
    --single-branch."""
    run(["git", "checkout", "-q", "--detach", "b2" if at == "b2" else "v1"], src, env)
    if args == ["advice off"]:
        args, env = [], dict(env, GIT_CONFIG_PARAMETERS="'advice.detachedhead=false'")
    ours, theirs = twins(tmp_path, env, *args, str(src) if kind == "path" else f"file://{src}", quiet=False)
    assert ours == theirs
    if args == []:
        want = "refs/heads/b2" if at == "b2" else "HEAD"
        assert ours["head"][1].strip() == want


@pytest.mark.parametrize("default", [None, "b2", "master", "by name"])
@pytest.mark.parametrize("args", [[], ["--single-branch"], ["--single-branch", "-b", "b2"]])
def test_which_branch_a_detached_head_is_taken_for(tmp_path, env, src, default, args):
    """Branches at the detached HEAD's commit (aa, b2, and master but in
    the "by name" case): guess_remote_head takes init.defaultBranch's
    first, then master, then the first by name; with --single-branch -b b2
    the remote HEAD is guessed among the branch taken."""
    run(["git", "branch", "aa", "b2"], src, env)
    run(["git", "checkout", "-q", "--detach", "b2"], src, env)
    if default != "by name":
        run(["git", "branch", "-f", "master", "b2"], src, env)
    if default in ("b2", "master"):
        env = dict(env, GIT_CONFIG_PARAMETERS=f"'init.defaultbranch={default}'")
    ours, theirs = twins(tmp_path, env, *args, str(src), quiet=False)
    assert ours == theirs
    if args == []:
        want = {None: "master", "by name": "aa"}.get(default, default)
        assert ours["head"][1].strip() == f"refs/heads/{want}"



@pytest.mark.parametrize("args", [[], ["-q"], ["-n"], ["--single-branch"], ["--single-branch", "-b", "b2"]])
@pytest.mark.parametrize("kind", ["path", "url"])
def test_a_source_whose_head_names_no_branch(tmp_path, env, src, args, kind):
    """A source with branches whose HEAD is unborn: git warns that the
    remote HEAD names no ref (after "done.", not with --no-checkout) and
    checks nothing out; with --single-branch nothing is taken at all, so it
    is "an empty repository" (before "done."), with no remote-tracking
    branch and no refspec; but a -b takes its branch, checked out, and
    nothing is said."""
    run(["git", "symbolic-ref", "HEAD", "refs/heads/nope"], src, env)
    ours, theirs = twins(tmp_path, env, *args, str(src) if kind == "path" else f"file://{src}", quiet=False)
    assert ours == theirs
    if "-b" in args:
        assert ours["head"][1].strip() == "refs/heads/b2" and ours["files"]
    else:
        assert ours["head"][2] and not ours["files"]  # (HEAD unborn: nothing checked out)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("kind", ["path", "url"])
def test_refs_peeled_as_git_peels_them(tmp_path, env, src, packed, kind):
    """The clone's packed-refs as git writes it, byte for byte, each
    annotated tag with its peeled id: from the source's own packed-refs
    (``packed``: git's file knows every ref's peeling) or from the objects
    (loose refs), a tag of a tag peeled to the commit; a loose ref wins
    over its stale packed line."""
    run(["git", "tag", "-a", "-m", "of a tag", "nested", "atip"], src, env)
    if packed:
        run(["git", "pack-refs", "--all"], src, env)
        # Then a loose ref over its packed one (the branch moved since), as after any gc.
        run(["git", "commit", "-q", "--allow-empty", "-m", "after pack-refs"], src, env)
    ours, theirs = twins(tmp_path, env, str(src) if kind == "path" else f"file://{src}")
    assert ours == theirs
    assert ours["peeled"][1].count("^{}") == 2


def test_a_sha256_source_gives_a_sha256_clone(tmp_path, env):
    """The repository made for a sha256 source is git's: format version 1,
    extensions.objectFormat, refs (a peeled tag among them) and packed-refs
    with 64-digit ids, then the same checkout."""
    s = tmp_path / "s256"
    run(["git", "init", "-q", "--object-format=sha256", str(s)], tmp_path, env)
    (s / "f").write_text("x\n")
    run(["git", "add", "f"], s, env)
    run(["git", "commit", "-qm", "c"], s, env)
    run(["git", "tag", "-a", "-m", "t", "v1"], s, env)
    ours, theirs = twins(tmp_path, env, str(s))
    assert ours == theirs
    assert "extensions.objectformat=sha256" in ours["config"][1] and ours["peeled"][1].count("^{}") == 1


@pytest.mark.parametrize("quiet", [True, False])
def test_an_empty_source_gives_its_unborn_branch(tmp_path, env, quiet):
    """An empty repository cloned: HEAD names the source's unborn branch
    (not ``init.defaultBranch``), no packed-refs, git's warning (before
    "done.")."""
    run(["git", "init", "-q", "-b", "trunk", str(tmp_path / "empty")], tmp_path, env)
    ours, theirs = twins(tmp_path, env, str(tmp_path / "empty"), quiet=quiet)
    assert ours == theirs
    assert (tmp_path / "o" / ".git" / "HEAD").read_text() == "ref: refs/heads/trunk\n"


def test_a_local_clone_imports_no_dulwich_repository(tmp_path, env, src):
    """A ``--local`` clone makes the repository, links the objects and
    writes the refs itself: dulwich's repository, config and refs modules
    (about 45 ms of imports, a tenth of a clone of git.git) are never loaded."""
    r = run([sys.executable, "-X", "importtime", str(BIN / "git-parallel-clone"), "-q", str(src), str(tmp_path / "o")],
            tmp_path, env)
    loaded = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert {"git_checkout_helper.clone", "git_checkout_helper.checkout"} <= loaded
    assert not loaded & {"dulwich.repo", "dulwich.config", "dulwich.refs", "dulwich.object_store"}


@pytest.mark.parametrize("ref", ["refs/heads/broken", "refs/tags/broken"])
def test_a_broken_ref_fails_the_clone_as_git(tmp_path, env, src, ref):
    """A ref whose file holds no id: git's clone dies naming the ref it
    would write ("has a null OID") and leaves nothing; so does ours. A
    symbolic ref to nothing is left out by both."""
    (src / ".git" / ref).write_text("garbage\n")
    g = run(["git", "clone", "-q", str(src), str(tmp_path / "g")], tmp_path, env, check=False)
    o = run(["git-parallel-clone", "-q", str(src), str(tmp_path / "o")], tmp_path, env, check=False)
    assert (o.returncode, o.stderr) == (g.returncode, g.stderr) and g.returncode == 128
    assert "has a null OID" in o.stderr and not (tmp_path / "o").exists()
    (src / ".git" / ref).write_text("ref: refs/heads/nowhere\n")
    ours, theirs = twins(tmp_path, env, str(src))
    assert ours == theirs


def test_template_files_get_modes_as_git_copies_them(tmp_path, env, src):
    """A template file is made 0777 or 0666 by whether it has an executable
    bit (``copy_file``), less the umask: not with the template's own mode."""
    tpl = tmp_path / "tpl"
    (tpl / "hooks").mkdir(parents=True)
    for name, mode in (("hooks/private-hook", 0o700), ("hooks/odd", 0o610), ("note", 0o600)):
        (tpl / name).write_text(name)
        (tpl / name).chmod(mode)
    ours, theirs = twins(tmp_path, dict(env, GIT_TEMPLATE_DIR=str(tpl)), str(src))
    assert ours == theirs
    modes = dict(ours["gitdir"])
    assert (modes["hooks/private-hook"] & 0o777, modes["note"] & 0o777) == (0o777 & ~UMASK, 0o666 & ~UMASK)


def test_bad_depth(tmp_path, env, src):
    r = run(["git-parallel-clone", "--depth", "0", f"file://{src}", str(tmp_path / "o")], tmp_path, env,
            check=False)
    g = run(["git", "clone", "--depth", "0", f"file://{src}", str(tmp_path / "g")], tmp_path, env, check=False)
    assert (r.returncode, r.stderr) == (g.returncode, g.stderr)
    assert not (tmp_path / "o").exists()
