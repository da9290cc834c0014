"""The coordinator: plans a checkout, drives the helpers, writes index and HEAD.

The Python API is :func:`checkout`; the commands call :func:`run_checkout`
(switch, clone), :func:`run_checkout_all` (``--all``) and :func:`run_checkout_paths`.

* :mod:`.options`: options, report, errors;
* :mod:`.updates`: ``check_updates``: removals, directories, what the coordinator
  writes itself, the queue for the helpers, their results;
* :mod:`.switch`: switches and the clone checkout, and their messages;
* :mod:`.restore`: ``--all`` and pathspec restores.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ..plan import PlanError
from ..repository import Repository, RevisionError
from .options import CheckoutError, CheckoutOptions, CheckoutReport
from .restore import run_checkout_all, run_checkout_paths
from .switch import run_checkout
from .updates import Checkout

__all__ = [
    "Checkout",
    "CheckoutError",
    "CheckoutOptions",
    "CheckoutReport",
    "PlanError",
    "checkout",
    "run_checkout",
    "run_checkout_all",
    "run_checkout_paths",
]


def checkout(
    repo,
    target: str | None = None,
    *,
    workers: int | str | None = None,
    threshold: int | None = None,
    force: bool = False,
    progress: bool | None = False,
    quiet: bool = True,
    helper_cmd: Sequence[str] | None = None,
    environ: dict[str, str] | None = None,
) -> CheckoutReport:
    """Check out ``target`` (a branch, tag or commit; HEAD when None) in ``repo``.

    ``repo`` is a path or a :class:`dulwich.repo.Repo`. ``workers`` is the
    number of helper processes (None: ``checkout.workers``; 0: one per CPU;
    ``"auto"``: chosen from the filesystem, CPUs and items, see :mod:`autoworkers`);
    below ``threshold`` items (None: ``checkout.thresholdForParallelism``) the
    checkout runs in this process. Raises :class:`CheckoutError` or
    :class:`plan.PlanError` (local changes in the way) without touching
    anything in the latter case.
    """
    path = repo if isinstance(repo, str | bytes | os.PathLike) else repo.path
    r = Repository.open(os.fsdecode(path), environ if environ is not None else {})
    try:
        opts = CheckoutOptions(workers=workers, threshold=threshold, force=force, quiet=quiet,
                               progress=progress, helper_cmd=helper_cmd)
        try:
            return run_checkout(r, target, opts, err=sys.stderr)
        except RevisionError as e:  # the documented exceptions only
            raise CheckoutError(f"error: {e}", 1) from e
    finally:
        r.close()
