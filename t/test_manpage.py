"""Manual pages (manpage.py): committed pages are what the usage texts make,
setup.cfg installs them, `git parallel-checkout --help` opens them; --version."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from git_checkout_helper import __version__, cli
from git_checkout_helper.manpage import PAGES, pages, parse_usage

ROOT = Path(__file__).resolve().parent.parent


def test_committed_pages_are_current():
    for command, text in pages().items():
        assert (ROOT / "man" / "man1" / f"git-{command}.1").read_text() == text, \
            f"run `make man`: git-{command}.1 is stale"


def test_every_option_of_the_usage_is_in_the_page():
    _syn, options = parse_usage(cli.CHECKOUT_USAGE)
    spellings = [s for s, _ in options]
    for want in ("-j, --jobs <n>", "-b <branch>", "-B <branch>", "--orphan <new-branch>", "--detach",
                 "--no-track", "-f, --force"):
        assert want in spellings
    assert all(desc for _, desc in options)
    page = pages()["parallel-checkout"]
    for s in spellings:
        assert s.replace("-", "\\-") in page


def test_setup_cfg_installs_them_where_man_looks():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    files = cfg["options.data_files"]["share/man/man1"].split()
    assert sorted(files) == sorted(f"man/man1/git-{c}.1" for c in PAGES)


@pytest.mark.skipif(shutil.which("man") is None, reason="no man(1)")
def test_git_help_opens_our_page(git_env, tmp_path):
    bindir = os.path.dirname(sys.executable)
    if not os.path.exists(os.path.join(bindir, "..", "share", "man", "man1", "git-parallel-checkout.1")):
        pytest.skip("the man pages are not installed next to this interpreter (make venv)")
    env = dict(git_env, PATH=os.pathsep.join([bindir, git_env.get("PATH", "")]), MANPAGER="cat", PAGER="cat",
               MANWIDTH="80")
    env.pop("MANPATH", None)
    for command in PAGES:
        argv = ["git", command, "--help"]
        p = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True)
        assert p.returncode == 0, p.stderr
        assert f"git-{command}" in p.stdout.decode() and "NAME" in p.stdout.decode()


def test_version(tmp_path):
    for main in (cli.checkout_main, cli.clone_main, cli.helper_main):
        p = subprocess.run([sys.executable, "-c", f"import sys; from git_checkout_helper import cli; "
                            f"sys.exit(cli.{main.__name__}(['--version']))"], capture_output=True, cwd=tmp_path)
        assert p.returncode == 0 and p.stdout.decode() == f"git-checkout-helper version {__version__}\n"
