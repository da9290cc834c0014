"""Content conversion for the working tree, as git 2.39's ``convert.c`` does it.

A checkout worker is sent, per item, what ``convert_attrs`` resolved:
``crlf_action``, ``ident`` and ``working_tree_encoding`` (items with a
``filter=`` driver never reach a worker). git's ``write_pc_item_to_fd`` then
takes one of two routes, and so does this module, because the two do not
always produce the same bytes:

* **streamable** (``classify_conv_attrs`` says ``CA_CLASS_STREAMABLE``: no
  encoding, ``crlf_action`` not AUTO / AUTO_CRLF): the blob goes through
  ``get_stream_filter_ca``'s filters, chunk by chunk: :class:`IdentFilter`
  (``ident_filter``) when ``ident`` is set, then :class:`LfToCrlfFilter`
  (``lf_to_crlf_filter``) when ``output_eol`` is CRLF. Nothing is gathered
  about the whole content, so a blob of any size streams in bounded memory.
  The ident *filter* is not ``ident_to_worktree``: it consumes the byte that
  breaks a ``$Id`` (so ``$$Id$`` stays), it keeps holding ``$Id<x>`` when a
  ``$`` follows (so ``$Id $Id: x$`` is expanded whole), and it calls an
  ident foreign by its own rule (any of git's four spaces not followed by
  ``$``, after ``$Id: ``).
* **in core** (``CA_CLASS_INCORE``): ``convert_to_working_tree_ca`` on the
  whole blob: ``ident_to_worktree``, then ``crlf_to_worktree`` (with
  ``gather_stats`` and the AUTO family's safety rules), then
  ``encode_to_worktree``.

Statistics and rewrites use ``bytes.count`` / ``translate`` / ``replace``
and regular expressions (C speed) instead of byte loops, with the same
results as git's loops. An item that asks for nothing (:data:`PLAIN_ACTIONS`,
no ident, no encoding) costs no conversion work at all: its bytes are
written as they are read.

working-tree-encoding is :mod:`.encoding`'s.
"""

from __future__ import annotations

import re
from enum import IntEnum

from .encoding import EncodingError, encode_to_worktree

__all__ = [
    "CRLF_ACTIONS",
    "ConvertCrlfAction",
    "CA_CLASS_INCORE",
    "CA_CLASS_STREAMABLE",
    "NULL_FILTER",
    "PLAIN_ACTIONS",
    "EncodingError",
    "EolConfig",
    "IdentFilter",
    "LfToCrlfFilter",
    "classify_conv_attrs",
    "apply_filter",
    "convert_blob_to_worktree",
    "convert_to_working_tree",
    "crlf_to_worktree",
    "encode_to_worktree",
    "gather_stats",
    "get_stream_filter",
    "ident_to_worktree",
    "needs_conversion",
    "output_eol",
]


class ConvertCrlfAction(IntEnum):
    """``enum convert_crlf_action`` (convert.h)."""

    CRLF_UNDEFINED = 0
    CRLF_BINARY = 1
    CRLF_TEXT = 2
    CRLF_TEXT_INPUT = 3
    CRLF_TEXT_CRLF = 4
    CRLF_AUTO = 5
    CRLF_AUTO_INPUT = 6
    CRLF_AUTO_CRLF = 7


CRLF_ACTIONS = frozenset(int(a) for a in ConvertCrlfAction)
A = ConvertCrlfAction

# enum eol (convert.h); EOL_NATIVE is EOL_LF on this platform.
EOL_UNSET = 0
EOL_CRLF = 1
EOL_LF = 2
EOL_NATIVE = EOL_LF

# enum conv_attrs_classification, as far as a worker can see it (no drivers).
CA_CLASS_INCORE = 0
CA_CLASS_STREAMABLE = 3

_AUTO = frozenset((A.CRLF_AUTO, A.CRLF_AUTO_INPUT, A.CRLF_AUTO_CRLF))
# Actions whose output_eol does not depend on the configuration.
_EOL_CRLF_ACTIONS = frozenset((A.CRLF_TEXT_CRLF, A.CRLF_UNDEFINED, A.CRLF_AUTO_CRLF))
_EOL_LF_ACTIONS = frozenset((A.CRLF_TEXT_INPUT, A.CRLF_AUTO_INPUT))
_EOL_CONFIG_ACTIONS = frozenset((A.CRLF_TEXT, A.CRLF_AUTO))
# classify_conv_attrs: these need the whole content (gather_stats) first.
_INCORE_ACTIONS = frozenset((A.CRLF_AUTO, A.CRLF_AUTO_CRLF))
#: Actions that never change content (output_eol is not CRLF whatever the
#: configuration): with no ident and no encoding, the blob is written as is.
PLAIN_ACTIONS = frozenset((A.CRLF_BINARY, A.CRLF_TEXT_INPUT, A.CRLF_AUTO_INPUT))

# Bytes gather_stats counts as non-printable: controls other than BS, HT, ESC,
# FF, CR, LF; and DEL. NUL is among them (and also counted on its own).
_NONPRINTABLE = bytes(c for c in range(32) if c not in (8, 9, 10, 12, 13, 27)) + b"\x7f"


class EolConfig:
    """``core.autocrlf`` and ``core.eol`` as the worker reads them (config.c).

    ``autocrlf`` is ``"true"``, ``"false"`` or ``"input"``; ``eol`` is
    ``"lf"``, ``"crlf"``, ``"native"`` or ``None`` (unset, or a value git does
    not know, which git also treats as unset). Native is LF here.
    """

    __slots__ = ("autocrlf", "eol")

    def __init__(self, autocrlf: str = "false", eol: str | None = None) -> None:
        self.autocrlf = autocrlf
        self.eol = eol

    def __repr__(self) -> str:
        return f"EolConfig(autocrlf={self.autocrlf!r}, eol={self.eol!r})"

    def text_eol_is_crlf(self) -> bool:
        """``text_eol_is_crlf``: what TEXT and AUTO resolve to."""
        if self.autocrlf == "true":
            return True
        if self.autocrlf == "input":
            return False
        if self.eol == "crlf":
            return True
        return self.eol is None and EOL_NATIVE == EOL_CRLF


def output_eol(crlf_action: int, eol: EolConfig) -> int:
    """``output_eol``: the line ending an action asks for on checkout."""
    if crlf_action == A.CRLF_BINARY:
        return EOL_UNSET
    if crlf_action in _EOL_CRLF_ACTIONS:
        return EOL_CRLF
    if crlf_action in _EOL_LF_ACTIONS:
        return EOL_LF
    if crlf_action in _EOL_CONFIG_ACTIONS:
        return EOL_CRLF if eol.text_eol_is_crlf() else EOL_LF
    # git warns "illegal crlf_action" and returns core_eol; the wire layer
    # refuses such items before they get here.
    return EOL_CRLF if eol.eol == "crlf" else EOL_UNSET


def output_eol_is_crlf(crlf_action: int, eol: EolConfig) -> bool:
    return output_eol(crlf_action, eol) == EOL_CRLF


def classify_conv_attrs(crlf_action: int, encoding: bytes | None) -> int:
    """``classify_conv_attrs`` for a worker's item (it has no filter driver)."""
    if encoding:
        return CA_CLASS_INCORE
    if crlf_action in _INCORE_ACTIONS:
        return CA_CLASS_INCORE
    return CA_CLASS_STREAMABLE


def needs_conversion(crlf_action: int, ident: int, encoding: bytes | None, eol: EolConfig) -> bool:
    """Whether any step could change the content; False means write it as is."""
    return bool(ident or encoding) or output_eol_is_crlf(crlf_action, eol)


# ---------------------------------------------------------------------------
# In-core end-of-line conversion


class TextStat:
    """``struct text_stat``."""

    __slots__ = ("nul", "lonecr", "lonelf", "crlf", "printable", "nonprintable")


def gather_stats(buf: bytes) -> TextStat:
    """``gather_stats``, counted with C-speed bytes methods.

    Every byte is a CR, a LF, non-printable or printable; a CR directly
    followed by a LF counts once, as a CRLF; a final Ctrl-Z is not counted as
    non-printable (and, as in git, not as printable either).
    """
    s = TextStat()
    size = len(buf)
    crlf = buf.count(b"\r\n")
    cr = buf.count(b"\r")
    lf = buf.count(b"\n")
    nonprintable = size - len(buf.translate(None, _NONPRINTABLE))
    s.crlf = crlf
    s.lonecr = cr - crlf
    s.lonelf = lf - crlf
    s.nul = buf.count(b"\0")
    s.printable = size - cr - lf - nonprintable
    if size and buf[-1] == 0x1A:
        nonprintable -= 1
    s.nonprintable = nonprintable
    return s


def convert_is_binary(s: TextStat) -> bool:
    """``convert_is_binary``: lone CR, NUL, or more than 1/128 non-printable."""
    return bool(s.lonecr or s.nul or (s.printable >> 7) < s.nonprintable)


def will_convert_lf_to_crlf(s: TextStat, crlf_action: int) -> bool:
    """``will_convert_lf_to_crlf``, once ``output_eol`` is known to be CRLF."""
    if not s.lonelf:
        return False
    if crlf_action in _AUTO and (s.lonecr or s.crlf or convert_is_binary(s)):
        return False
    return True


def crlf_to_worktree(src: bytes, crlf_action: int, eol: EolConfig) -> bytes:
    """``crlf_to_worktree``: turn lone LFs into CRLF when the action asks."""
    if not src or output_eol(crlf_action, eol) != EOL_CRLF:
        return src
    if not will_convert_lf_to_crlf(gather_stats(src), crlf_action):
        return src
    # Every CRLF back to LF, then every LF to CRLF: lone CRs are untouched and
    # only LFs without a CR before them change, as in git's memchr loop.
    return src.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


# ---------------------------------------------------------------------------
# In-core ident


# What ident_to_worktree replaces: "$Id$", or "$Id:" + text without "$" or
# LF + "$" -- unless the text is foreign: a ' ' in it other than in its first
# or last position (git's memchr from one past "$Id:" up to before the last
# character). Scanning resumes after a "$" that starts no match, as git's does.
# (The patterns are compiled on first use, through re's cache: most
# checkouts have no ident item, and compiling the three took 0.7 ms of every
# start-up.)
_INCORE_IDENT = rb"\$Id(?:\$|:(?:[^$\n](?:[^$\n ]*[^$\n])?)?\$)"


def ident_to_worktree(src: bytes, oid_hex: bytes) -> bytes:
    """``ident_to_worktree``: expand keywords to ``$Id: <oid> $`` (in core).

    git hashes ``src`` for the id; ident is the first conversion, so ``src`` is
    the blob and its hash is the item's object id. A ``$Id: ...$`` whose
    closing ``$`` is past a newline is left alone, and so is a foreign one
    (see ``_INCORE_IDENT``). git first returns early when ``count_ident``
    finds nothing; that happens exactly when nothing here matches.
    """
    if b"$" not in src:
        return src
    return re.compile(_INCORE_IDENT).sub(b"$Id: " + oid_hex + b" $", src)


# ---------------------------------------------------------------------------
# Stream filters (get_stream_filter_ca)


class NullFilter:
    """``null_filter_singleton``: no conversion at all."""

    __slots__ = ()

    def feed(self, chunk: bytes) -> bytes:
        return chunk

    def finish(self) -> bytes:
        return b""


NULL_FILTER = NullFilter()


class LfToCrlfFilter:
    """``lf_to_crlf_filter``: every LF not preceded by a CR becomes CRLF.

    git's filter holds a trailing CR back until it sees the next byte; here a
    chunk is converted whole with ``replace`` and only a chunk that starts
    with LF after one that ended with CR needs care.
    """

    __slots__ = ("_cr",)

    def __init__(self) -> None:
        self._cr = False

    def feed(self, chunk: bytes) -> bytes:
        if not chunk:
            return chunk
        head = b""
        if self._cr and chunk[0] == 0x0A:
            head = b"\n"
            body = chunk[1:]
        else:
            body = chunk
        self._cr = chunk[-1] == 0x0D
        return head + body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")

    def finish(self) -> bytes:
        return b""


# is_foreign_ident: after "$Id: ", one of git's isspace characters (HT, LF,
# CR, SP) that is not directly followed by "$" (the string ends at a NUL).
_FOREIGN_SPACE = rb"[\t\n\r ](?!\$)"


def is_foreign_ident(left: bytes) -> bool:
    """``is_foreign_ident`` on the held ``$Id:...$`` (read as a C string)."""
    nul = left.find(b"\0")
    if nul != -1:
        left = left[:nul]
    if not left.startswith(b"$Id: "):
        return False
    return re.compile(_FOREIGN_SPACE).search(left, 5) is not None


class IdentFilter:
    """``ident_filter``: ``$Id$`` / ``$Id:...$`` -> ``$Id: <oid> $``, streaming.

    git's state machine (``ident_filter_fn``), run as one regular expression
    over each chunk (see ``_STREAM_IDENT`` for its rules) instead of byte by
    byte. What it leaves undecided at the end of a chunk -- a ``$`` (or a
    chain of ``$Id<x>``) whose fate depends on the next bytes, or a
    ``$Id:...`` still waiting for its ``$`` or LF -- is carried to the next
    chunk; at the end of the blob it is copied as it is, as git drains it.
    """

    __slots__ = ("_ident", "_carry", "_held")

    def __init__(self, oid_hex: bytes) -> None:
        self._ident = b"$Id: " + oid_hex + b" $"
        self._carry = b""  # an undecided match: "$", "$I", "$Id", a chain...
        self._held: list[bytes] | None = None  # "$Id:..." waiting for "$" or LF

    def feed(self, chunk: bytes) -> bytes:
        out: list[bytes] = []
        if self._carry:
            chunk = self._carry + chunk
            self._carry = b""
        self._scan(chunk, out, False)
        return b"".join(out)

    def finish(self) -> bytes:
        out: list[bytes] = []
        if self._held is not None:
            out.extend(self._held)
            self._held = None
        if self._carry:
            carry, self._carry = self._carry, b""
            self._scan(carry, out, True)
        return b"".join(out)

    def _scan(self, buf: bytes, out: list[bytes], final: bool) -> None:
        n = len(buf)
        pos = 0
        ident = self._ident
        held = self._held
        if held is not None:  # IDENT_SKIPPING from the last chunk: up to "$" or LF
            d = buf.find(b"$")
            nl = buf.find(b"\n", 0, d if d != -1 else n)
            if nl != -1:
                held.append(buf[: nl + 1])
                out.extend(held)
                pos = nl + 1
            elif d == -1:
                held.append(buf)
                return
            else:
                held.append(buf[: d + 1])
                left = b"".join(held)
                out.append(left if is_foreign_ident(left) else ident)
                pos = d + 1
            self._held = None
        emit = pos  # buf[emit:] is not written out yet
        for m in re.compile(_STREAM_IDENT, re.S | re.X).finditer(buf, pos):
            kind = m.lastgroup
            if kind is None:
                continue  # a "$" that swallows the next "$": copied as it is
            if kind == "exp":
                end = m.end()
                out.append(buf[emit : end - 4])  # a chain before "$Id$" stays
                out.append(ident)
                emit = end
            elif kind == "close":
                if not is_foreign_ident(m.group()):
                    out.append(buf[emit : m.start()])
                    out.append(ident)
                    emit = m.end()
            elif not final:  # "hold" or "end": unfinished at the end of buf
                start = m.start()
                out.append(buf[emit:start])
                if kind == "hold":
                    self._held = [buf[start:]]
                else:
                    self._carry = buf[start:]
                return
        out.append(buf[emit:])


# ident_filter_fn's state machine, as matches at the "$"s where it matters;
# text between matches is copied. A "$" starts a match attempt; then
# - the byte that breaks "$Id" is consumed with it: it matters only when it is
#   a "$", which then starts nothing ("$$Id$", "$I$Id$" stay as they are);
#   after "$Id" and a NUL (git compares with its string's terminator) one more
#   byte is consumed, again only a "$" matters;
# - "$Id<x>" leaves the filter in state 0 without draining what it holds, so
#   a "$" right after it starts a match that keeps holding it: a chain
#   "$Id<x>$Id<y>..." goes with whatever ends it; before "$Id$" it is copied,
#   but "$Id $Id: ...$" is expanded whole (git cuts what it holds to "$Id");
# - "$Id$" is expanded ("exp");
# - "$Id:" holds up to "$" ("close": expanded unless foreign) or LF (then all
#   is copied, so it needs no match);
# - at the end of the buffer a match may be unfinished ("hold", "end").
# The pattern starts with a literal "$" (so the regex engine can skip to the
# next one fast); the chain is possessive and a chain that ends in nothing
# of the above is matched (and copied) whole, so no text is scanned twice.
_STREAM_IDENT = (
    rb"""
    \$(?:Id[^:$\x00]\$)*+
    (?:
        Id(?P<exp>\$)
      | Id:(?P<hold>[^$\n]*)(?:(?P<close>\$)|\Z)
      | (?:I|Id\x00)?\$
      | (?P<end>(?:I(?:d(?:\x00|[^:$\x00])?)?)?\Z)
      | (?<=Id[^:$\x00]\$)
    )"""
)


class CascadeFilter:
    """``cascade_filter``: the output of one filter fed to another."""

    __slots__ = ("one", "two")

    def __init__(self, one, two) -> None:
        self.one = one
        self.two = two

    def feed(self, chunk: bytes) -> bytes:
        return self.two.feed(self.one.feed(chunk))

    def finish(self) -> bytes:
        return self.two.feed(self.one.finish()) + self.two.finish()


def get_stream_filter(crlf_action: int, ident: int, encoding: bytes | None, oid: bytes, eol: EolConfig):
    """``get_stream_filter_ca``: the filter for a streamable item, else None.

    None means the item must be converted in core
    (:func:`convert_to_working_tree`); :data:`NULL_FILTER` means its bytes
    are written unchanged. ``oid`` is the raw object id (for ident).
    """
    if classify_conv_attrs(crlf_action, encoding) != CA_CLASS_STREAMABLE:
        return None
    crlf = crlf_action not in PLAIN_ACTIONS and output_eol(crlf_action, eol) == EOL_CRLF
    if ident:
        one = IdentFilter(oid.hex().encode())
        return CascadeFilter(one, LfToCrlfFilter()) if crlf else one
    return LfToCrlfFilter() if crlf else NULL_FILTER


def apply_filter(filt, data: bytes) -> bytes:
    """Run a whole (small) blob through a stream filter."""
    if filt is NULL_FILTER:
        return data
    return filt.feed(data) + filt.finish()


def convert_to_working_tree(ca, src: bytes, oid_hex: bytes, path: bytes, eol: EolConfig, on_error=None) -> bytes:
    """``convert_to_working_tree_ca`` in core, without filters: ident, eol, encoding.

    ``ca``: what ``convert_attrs`` resolved for the path (its
    ``crlf_action``, ``ident`` and ``working_tree_encoding``): a
    :class:`attributes.ConvAttrs`, or the :class:`wire.PcItem` a helper
    receives, which carries the same fields. For items
    :func:`get_stream_filter` returns None for; ``on_error`` gets the message
    of a failed re-encoding (the content stays unconverted).
    """
    if ca.ident:
        src = ident_to_worktree(src, oid_hex)
    src = crlf_to_worktree(src, ca.crlf_action, eol)
    if ca.working_tree_encoding:
        try:
            src = encode_to_worktree(src, ca.working_tree_encoding, path)
        except EncodingError as e:
            if on_error is not None:
                on_error(str(e))
    return src


def convert_blob_to_worktree(ca, src: bytes, oid: bytes, path: bytes, eol: EolConfig, on_error=None) -> bytes:
    """The bytes git's checkout writes for blob ``src`` (no filter driver):
    through the stream filters when the item is streamable, in core otherwise
    (``write_pc_item_to_fd`` and ``write_entry`` choose the same way)."""
    filt = get_stream_filter(ca.crlf_action, ca.ident, ca.working_tree_encoding, oid, eol)
    if filt is not None:
        return apply_filter(filt, src)
    return convert_to_working_tree(ca, src, oid.hex().encode(), path, eol, on_error)
