"""configfile: git's config parser, twin-tested against ``git config --file``.

Accepted files: every (section, subsection, name, value) as ``git config
--list --null`` lists it, and lookups (``get``, ``get_multivar``) as
``git config --get-all`` answers them. Malformed files: git's ``bad config
line N in file PATH``, line number included. The command line
(``GIT_CONFIG_COUNT``, ``GIT_CONFIG_PARAMETERS``): the settings and git's
``error:``/``fatal:`` lines. End to end: the coordinator's message for a
broken config, and that reading a repository's config leaves dulwich's
config module unimported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, git, run_git

from git_checkout_helper.config import ConfigError, get_exact, read_config
from git_checkout_helper.configfile import (
    ConfigFile,
    ConfigParseError,
    StackedConfig,
    parse_config,
    read_config_file,
    split_key,
)
from git_checkout_helper.discovery import NotAGitRepository, discover, setup_env
from git_checkout_helper.submodule import parse_gitmodules

BIN = Path(sys.executable).parent

#: Files git accepts, each with something tricky in it.
ACCEPTED = {
    "quotes": b'[a]\n\tb = "x;y#z" w\n\tc = x" y "z\n\td = "x" ""\n\te = "" x\n',
    "escapes": b'[a]\n\tb = \\t\\n\\b\\\\\\"\n\tc = "in\\tquotes\\" \\\\"\n',
    "continuation": b"[a]\n\tb = x \\\n    y\n\tc = \"x \\\n y\"\n\td = \\\n\te = z\n",
    "continuation at the end": b"[a]\n\tb = x\\",
    "comments after values": b"[a] ; c\n\tb = x # c\n\tc = x;c\n# whole line\n  ; indented\n\td = 1\n",
    "entries on the header line": b'[a] b = 1\n[c "d"]e\n[f]g=h',
    "legacy subsections": b"[A.B]\n\tc = 1\n[a.b.C]\n\td = 2\n[A.B \"C\"]\n\te = 3\n[.]\n\tf = 4\n[a.]\n\tg = 5\n",
    "case": b'[CoRe]\n\tBaRe = false\n[Remote "MiXed"]\n\tURL = x\n',
    "booleans without =": b"[a]\n\tb\n\tc   \n\td\t\n\te=\n",
    "empty values": b'[a]\n\tb =\n\tc = ""\n\td = "" \n\te =   ;x\n',
    "blanks in and around values": b'[a]\n\tb =   x  \t y   \n\tc = "  x  "  \n\td =\tx\ty\n\te = x "" \n',
    "BOM": b"\xef\xbb\xbf[a]\n\tb = 1\n",
    "BOM only": b"\xef\xbb\xbf",
    "CRLF": b"[a]\r\n\tb = x \r\n\tc = \"y \"  \r\n\td = z\\\r\n w\r\n",
    "a lone CR in a value": b"[a]\n\tb = x\ry\n\tc = x\r\n",
    "multivars": b"[a]\n\tb = 1\n\tB = 2\n[c]\n\td = 3\n[A]\n\tb = 4\n",
    "non-UTF-8 bytes": b'[a "\xff\xfe"]\n\tb = \xe9t\xe9\n',
    "NUL ends a value": b"[a]\n\tb = x\0y\n",
    "a variable before any section": b"x = 1\n[a]\n\ty = 2\n",
    "subsection escapes": b'[a "x\\"y\\\\z\\q"]\n\tb = 1\n[a\t"tab"]\n\tc = 2\n[a "sp ace]"]\n\td = 3\n',
    "no final newline": b"[a]\n\tb = 1",
    "empty file": b"",
    "names with digits and dashes": b"[a-1.B-2]\n\tc-3 = 1\n\tD4 = 2\n",
}

#: Files git refuses: git says which line.
REFUSED = {
    "unterminated quote": b'[a]\n\tb = "x\n',
    "text after a boolean": b"[a]\n\tb ; c\n",
    "unknown escape": b"[a]\n\tb = x\\q\n",
    "escaped CR": b"[a]\n\tb = x\\r\n",
    "newline in a subsection": b'[a "x\\\ny"]\n',
    "blank before ]": b'[a "x" ]\n\tb\n',
    "unquoted subsection": b"[a x]\n",
    "empty section": b"[]\n",
    "unterminated section": b"[a\n",
    "unterminated section at the end": b"[a",
    "a name starting with a digit": b"[a]\n\t1b = 1\n",
    "underscore in a name": b"[a]\n\tb_c = 1\n",
    "underscore in a section": b"[a_b]\n\tc = 1\n",
    "dot in a name": b"[a]\n\tb.c = 1\n",
    "partial BOM": b"\xef\xbbx",
    "no name": b"[a]\n\t= x\n",
    "after a continuation": b"[a]\n\tb = x \\\n y \\\n z\n\tc = 1\n[d\n",
    "after CRLF lines": b"[a]\r\n\tb = 1\r\n\tc = \"x\r\n",
    "a quote across lines after an escaped newline": b'[a]\n\tb = "x\\\ny\nz"\n',
    "CR in a name": b"[a]\n\tb\r= 1\n",
}


def _git_list(path: Path, env: dict) -> list[tuple[bytes, bytes | None]]:
    out = git(None, "config", "--file", str(path), "--list", "--null", env=env)
    entries = []
    for record in out.split(b"\0")[:-1]:
        key, nl, value = record.partition(b"\n")
        entries.append((key, value if nl else None))
    return entries


def _fields(key: bytes, value: bytes | None) -> tuple:
    """(section, subsection, name, value), as git's lookups split a key."""
    split = split_key(key)
    if split is None:
        return (None, None, key, value)
    section, name = split
    return (section[0], section[1] if len(section) > 1 else None, name, value)


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_entries_as_git_lists_them(case, tmp_path, git_env):
    path = tmp_path / "config"
    path.write_bytes(ACCEPTED[case])
    theirs = [_fields(k, v) for k, v in _git_list(path, git_env)]
    ours = [_fields(k, v) for k, v in parse_config(ACCEPTED[case], f"file {path}")]
    assert ours == theirs
    # What the file object keeps (a variable before any section: no lookup names it).
    kept = [f for f in theirs if f[0] is not None]
    assert [_fields(k, v) for k, v in read_config_file(str(path)).entries()] == kept


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_lookups_as_git_answers_them(case, tmp_path, git_env):
    """Every key, asked with its section and name in another case: git's
    ``--get-all`` values (a variable without ``=`` reads ``true`` here, as
    dulwich gave it; git prints it empty)."""
    path = tmp_path / "config"
    path.write_bytes(ACCEPTED[case])
    cf = read_config_file(str(path))
    listed = _git_list(path, git_env)
    for key in dict.fromkeys(k for k, _ in listed):
        split = split_key(key)
        if split is None:
            continue
        (section, *sub), name = split
        asked = (section.upper(), *sub)
        out = run_git(None, "config", "--file", str(path), "--null", "--get-all",
                      os.fsdecode(key.upper() if not sub else
                                  b".".join([section.upper(), *sub, name.upper()])), env=git_env)
        theirs = out.stdout.split(b"\0")[:-1]
        raw = [v for k, v in listed if k == key]
        expected = [b"true" if v is None else t for v, t in zip(raw, theirs, strict=True)]
        assert list(cf.get_multivar(asked, name.upper())) == expected
        assert cf.get(asked, name.upper()) == expected[-1]
        assert cf[asked][name.upper()] == expected[-1]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_errors_as_git_reports_them(case, tmp_path, git_env):
    path = tmp_path / "config"
    path.write_bytes(REFUSED[case])
    theirs = run_git(None, "config", "--file", str(path), "--list", env=git_env, check=False, text=True)
    assert theirs.returncode == 128
    with pytest.raises(ConfigParseError) as e:
        read_config_file(str(path))
    assert theirs.stderr == f"fatal: {e.value}\n"
    assert str(e.value).startswith(f"bad config line {e.value.linenr} in file ")


#: Pieces the random files are made of: every byte the parser treats specially.
PIECES = [b"[", b"]", b"[a]", b'[b "x"]', b"[c.D]", b" ", b"\t", b"\n", b"\r\n", b"\r", b"=", b'"', b"\\",
          b"\\n", b"\\t", b"\\b", b'\\"', b"\\\\", b"#", b";", b"a", b"B", b"1", b"-", b".", b"_",
          b"\xef\xbb\xbf", b"\xff", b"\0", b"k = v", b"\\\n", b"\\\r\n", b"\v"]


@pytest.mark.parametrize("seed", range(4))
def test_random_files_as_git_reads_them(seed, tmp_path, git_env):
    """Files made of random pieces (most after a section header): git's
    entries, or git's error line, for each."""
    import random

    rnd = random.Random(seed)
    path = tmp_path / "config"
    for _ in range(40):
        data = b"".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 24)))
        if rnd.random() < 0.7:
            data = b"[s]\n\tk =" + data
        path.write_bytes(data)
        theirs = run_git(None, "config", "--file", str(path), "--list", "--null", env=git_env, check=False)
        try:
            ours = parse_config(data, f"file {path}")
        except ConfigParseError as e:
            assert (theirs.returncode, theirs.stderr.decode()) == (128, f"fatal: {e}\n"), data
            continue
        assert theirs.returncode == 0, (data, theirs.stderr)
        assert ours == _git_list(path, git_env), data


def test_no_fallback_from_a_subsection(tmp_path, git_env):
    """dulwich's ``get`` falls back from ``[a "x"]`` to ``[a]``; git does not."""
    path = tmp_path / "config"
    path.write_bytes(b'[a]\n\tc = 2\n[a "x"]\n\tb = 1\n[a "X"]\n\td = 3\n[a.Y]\n\te = 4\n')
    cf = read_config_file(str(path))
    for key, section, name in [("a.x.c", (b"a", b"x"), b"c"), ("a.x.d", (b"a", b"x"), b"d"),
                               ("a.Y.e", (b"a", b"Y"), b"e")]:
        assert run_git(None, "config", "--file", str(path), "--get", key, env=git_env, check=False).returncode == 1
        with pytest.raises(KeyError):
            cf.get(section, name)
        assert get_exact(StackedConfig([cf]), section, name) is None
    assert cf.get((b"a", b"X"), b"d") == b"3"
    assert cf.get((b"a", b"y"), b"e") == b"4"  # the legacy form is lowercased whole, as git does
    assert list(StackedConfig([cf]).get_multivar((b"a", b"x"), b"c")) == []


def test_the_dulwich_shaped_api(tmp_path):
    path = tmp_path / "config"
    path.write_bytes(b'[core]\n\tBare = false\n\tflag\n[remote "o"]\n\tfetch = 1\n[core]\n\tbare = TRUE\n'
                     b'[remote "o"]\n\tfetch = 2\n\tyes = yes\n')
    cf = read_config_file(str(path))
    assert cf.path == str(path)
    assert cf.get(b"core", b"BARE") == cf.get((b"CORE",), "bare") == b"TRUE"
    assert cf.get_boolean(b"core", b"bare", False) is True
    assert cf.get_boolean(b"core", b"flag") is True and cf.get(b"core", b"flag") == b"true"
    assert cf.get_boolean(b"core", b"unset", None) is None
    assert list(cf.sections()) == [(b"core",), (b"remote", b"o")]
    assert list(cf.items((b"remote", b"o"))) == [(b"fetch", b"1"), (b"fetch", b"2"), (b"yes", b"yes")]
    assert list(cf.get_multivar((b"remote", b"o"), b"FETCH")) == [b"1", b"2"]
    assert cf.entries()[1] == (b"core.flag", None)  # git's NULL, kept
    with pytest.raises(KeyError):
        cf.get((b"remote", b"O"), b"fetch")  # a subsection's case counts
    with pytest.raises(KeyError):
        cf[(b"nosuch",)]
    cf.set((b"remote", b"o"), b"fetch", "3")
    assert list(cf.get_multivar((b"remote", b"o"), b"fetch")) == [b"3"]
    other = ConfigFile()
    other.set(b"core", b"bare", False)
    stacked = StackedConfig([other, cf])
    assert stacked.get(b"core", b"bare") == b"false"
    assert list(stacked.get_multivar(b"core", b"bare")) == [b"false", b"false", b"TRUE"]
    assert list(stacked.sections()) == [(b"core",), (b"remote", b"o")]
    with pytest.raises(KeyError):
        stacked.get(b"core", b"nosuch")


@pytest.mark.parametrize("value", [b"true", b"TRUE", b"False", b"yes", b"on", b"1", b"", b"0", b"2", b"off",
                                   b"No", b" yes ", b"maybe"])
def test_get_boolean_as_git_reads_a_bool(value, git_env, tmp_path):
    """get_boolean answers as ``git config --type=bool`` does; a value git
    calls a bad boolean is a ValueError."""
    path = tmp_path / "cfg"
    path.write_bytes(b"[a]\n\tb = " + value + b"\n")
    theirs = run_git(tmp_path, "config", "--file", str(path), "--type=bool", "a.b", env=git_env, check=False)
    ours = read_config_file(str(path))
    if theirs.returncode:
        with pytest.raises(ValueError, match="bad boolean config value"):
            ours.get_boolean((b"a",), b"b", None)
    else:
        assert ours.get_boolean((b"a",), b"b", None) is (theirs.stdout.strip() == b"true")


def test_includes_are_read_by_dulwich(tmp_path):
    (tmp_path / "other").write_bytes(b"[b]\n\tc = from-include\n")
    path = tmp_path / "config"
    path.write_bytes(b"[a]\n\tb = 1\n[Include]\n\tpath = other\n")
    cf = read_config_file(str(path))
    assert cf.get(b"b", b"c") == b"from-include"
    assert cf.get(b"a", b"b") == b"1"


def test_gitmodules_include_is_not_followed(tmp_path):
    (tmp_path / "other").write_bytes(b'[submodule "x"]\n\tpath = from-include\n')
    data = f'[include]\n\tpath = {tmp_path / "other"}\n[submodule "s"]\n\tpath = sub\n'.encode()
    assert parse_gitmodules(data) == {b"sub": b"s"}
    assert parse_gitmodules(b'[submodule "s"]\n\tpath = "sub\n') == {}


# --- the command line ---------------------------------------------------------

COMMAND_LINES = {
    "count": {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "A.Sub.B", "GIT_CONFIG_VALUE_0": " x ",
              "GIT_CONFIG_KEY_1": "a.sub.b", "GIT_CONFIG_VALUE_1": ""},
    "count with blanks": {"GIT_CONFIG_COUNT": " 1", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "1"},
    "empty count": {"GIT_CONFIG_COUNT": ""},
    "parameters": {"GIT_CONFIG_PARAMETERS": "'Core.AutoCRLF=input' 'a.b' 'c.D'='x y' 'e.f'= "
                                            "'g.h= i' ' j.k =v' 'x.it'\\''s.y'='q'\\!''"},
    "both": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "count",
             "GIT_CONFIG_PARAMETERS": "'a.b=parameters'"},
}

COMMAND_LINE_ERRORS = {
    "bogus count": {"GIT_CONFIG_COUNT": "x"},
    "blank count": {"GIT_CONFIG_COUNT": " "},
    "negative count": {"GIT_CONFIG_COUNT": "-1"},
    "huge count": {"GIT_CONFIG_COUNT": "99999999999999999999999"},
    "missing key": {"GIT_CONFIG_COUNT": "1"},
    "missing value": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b"},
    "empty key": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "", "GIT_CONFIG_VALUE_0": "1"},
    "no section": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "ab", "GIT_CONFIG_VALUE_0": "1"},
    "no name": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b.", "GIT_CONFIG_VALUE_0": "1"},
    "invalid key": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.1b", "GIT_CONFIG_VALUE_0": "1"},
    "newline in a key": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.x\ny.b", "GIT_CONFIG_VALUE_0": "1"},
    "bogus format": {"GIT_CONFIG_PARAMETERS": "'a.b=c"},
    "text after a value": {"GIT_CONFIG_PARAMETERS": "'a.b'='c'd"},
    "bogus parameter": {"GIT_CONFIG_PARAMETERS": "' =x'"},
    "invalid parameter key": {"GIT_CONFIG_PARAMETERS": "'a_b.c=1'"},
}


def _cmdline_entries(cf) -> list[tuple[bytes, bytes | None]]:
    return [] if cf is None else cf.entries()


@pytest.mark.parametrize("case", sorted(COMMAND_LINES))
def test_command_line_as_git_lists_it(case, tmp_path, git_env):
    (tmp_path / "empty").write_bytes(b"")
    env = dict(git_env, GIT_CONFIG_GLOBAL=str(tmp_path / "empty"), **COMMAND_LINES[case])
    theirs = _git_list_env(tmp_path, env)
    stack = read_config(None, env)
    cmdline = stack.backends[0] if stack.backends and stack.backends[0].path is None else None
    assert _cmdline_entries(cmdline) == theirs


def _git_list_env(cwd: Path, env: dict) -> list[tuple[bytes, bytes | None]]:
    out = git(cwd, "config", "--list", "--null", env=env)
    entries = []
    for record in out.split(b"\0")[:-1]:
        key, nl, value = record.partition(b"\n")
        entries.append((key, value if nl else None))
    return entries


@pytest.mark.parametrize("case", sorted(COMMAND_LINE_ERRORS))
def test_command_line_errors_as_git_reports_them(case, tmp_path, git_env):
    env = dict(git_env, **COMMAND_LINE_ERRORS[case])
    theirs = run_git(tmp_path, "config", "--list", env=env, check=False, text=True)
    assert theirs.returncode == 128
    with pytest.raises(ConfigError) as e:
        read_config(None, env)
    assert theirs.stderr == f"error: {e.value.error}\nfatal: {e.value}\n"


# --- end to end ---------------------------------------------------------------

def test_discovery_names_the_bad_line(make_repo, git_env):
    repo = make_repo()
    with open(repo.git_dir / "config", "ab") as f:
        f.write(b"[core]\n\tx = \"unterminated\n")
    with pytest.raises(NotAGitRepository) as e:
        discover(str(repo.path), env=setup_env(repo.env))
    theirs = run_git(repo.path, "rev-parse", "--git-dir", env=repo.env, check=False, text=True)
    assert theirs.returncode == 128
    assert theirs.stderr == f"fatal: {e.value}\n".replace(f"{repo.git_dir}/config", ".git/config")


def _commit(repo) -> None:
    (repo.path / "f").write_text("f\n")
    repo.git("add", "f")
    repo.git("commit", "-q", "-m", "one")
    repo.git("branch", "side")


def test_checkout_with_a_broken_repository_config(make_repo):
    """git's message and exit code (our path as we opened it: absolute)."""
    repo = make_repo()
    _commit(repo)
    with open(repo.git_dir / "config", "ab") as f:
        f.write(b"[core]\n\tbare = false\n\tx = a\\q\n")
    ours = subprocess.run([BIN / "git-parallel-checkout", "side"], cwd=repo.path, env=repo.env,
                          capture_output=True, text=True)
    theirs = run_git(repo.path, "checkout", "side", env=repo.env, check=False, text=True)
    assert (ours.returncode, theirs.returncode) == (128, 128)
    assert theirs.stderr.startswith("fatal: bad config line ")
    assert ours.stderr == theirs.stderr.replace(".git/config", f"{repo.git_dir}/config")


@pytest.mark.parametrize("broken", ["global", "command line"])
def test_checkout_with_a_broken_global_or_command_line(make_repo, broken):
    """The same bytes on stderr as git's, and 128."""
    repo = make_repo()
    _commit(repo)
    env = dict(repo.env)
    if broken == "global":
        with open(Path(env["HOME"]) / ".gitconfig", "ab") as f:
            f.write(b"[user]\n\tname = \"A\n")
    else:
        env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="checkout.1workers", GIT_CONFIG_VALUE_0="2")
    ours = subprocess.run([BIN / "git-parallel-checkout", "side"], cwd=repo.path, env=env,
                          capture_output=True, text=True)
    theirs = run_git(repo.path, "checkout", "side", env=env, check=False, text=True)
    assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr)
    assert theirs.returncode == 128 and theirs.stderr.startswith(("fatal: bad config line", "error: "))


def test_reading_a_repository_config_leaves_dulwich_config_unimported(make_repo):
    """A fresh interpreter: discovery and Repository.open read every config
    file without importing ``dulwich.config`` (about 20 ms of start-up)."""
    repo = make_repo()
    repo.git("config", "remote.origin.url", "https://example.com/x.git")
    code = textwrap.dedent("""
        import os, sys
        from git_checkout_helper.discovery import discover, setup_env
        from git_checkout_helper.repository import Repository
        env = dict(os.environ)
        dirs = discover(os.getcwd(), env=setup_env(env))
        repo = Repository.open(os.getcwd(), env)
        assert repo.config.get((b"remote", b"origin"), b"url") == b"https://example.com/x.git"
        assert repo.config.get_boolean((b"core",), b"bare", True) is False
        print(sorted(m for m in sys.modules if m.startswith("dulwich.config")))
    """)
    p = subprocess.run([sys.executable, "-c", code], cwd=repo.path, env=dict(repo.env, PYTHONPATH=str(ROOT)),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[]\n"
