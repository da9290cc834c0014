"""``--version`` and ``--help`` of our commands, as git's ``help.c`` answers them.

``git <command> --help`` is ``git help <command>``: the man page (installed
from manpage.py) shown by git itself; ``--version`` one line naming the
package. Shared by the coordinator's CLI and the helper program.
"""

from __future__ import annotations

import os
import sys

__all__ = ["open_manual", "version_line"]


def version_line() -> str:
    from . import __version__

    return f"git-checkout-helper version {__version__}\n"


def open_manual(usage: str) -> None:
    """``--help``: what git makes of ``git <command> --help``, i.e. ``git help
    <command>`` (the man page installed from manpage.py). Returns if git
    cannot be run (the caller prints the usage then)."""
    name = usage.split("\n", 1)[0].split()[2]  # "usage: git <name> ..."
    sys.stdout.flush()
    try:
        os.execvp("git", ["git", "help", name])
    except OSError:
        pass
