"""What one checkout is asked to do and what it reports: options, report, errors."""

from __future__ import annotations

from collections.abc import Sequence

from ..autoworkers import AutoWorkers
from ..config import online_cpus
from ..errors import CheckoutError
from ..record import Record, field

__all__ = ["CheckoutError", "CheckoutOptions", "CheckoutReport"]


class CheckoutOptions(Record, kw_only=True):
    """Settings of one checkout; ``None`` means "from the repository config"."""

    workers: int | str | None = None  # "auto": chosen per checkout (autoworkers.py)
    threshold: int | None = None
    force: bool = False
    quiet: bool = False
    progress: bool | None = None  # None: when stderr is a terminal
    helper_cmd: Sequence[str] | None = None
    test_workers: str | None = None  # GIT_TEST_CHECKOUT_WORKERS, handed in by the CLI
    #: Start our own helpers by forking the coordinator (fast) rather than by
    #: exec'ing ``python -m git_checkout_helper checkout--helper``.
    fork_helpers: bool = True
    online_cpus: int = field(default_factory=online_cpus)
    #: I/O threads in each helper (``--threads K``, ``checkout.helperThreads``);
    #: None: the setting, or checkout.workers=auto's choice.
    helper_threads: int | None = None
    #: ``--ignore-other-worktrees``: switch to a branch another worktree has checked out.
    ignore_other_worktrees: bool = False
    #: Ticks before the progress meter starts (``GIT_PROGRESS_DELAY``, git's 2);
    #: ``--progress`` does not change it, as in git.
    progress_delay: int = 2
    #: ``--[no-]recurse-submodules``; None: ``submodule.recurse`` (see :mod:`submodule`).
    recurse_submodules: bool | None = None
    #: Terminal width for the meter (``$COLUMNS``); None: asked of the terminal.
    columns: int | None = None


class CheckoutReport(Record):
    """What a checkout did (returned by the API, printed as JSON with -v)."""

    written: int = 0
    removed: int = 0
    parallel_items: int = 0
    sequential_items: int = 0
    workers: int = 1
    collided: list[str] = []
    failed: list[str] = []
    #: checkout.workers=auto: what was decided, and from what.
    auto_workers: AutoWorkers | None = None
    #: Batches sent to helpers (one per helper with the static split) and
    #: I/O threads in each helper (checkout.distribution, checkout.helperThreads).
    batches: int = 0
    helper_threads: int = 1
    #: The items went to the helpers while the rest were still prepared
    #: (:meth:`updates.Checkout.streams`).
    streamed: bool = False
    #: A switch's preload (:mod:`preload`): its workers, and the entries
    #: they found up to date.
    preload_workers: int = 0
    preloaded: int = 0
    #: The coordinator's own lstats and unlinks in flight at once
    #: (:mod:`iopool`; 0: one at a time, as git).
    coordinator_threads: int = 0
