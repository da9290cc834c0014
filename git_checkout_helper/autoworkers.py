"""``checkout.workers=auto``: how many helper processes, and I/O threads in
each, from what the work tree is on and what there is to write.

git has no ``auto`` (its ``git_config_int`` rejects the word: "bad numeric
config value"); it is our extension of ``get_parallel_checkout_configs``.
What git does give is the advice this table follows, from its documentation
of ``checkout.workers`` and the measurements published with parallel
checkout (git 2.32): parallel checkout "usually delivers better performance
for repositories located on SSDs or over NFS"; on spinning disks and on
machines with few cores the sequential checkout "often performs better";
on NFS / Amazon EFS the gains kept growing up to 16-64 workers. The
measurements taken here that shaped the table are in ``bench/README.md``
("Choosing the worker count"): a local filesystem is CPU-bound (inflate,
convert, Python's cost per file), where helpers win little on 2 CPUs and the
fastest of -j 1/2/4 changes from run to run; a latency-bound one (every
create, write, close and stat a round trip) wants many requests in flight,
up to what the server can serve, and threads carry them as well as
processes do, for less memory and fork time.

The decision (:func:`auto_workers`), for ``work`` = items plus, when the
total size is known, bytes in item-sized units (``ITEM_BYTES``):

* fewer than the threshold (an explicit ``checkout.thresholdForParallelism``
  or ``--threshold``; else git's 100, or 16 on a latency-bound filesystem,
  where two helpers already halve several milliseconds a file): sequential;
* ``nfs``, ``smb``, ``network``: 32 requests in flight (the middle of git's
  16-64), at least 8 items each; processes up to 4 per CPU, I/O threads in
  each for the rest (a helper there mostly waits);
* ``fuse``: 8 requests in flight per CPU (the daemon is a local process
  competing for the same CPUs: measured best near 16 on 2 CPUs), 4..64,
  split the same way;
* on those, twice as many when the coordinator makes no requests of its own
  while the helpers write (``coordinator_idle``: no index and an empty work
  tree, as in a clone): the table's figures are for the helpers beside the
  coordinator's own lstats and unlinks, which ask as many again
  (``checkout.coordinatorThreads``). Measured on the bench's 1 ms FUSE
  filesystem, 2 CPUs, two runs: a switch was fastest with 16 helpers and
  7-13% slower with 32, a clone fastest with 32 (13-17% faster than 16);
* ``local`` on a rotational device: sequential (git's advice: seeks); a
  virtual disk's flag is not taken for one (:func:`fsinfo.probe`);
* ``tmpfs``, ``local`` non-rotational, ``overlay``, ``unknown``: one helper
  per usable CPU (:func:`fsinfo.usable_cpus`: online, affinity, cgroup
  quota; busy CPUs count, as in git's ``online_cpus``: the scheduler
  gives each runnable helper its share, so on a loaded machine helpers
  still gain, as measured), at least 50 items each (git's threshold of 100
  over its 2-worker minimum); one thread.

The coordinator cannot know the blobs' sizes without reading every object
header (a pack index has no sizes), so it passes ``total_bytes=None`` and
the count of items decides; an API caller that knows the size may pass it.
"""

from __future__ import annotations

from .config import DEFAULT_THRESHOLD_FOR_PARALLELISM
from .fsinfo import FsInfo
from .record import Record

__all__ = ["AutoWorkers", "auto_workers", "requests_in_flight"]

#: Filesystems where a file costs round trips rather than CPU.
LATENCY_KINDS = frozenset({"nfs", "smb", "fuse", "network"})
#: Below this many items a latency-bound checkout is written in process.
LATENCY_THRESHOLD = 16
#: Requests in flight on a network filesystem (git's NFS numbers: 16-64).
NETWORK_CONCURRENCY = 32
#: Requests in flight per CPU on FUSE (its daemon shares our CPUs), and bounds.
FUSE_CONCURRENCY_PER_CPU = 8
FUSE_CONCURRENCY = (4, 64)
#: Helper processes per CPU on a latency-bound filesystem; threads beyond
#: (measured: 8 processes x 2 threads at least as fast as 16 processes).
LATENCY_PROCESSES_PER_CPU = 4
#: Items each request slot should get at least (a fork costs about a file).
LATENCY_ITEMS_PER_SLOT = 8
#: Items each helper should get at least on a CPU-bound filesystem.
LOCAL_ITEMS_PER_HELPER = DEFAULT_THRESHOLD_FOR_PARALLELISM // 2
#: Bytes that cost about as much as one more file: CPU-bound, ~16 KiB of
#: inflating is Python's per-file overhead (~100 us); latency-bound, a
#: write request carries up to 128 KiB (FUSE max_write, a common NFS wsize).
ITEM_BYTES = {"cpu": 16 << 10, "latency": 128 << 10}
#: More helpers than this buys nothing (checkout.MAX_WORKERS).
MAX_PROCESSES = 64
#: I/O threads per helper that auto chooses at most (helper.MAX_THREADS is what a helper accepts).
AUTO_MAX_THREADS = 16


class AutoWorkers(Record, kw_only=True):
    """One decision, with what it was made from (shown by ``-v`` and trace2)."""

    processes: int
    threads: int
    reason: str
    fs: str
    rotational: bool | None
    cpus: int
    idle_cpus: int
    items: int
    total_bytes: int | None
    threshold: int
    coordinator_idle: bool = False
    filesystem: FsInfo | None = None  # filled in by the coordinator


def requests_in_flight(fs_kind: str, cpus: int) -> int:
    """Requests worth keeping in flight together on a ``fs_kind``
    filesystem: 0 where each costs CPU rather than a round trip (a local
    disk, tmpfs), else the table's ``nfs``/``fuse`` figures. The helpers'
    processes and threads share them out (:func:`auto_workers`), and so do
    the coordinator's own lstats and unlinks (:mod:`iopool`)."""
    if fs_kind not in LATENCY_KINDS:
        return 0
    if fs_kind == "fuse":
        lo, hi = FUSE_CONCURRENCY
        return min(hi, max(lo, FUSE_CONCURRENCY_PER_CPU * max(1, cpus)))
    return NETWORK_CONCURRENCY


def auto_workers(fs_kind: str, rotational: bool | None, cpus: int, nr_items: int,
                 total_bytes: int | None = None, threshold: int | None = None,
                 idle_cpus: int | None = None, coordinator_idle: bool = False) -> AutoWorkers:
    """(processes, threads) for ``nr_items`` items on a ``fs_kind`` filesystem
    (:data:`fsinfo.KINDS`) with ``cpus`` CPUs this process may use, of
    which ``idle_cpus`` are idle (None: all); ``threshold`` is an explicit
    ``checkout.thresholdForParallelism`` (None: the table's own). Pure: the
    table of the module docstring.

    ``idle_cpus`` is for a caller that keeps CPUs for other work: a
    CPU-bound checkout then uses only those, a latency-bound one (whose
    helpers mostly wait) all of them. The coordinator passes none: busy
    CPUs count (see the module docstring). ``coordinator_idle``: the
    coordinator makes no requests while the helpers write (the table)."""
    cpus = max(1, cpus)
    idle = cpus if idle_cpus is None else max(1, min(idle_cpus, cpus))
    nr = max(0, nr_items)
    latency = fs_kind in LATENCY_KINDS
    if threshold is None:
        threshold = LATENCY_THRESHOLD if latency else DEFAULT_THRESHOLD_FOR_PARALLELISM
    work = nr
    if total_bytes:
        work += total_bytes // ITEM_BYTES["latency" if latency else "cpu"]

    def decide(processes: int, threads: int, why: str) -> AutoWorkers:
        processes = max(1, min(processes, MAX_PROCESSES, nr or 1))
        threads = max(1, min(threads, AUTO_MAX_THREADS))
        if processes == 1 and threads == 1:
            why = "sequential: " + why
        return AutoWorkers(processes=processes, threads=threads, reason=why, fs=fs_kind, rotational=rotational,
                           cpus=cpus, idle_cpus=idle, items=nr, total_bytes=total_bytes, threshold=threshold,
                           coordinator_idle=coordinator_idle)

    size = f" ({total_bytes} bytes)" if total_bytes else ""
    if work < threshold or nr < 2:
        return decide(1, 1, f"{nr} items{size} below the threshold of {threshold}")
    if latency:
        target = requests_in_flight(fs_kind, cpus)
        if fs_kind == "fuse":
            why = f"FUSE: {FUSE_CONCURRENCY_PER_CPU} requests in flight per CPU wanted ({cpus} CPUs)"
        else:
            why = f"{fs_kind} filesystem: latency-bound, {NETWORK_CONCURRENCY} requests in flight wanted"
        if coordinator_idle:
            target *= 2
            why += ", twice that with the coordinator idle (an empty work tree)"
        # (never more requests in flight than items: the bytes of big files
        # add round trips to a file, not files to write at once)
        slots = max(1, min(target, work // LATENCY_ITEMS_PER_SLOT, nr))
        processes = min(slots, LATENCY_PROCESSES_PER_CPU * cpus, MAX_PROCESSES, nr)
        threads = min(slots // processes, AUTO_MAX_THREADS)
        if processes * threads < target:
            why += f", {processes * threads} for {nr} items"
        if threads > 1:
            why += f" ({processes} processes of {threads} threads)"
        return decide(processes, threads, why)
    if fs_kind == "local" and rotational:
        return decide(1, 1, "rotational disk (git: sequential is often better on spinning disks)")
    helpers = min(idle, work // LOCAL_ITEMS_PER_HELPER)
    what = {"tmpfs": "memory filesystem", "local": "non-rotational disk", "overlay": "overlay",
            }.get(fs_kind, f"{fs_kind} filesystem")
    if fs_kind == "local" and rotational is None:
        what = "disk of unknown rotation"
    cpu_text = f"{cpus} CPU{'s' if cpus != 1 else ''}" if idle == cpus else \
        f"{idle} idle CPU{'s' if idle != 1 else ''} of {cpus}"
    if helpers <= 1:
        why = f"{what}: CPU-bound, {cpu_text}"
        if idle > 1:
            why += f", {nr} items are not worth a second helper"
        return decide(1, 1, why)
    return decide(helpers, 1, f"{what}: CPU-bound, one helper per CPU ({cpu_text})")
