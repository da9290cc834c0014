"""Manual pages for ``git parallel-checkout``, ``git parallel-clone`` and
``git checkout--helper``, made from the one source of their options: the
usage texts of :mod:`cli` (the lines ``-x, --long <arg>   what it does``),
with a description per command here.

``python -m git_checkout_helper.manpage <dir>`` writes ``<dir>/man1/*.1``;
``make man`` keeps ``man/man1`` (installed into ``share/man/man1`` by
setup.cfg's data_files, where ``man`` finds pages for commands on PATH)
in step, and a test checks that the committed pages are what this makes.
``git <command> --help`` is turned by git into ``git help <command>``,
which opens ``man git-<command>``.
"""

from __future__ import annotations

import os
import re
import sys

from . import __version__

__all__ = ["PAGES", "parse_usage", "render", "write_pages"]

DESCRIPTIONS = {
    "parallel-checkout": (
        "Check out a branch or commit, or restore paths, like git checkout, writing files with N helper "
        "processes that speak the protocol of git's own checkout--worker. Local changes and untracked "
        "files are protected as git protects them; the index is written as git writes it, then HEAD is "
        "moved. Branch options (-b, -B, --orphan, --detach, -t, --no-track, --guess) and revisions "
        "(-, @{-N}, ~N, ^N, ^{commit}, ^{tree}, <rev>:<path>) are read as git reads them; the "
        "post-checkout hook is run as git runs it.",
        "Settings read: checkout.workers, checkout.thresholdForParallelism, checkout.distribution, "
        "checkout.helperThreads, checkout.coordinatorThreads, checkout.guess, checkout.defaultRemote, core.symlinks, core.fileMode, "
        "core.checkStat, core.trustctime, core.abbrev, core.hooksPath, core.autocrlf, core.eol, "
        "branch.autoSetupMerge and the conversion attributes of .gitattributes.",
    ),
    "parallel-clone": (
        "Clone a repository and check out its work tree with N helper processes. The post-checkout "
        "hook runs afterwards as in git clone (old id all zeros, flag 1); its exit status is the "
        "command's.",
        "Settings read: as git parallel-checkout.",
    ),
    "checkout--helper": (
        "The helper process: reads checkout items from stdin in the pkt-line protocol of git's "
        "checkout--worker and writes the files, answering with their stat data on stdout. Real git "
        "can drive it in place of its own worker; git parallel-checkout starts it.",
        "--prefix=<dir>: write below <dir>. --wire=git|rfc: the request dialect. --threads=<k>: I/O "
        "threads per batch. --filters: items may name a smudge filter driver run by this helper.",
    ),
}

SUMMARIES = {
    "parallel-checkout": "Switch branches or restore files with parallel helpers",
    "parallel-clone": "Clone a repository and check it out with parallel helpers",
    "checkout--helper": "Write checkout items for git's parallel checkout",
}

_OPTION = re.compile(r"^ {4}(-\S.*?)(?: {2,}(\S.*))?$")


def parse_usage(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(synopsis lines, [(option spelling, description)]) from a usage text."""
    synopsis: list[str] = []
    options: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.startswith("usage: "):
            synopsis.append(line[len("usage: "):].strip())
        elif line.startswith("   or: "):
            synopsis.append(line[len("   or: "):].strip())
        elif line.startswith(" " * 20) and (options or synopsis) and not line.lstrip().startswith("-"):
            if options:
                spelling, desc = options[-1]
                options[-1] = (spelling, (desc + " " + line.strip()).strip())
            else:
                synopsis[-1] += " " + line.strip()
        else:
            m = _OPTION.match(line)
            if m:
                options.append((m.group(1).strip(), (m.group(2) or "").strip()))
    return synopsis, options


def _esc(s: str) -> str:
    s = s.replace("\\", "\\\\").replace("-", "\\-")
    return "\\&" + s if s.startswith((".", "'")) else s


def render(command: str, usage: str) -> str:
    """One page in man(7) format."""
    synopsis, options = parse_usage(usage)
    name = f"git-{command}"
    out = [
        f'.TH "{name.upper()}" "1" "" "git-checkout-helper {__version__}" "Git Manual"',
        ".SH NAME",
        f"{_esc(name)} \\- {_esc(SUMMARIES[command])}",
        ".SH SYNOPSIS",
    ]
    for s in synopsis:
        out += [".sp", ".nf", _esc(s), ".fi"]
    out.append(".SH DESCRIPTION")
    for para in DESCRIPTIONS[command]:
        out += [".sp", _esc(para)]
    if options:
        out.append(".SH OPTIONS")
        for spelling, desc in options:
            out += [".TP", f"\\fB{_esc(spelling)}\\fR", _esc(desc)]
    out += [".SH VERSION", _esc(f"git-checkout-helper {__version__}"), ""]
    return "\n".join(out)


def pages() -> dict[str, str]:
    from . import cli, helper

    return {
        "parallel-checkout": render("parallel-checkout", cli.CHECKOUT_USAGE),
        "parallel-clone": render("parallel-clone", cli.CLONE_USAGE),
        "checkout--helper": render("checkout--helper", helper.HELPER_USAGE + "\n"),
    }


PAGES = ("parallel-checkout", "parallel-clone", "checkout--helper")


def write_pages(top: str) -> list[str]:
    """Write ``<top>/man1/git-<command>.1`` for each command; the paths."""
    d = os.path.join(top, "man1")
    os.makedirs(d, exist_ok=True)
    written = []
    for command, text in pages().items():
        path = os.path.join(d, f"git-{command}.1")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write_pages(sys.argv[1] if len(sys.argv) > 1 else "man"):
        print(p)
