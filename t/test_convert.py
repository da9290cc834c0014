"""Content conversions byte-identical to git 2.39: the worker-level differential.

The corpus (``t/helper/convert_corpus.py``: structured edge cases plus seeded
random ones) is written into a repository as blobs; every text is packed as
a checkout item with each ``crlf_action`` (0..7), with and without
``ident``, and the UTF-8 texts also with a ``working_tree_encoding``. The
same batch goes to ``git checkout--worker`` and to our helper, once per
``core.autocrlf`` x ``core.eol`` setting (3 x 3), each setting handed over a
different way: ``GIT_CONFIG_PARAMETERS`` (both quoting styles),
``GIT_CONFIG_COUNT``, a global config file, and the config of a second
repository that borrows the objects through ``objects/info/alternates``; the
blobs are loose in some settings and packed in others. Then every encoding
name with every UTF-8 text, the settings as people spell them, and a SHA-256
repository. Results must be identical: exit status, stderr (git's "failed to
encode" errors, in order), every item's status, and the bytes of every file.

``t2083`` checks the same corpus out with real git, alone and driving our
helper; ``test_convert_stream.py`` covers blobs large enough to stream.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import git
from convert_corpus import (
    ENCODINGS,
    KEY_ENCODINGS,
    encoding_texts,
    eol_contents,
    ident_contents,
    unique,
)

from git_checkout_helper.pktline import FLUSH, FLUSH_PKT, PktReader, pkt_line
from git_checkout_helper.wire import REQUEST_LAYOUTS, RESULT_BASE, PcItem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HELPER = os.path.join(ROOT, ".venv", "bin", "git-checkout--helper")
CRLF_ACTIONS = range(8)  # enum convert_crlf_action: UNDEFINED .. AUTO_CRLF
CONFIGS = [(a, e) for a in ("true", "false", "input") for e in ("lf", "crlf", "native")]
CONFIG_MODES = ["params", "params-old", "count", "global", "repo"]

# ---------------------------------------------------------------------------
# Repository, items and workers


def base_env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), GIT_CONFIG_NOSYSTEM="1",
               LC_ALL="C.UTF-8")
    return env


def write_blobs(repo: str, contents: list[bytes], scratch: str) -> list[str]:
    """Store each content as a loose blob, unconverted; their hex ids."""
    os.makedirs(scratch, exist_ok=True)
    paths = []
    for i, data in enumerate(contents):
        p = os.path.join(scratch, f"b{i}")
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    out = git(repo, "hash-object", "-w", "--no-filters", "--stdin-paths", input="\n".join(paths).encode())
    oids = out.decode().split()
    assert len(oids) == len(contents)
    return oids


class Case:
    __slots__ = ("path", "content", "oid", "crlf", "ident", "enc")

    def __init__(self, path, content, oid, crlf, ident, enc):
        self.path, self.content, self.oid = path, content, oid
        self.crlf, self.ident, self.enc = crlf, ident, enc

    def __repr__(self) -> str:
        return (f"<{self.path.decode()} crlf={self.crlf} ident={self.ident} enc={self.enc} "
                f"content={self.content!r}>")


def pack_batch(cases: list[Case]) -> bytes:
    layout = REQUEST_LAYOUTS["git"]
    out = []
    for i, c in enumerate(cases):
        oid = bytes.fromhex(c.oid)
        item = PcItem(id=i, oid=oid, ce_mode=0o100644, name=c.path, crlf_action=c.crlf, ident=c.ident,
                      working_tree_encoding=c.enc.encode() if c.enc else None,
                      algo=1 if len(oid) == 20 else 2)
        out.append(pkt_line(item.encode(layout)))
    out.append(FLUSH_PKT)
    return b"".join(out)


def make_dirs(top: str, cases: list[Case]) -> None:
    os.makedirs(top)
    for d in sorted({os.path.dirname(c.path) for c in cases}):
        if d:
            os.makedirs(os.path.join(top, os.fsdecode(d)), exist_ok=True)


def start_worker(who: str, worktree: str, git_dir: str, env: dict, batch: str, out: str):
    cmd = ["git", "checkout--worker"] if who == "git" else [HELPER]
    env = dict(env, GIT_DIR=git_dir)
    with open(batch, "rb") as fin, open(out + ".out", "wb") as fout, open(out + ".err", "wb") as ferr:
        return subprocess.Popen(cmd, cwd=worktree, env=env, stdin=fin, stdout=fout, stderr=ferr)


def read_results(path: str) -> list[tuple[int, int]]:
    fd = os.open(path, os.O_RDONLY)
    try:
        reader = PktReader(fd)
        res = []
        while True:
            pkt = reader.read_pkt()
            if pkt is None or pkt == FLUSH:
                break
            res.append(RESULT_BASE.unpack_from(pkt))
        return res
    finally:
        os.close(fd)


def worktree_bytes(top: str, cases: list[Case]) -> list[bytes | None]:
    out = []
    for c in cases:
        try:
            with open(os.path.join(top, os.fsdecode(c.path)), "rb") as f:
                out.append(f.read())
        except FileNotFoundError:
            out.append(None)
    return out


def scratch_base(tmp_path_factory) -> str:
    """Work trees on tmpfs when there is one: thousands of small files."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        import tempfile

        return tempfile.mkdtemp(prefix="gch-convert-", dir=shm)
    return str(tmp_path_factory.mktemp("wt"))


def config_env(env: dict, mode: str, autocrlf: str, eol: str, where: str) -> dict:
    env = dict(env)
    if mode == "params":
        env["GIT_CONFIG_PARAMETERS"] = f"'core.autocrlf'='{autocrlf}' 'core.eol'='{eol}'"
    elif mode == "params-old":
        env["GIT_CONFIG_PARAMETERS"] = f"'Core.AutoCRLF={autocrlf}' 'core.EOL={eol}'"
    elif mode == "count":
        env.update(GIT_CONFIG_COUNT="2", GIT_CONFIG_KEY_0="core.autocrlf", GIT_CONFIG_VALUE_0=autocrlf,
                   GIT_CONFIG_KEY_1="core.eol", GIT_CONFIG_VALUE_1=eol)
    elif mode == "global":
        path = os.path.join(where, "global.config")
        with open(path, "w") as f:
            f.write(f"[core]\n\tautocrlf = {autocrlf}\n\teol = {eol}\n")
        env["GIT_CONFIG_GLOBAL"] = path
    return env


def diff_report(cases, git_bytes, our_bytes, limit=12) -> str:
    lines = []
    for c, g, o in zip(cases, git_bytes, our_bytes, strict=True):
        if g != o:
            lines.append(f"{c!r}\n    git:  {g!r}\n    ours: {o!r}")
            if len(lines) >= limit:
                break
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The differential


@pytest.fixture(scope="module")
def corpus_repo(tmp_path_factory):
    base = scratch_base(tmp_path_factory)
    home = os.path.join(base, "home")
    os.makedirs(home)
    env = base_env(home)
    repo = os.path.join(base, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True, env=env)
    texts = eol_contents() + ident_contents()
    texts = unique(texts)
    enc_texts = encoding_texts()
    all_contents = unique(texts + enc_texts)
    oids = write_blobs(repo, all_contents, os.path.join(base, "blobs"))
    oid_of = dict(zip(all_contents, oids, strict=True))
    # The same blobs in a pack (the usual case, read by packreader) ...
    packed = os.path.join(base, "packed")
    subprocess.run(["git", "init", "-q", packed], check=True, env=env)
    git(repo, "pack-objects", "-q", os.path.join(packed, ".git", "objects", "pack", "pack"),
        input="\n".join(oids).encode(), env=env)
    # ... and a repository that borrows them and holds its own config.
    alt = os.path.join(base, "alt")
    subprocess.run(["git", "init", "-q", alt], check=True, env=env)
    with open(os.path.join(alt, ".git", "objects", "info", "alternates"), "w") as f:
        f.write(os.path.join(repo, ".git", "objects") + "\n")
    yield {"base": base, "env": env, "repo": repo, "packed": packed, "alt": alt, "texts": texts,
           "enc_texts": enc_texts, "oid_of": oid_of}
    import shutil

    shutil.rmtree(base, ignore_errors=True)


def cases_for_setting(texts, enc_texts, oid_of, setting_index) -> list[Case]:
    """Every text x crlf_action x ident, and the key encodings x their texts x
    crlf_action x ident; paths spread over directories of <= 256 files."""
    cases = []

    def add(content, crlf, ident, enc):
        n = len(cases)
        path = b"d%03d/c%d" % (n // 256, n)
        cases.append(Case(path, content, oid_of[content], crlf, ident, enc))

    for content in texts:
        for crlf in CRLF_ACTIONS:
            for ident in (0, 1):
                add(content, crlf, ident, None)
    for enc in KEY_ENCODINGS:
        for content in enc_texts[:: 2 if setting_index % 2 else 1][:10]:
            for crlf in CRLF_ACTIONS:
                add(content, crlf, (crlf + setting_index) % 2, enc)
    return cases


def run_differential(info, cases: list[Case], name: str, env: dict, git_dir: str, cwd_base: str):
    batch = os.path.join(cwd_base, name + ".batch")
    with open(batch, "wb") as f:
        f.write(pack_batch(cases))
    procs = {}
    for who in ("git", "ours"):
        top = os.path.join(cwd_base, f"{name}.{who}")
        make_dirs(top, cases)
        procs[who] = (start_worker(who, top, git_dir, env, batch, top), top)
    rcs = {who: p.wait(timeout=300) for who, (p, _top) in procs.items()}
    res = {}
    for who, (_p, top) in procs.items():
        with open(top + ".err", "rb") as f:
            err = f.read()
        res[who] = (rcs[who], err, read_results(top + ".out"), worktree_bytes(top, cases))
    g, o = res["git"], res["ours"]
    assert g[0] == 0 and o[0] == 0, (g[0], g[1][:2000], o[0], o[1][:2000])
    assert len(g[2]) == len(cases)
    assert o[2] == g[2], "statuses differ"
    assert o[3] == g[3], "bytes differ:\n" + diff_report(cases, g[3], o[3])
    assert o[1].decode(errors="replace").splitlines() == g[1].decode(errors="replace").splitlines()
    return g


@pytest.mark.parametrize("setting", range(len(CONFIGS)), ids=[f"autocrlf={a}-eol={e}" for a, e in CONFIGS])
def test_worker_differential(corpus_repo, setting):
    """The corpus, under one core.autocrlf x core.eol setting, to git's worker
    and to ours: identical statuses, stderr and bytes."""
    info = corpus_repo
    autocrlf, eol = CONFIGS[setting]
    mode = CONFIG_MODES[setting % len(CONFIG_MODES)]
    where = os.path.join(info["base"], f"s{setting}")
    os.makedirs(where)
    env = config_env(info["env"], mode, autocrlf, eol, where)
    if mode == "repo":
        git_dir = os.path.join(info["alt"], ".git")
        git(info["alt"], "config", "core.autocrlf", autocrlf)
        git(info["alt"], "config", "core.eol", eol)
    else:  # loose objects, or the same in a pack
        git_dir = os.path.join(info["packed" if setting % 2 else "repo"], ".git")
    cases = cases_for_setting(info["texts"], info["enc_texts"], info["oid_of"], setting)
    g = run_differential(info, cases, "w", env, git_dir, where)
    # The differential compares real conversions: in every setting some items
    # change (CRLF_TEXT_CRLF, ident) and some AUTO items are left alone.
    changed = sum(1 for c, b in zip(cases, g[3], strict=True) if b is not None and b != c.content)
    assert changed > len(cases) // 5


def test_every_encoding(corpus_repo):
    """Every encoding name with every encoding text (crlf BINARY and TEXT_CRLF
    under autocrlf=true): identical bytes and identical error messages."""
    info = corpus_repo
    where = os.path.join(info["base"], "enc")
    os.makedirs(where)
    env = config_env(info["env"], "params", "true", "lf", where)
    cases = []
    for enc in ENCODINGS:
        for i, content in enumerate(info["enc_texts"]):
            n = len(cases)
            crlf = (1, 4, 2, 7)[i % 4]
            cases.append(Case(b"e%03d/c%d" % (n // 256, n), content, info["oid_of"][content], crlf,
                              i % 3 == 0, enc))
    g = run_differential(info, cases, "e", env, os.path.join(info["repo"], ".git"), where)
    assert b"failed to encode" in open(os.path.join(where, "e.git.err"), "rb").read()
    converted = sum(1 for c, b in zip(cases, g[3], strict=True) if b is not None and b != c.content)
    assert converted > len(cases) // 3


#: core.autocrlf / core.eol as people write them (git's boolean spellings,
#: "input" in any case, a key without a value, values git ignores).
SPELLINGS = [
    "'core.autocrlf'='yes'", "'core.autocrlf'='on' 'core.eol'='CRLF'", "'core.autocrlf'='1'",
    "'core.autocrlf'='0' 'core.eol'='Crlf'", "'core.autocrlf'='off' 'core.eol'='bogus'",
    "'core.autocrlf'='INPUT' 'core.eol'='crlf'", "'core.autocrlf'='True'", "'core.autocrlf'=''",
    "'core.autocrlf'", "'core.eol'='crlf' 'core.eol'='lf'", "'core.eol'='lf' 'core.eol'='crlf'",
    "'core.eol'", "'core.eol'=''", "'core.autocrlf'='false' 'core.eol'='NATIVE'",
]


@pytest.mark.parametrize("params", SPELLINGS)
def test_config_spellings(corpus_repo, params):
    """The helper reads core.autocrlf / core.eol as git's worker does."""
    info = corpus_repo
    where = os.path.join(info["base"], f"sp{SPELLINGS.index(params)}")
    os.makedirs(where)
    env = dict(info["env"], GIT_CONFIG_PARAMETERS=params)
    contents = [c for c in info["texts"] if b"\n" in c][:12]
    cases = [Case(b"c%d" % (i * 8 + crlf), c, info["oid_of"][c], crlf, 0, None)
             for i, c in enumerate(contents) for crlf in CRLF_ACTIONS]
    run_differential(info, cases, "sp", env, os.path.join(info["repo"], ".git"), where)


def test_sha256_repository(corpus_repo):
    """In a SHA-256 repository idents expand to 64 hex digits, as git's."""
    info = corpus_repo
    where = os.path.join(info["base"], "sha256")
    repo = os.path.join(where, "repo")
    os.makedirs(where)
    subprocess.run(["git", "init", "-q", "--object-format=sha256", repo], check=True, env=info["env"])
    contents = ident_contents(n_random=20)
    oids = write_blobs(repo, contents, os.path.join(where, "blobs"))
    assert len(oids[0]) == 64
    pairs = [(c, oid, crlf) for c, oid in zip(contents, oids, strict=True) for crlf in (1, 4, 5)]
    cases = [Case(b"c%d" % n, c, oid, crlf, 1, None) for n, (c, oid, crlf) in enumerate(pairs)]
    g = run_differential(info, cases, "s", info["env"], os.path.join(repo, ".git"), where)
    assert any(b"$Id: " + c.oid.encode() + b" $" in b for c, b in zip(cases, g[3], strict=True) if b)
