"""The helper's main loop: ``builtin/checkout--worker.c``'s ``worker_loop``.

Reads items until a flush, and only then writes them: git's coordinator sends
every batch to every worker before it reads a single result, so a worker that
answered early could fill its stdout pipe while the coordinator is still
blocked writing to its stdin. Results go out in the order the items came, one
pkt-line each, then a flush.

Beyond git's worker, after the flush the helper reads again: another batch is
handled the same way, and end of input at a batch boundary ends it with status
0. git's coordinator closes the pipe after the flush, so it sees no difference;
our coordinator uses it to hand out more work (dynamic distribution).

Results are buffered and flushed in bursts (every ``RESULT_BURST`` results or
``RESULT_LATENCY`` seconds), trading one write() per item for timely progress.

Nothing on stdin is trusted (t/test_hostile_wire.py, t/test_paths.py):

* a batch that is not well formed (framing, lengths that lie, a special
  packet inside a batch, an ``algo`` or ``crlf_action`` no git sends) is
  refused whole with one ``fatal:`` line and exit 128, before anything of it
  is written; git's worker BUG()s on some of these, and on an unknown
  crlf_action or algo it writes anyway: a value outside the enum means the
  bytes are not the struct we think (dialect mismatch, corruption);
* a well-formed item that cannot be written safely is FAILED on its own with
  one error line, as git does for a missing object: an unsafe path
  (``verify_item_path``) or a mode that is not a regular file (git's worker
  creates the file and then aborts on an assertion);
* ids are echoed as they came (out of order, duplicated): checking them is
  the coordinator's job, as in git;
* leading directories are proven real again for every batch, since the
  coordinator may change the tree between batches.
"""

from __future__ import annotations

import time

from .entry import CheckoutState, write_in_full, write_pc_item
from .pktline import FLUSH, FLUSH_PKT, PktLineError, PktReader, pkt_line
from .wire import (
    RESULT_BASE,
    PcItemStatus,
    RequestLayout,
    StatLayout,
    WireError,
    decode_item,
    encode_written,
)

__all__ = ["HelperTerminated", "ProtocolError", "raise_terminated", "read_batch", "serve"]

RESULT_BURST = 256
RESULT_LATENCY = 0.02
_WRITTEN = PcItemStatus.PC_ITEM_WRITTEN


class ProtocolError(Exception):
    """Malformed input from the coordinator; a one-line message."""


class HelperTerminated(BaseException):
    """Raised by the helper's SIGTERM/SIGHUP handler, so the item being written
    is removed on the way out (see ``write_pc_item``); carries the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_terminated(signum: int, frame) -> None:
    """Signal handler: unwind through the writer's cleanup."""
    raise HelperTerminated(signum)


def read_batch(reader: PktReader, layout: RequestLayout, default_algo: int) -> list | None:
    """Read items up to a flush; None at end of input before any byte of a batch."""
    items = []
    try:
        while True:
            pkt = reader.read_pkt()
            if pkt is None:
                if not items and reader.at_eof():
                    return None
                raise ProtocolError(
                    f"end of input before flush (after {len(items)} items)"
                )
            if pkt == FLUSH:
                return items
            if isinstance(pkt, int):
                raise ProtocolError(f"unexpected special packet {pkt:04x} in a batch")
            items.append(decode_item(pkt, layout, default_algo))
    except (PktLineError, WireError) as e:
        raise ProtocolError(str(e)) from None


def serve(
    in_fd: int,
    out_fd: int,
    state: CheckoutState,
    layout: RequestLayout,
    stat_layout: StatLayout,
    default_algo: int,
) -> int:
    """Serve batches until end of input; returns the number of items handled."""
    reader = PktReader(in_fd)
    handled = 0
    while True:
        items = read_batch(reader, layout, default_algo)
        if items is None:
            return handled
        # The coordinator may have changed the tree since the last batch (it
        # resolves collisions in between): prove leading dirs real again.
        state.forget_dirs()
        out: list[bytes] = []
        last = time.monotonic()
        for item in items:
            status, st = write_pc_item(item, state)
            if status == _WRITTEN:
                res = encode_written(item.id, st, stat_layout)
            else:
                res = RESULT_BASE.pack(item.id, status)
            out.append(pkt_line(res))
            if len(out) >= RESULT_BURST or time.monotonic() - last > RESULT_LATENCY:
                write_in_full(out_fd, b"".join(out))
                out.clear()
                last = time.monotonic()
        out.append(FLUSH_PKT)
        write_in_full(out_fd, b"".join(out))
        handled += len(items)

