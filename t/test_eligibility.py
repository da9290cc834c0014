"""Which regular files go to the helpers: ``is_eligible_for_parallel_checkout``
(``ParallelCheckout.item_room`` / ``eligible``): no filter driver (but one
marked ``filter.<name>.parallel`` when the helpers are ours), and an item
whose packet fits ``LARGE_PACKET_DATA_MAX`` (the fixed portion, the
working-tree-encoding's name, the path, and the helper's driver name).
"""

from __future__ import annotations

import io
import subprocess

import pytest

from git_checkout_helper.attributes import ConvAttrs, ConvertDriver
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.parallel import FIXED_PORTION_SIZE
from git_checkout_helper.checkout.updates import Checkout
from git_checkout_helper.pktline import LARGE_PACKET_DATA_MAX
from git_checkout_helper.repository import Repository

ROOM = LARGE_PACKET_DATA_MAX - FIXED_PORTION_SIZE


@pytest.fixture
def make_checkout(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    def make(*config: str, **opts) -> Checkout:
        for kv in config:
            key, value = kv.split("=", 1)
            subprocess.run(["git", "-C", str(tmp_path), "config", key, value], check=True)
        return Checkout(Repository.open(str(tmp_path), {}), CheckoutOptions(**opts), io.StringIO())

    return make


def _fits(co: Checkout, ca: ConvAttrs, extra: int) -> bool:
    return co.eligible(ca, b"x" * extra)


def test_an_item_fits_one_packet_or_stays_with_the_coordinator(make_checkout):
    co = make_checkout()
    plain = ConvAttrs(0, 0, None, None)
    assert co.item_room(plain) == (ROOM, None)
    assert _fits(co, plain, ROOM) and not _fits(co, plain, ROOM + 1)
    encoded = ConvAttrs(0, 0, None, b"UTF-16LE")
    assert co.item_room(encoded) == (ROOM - 8, None)
    assert _fits(co, encoded, ROOM - 8) and not _fits(co, encoded, ROOM - 7)


@pytest.mark.parametrize("helper_cmd", [None, ("git", "checkout--worker")])
def test_a_filtered_file_is_the_helpers_only_when_its_driver_is_marked_parallel(make_checkout, helper_cmd):
    co = make_checkout("filter.lfsish.smudge=cat", "filter.lfsish.parallel=true", "filter.plain.smudge=cat",
                       helper_cmd=helper_cmd)
    plain = ConvAttrs(0, 0, co.drivers[b"plain"], None)
    assert co.item_room(plain) == (-1, None) and not _fits(co, plain, 1)
    marked = ConvAttrs(0, 0, co.drivers[b"lfsish"], b"UTF-8")
    if helper_cmd is None:  # ours, started with --filters: the driver's name travels in the item
        assert co.item_room(marked) == (ROOM - 5 - 6, b"lfsish")
        assert _fits(co, marked, ROOM - 11) and not _fits(co, marked, ROOM - 10)
    else:  # maybe git's worker: every filtered file stays with the coordinator
        assert co.item_room(marked) == (-1, None)
    # A driver with nothing to run (only .parallel, or nothing set) filters nothing.
    assert co.item_room(ConvAttrs(0, 0, ConvertDriver(b"none"), None)) == (ROOM, None)
