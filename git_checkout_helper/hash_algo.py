"""``struct git_hash_algo`` and ``hash_algos[]`` (hash.h): the one place that
says what sha1 and sha256 objects are (name, ``GIT_HASH_*`` number, id
lengths). dulwich's ``ObjectFormat`` has the lengths too, but importing it
imports the dulwich package (see :mod:`dulwich_ext`); it stays for what is
handed to dulwich."""

from __future__ import annotations

import sys

from .record import Record

__all__ = ["GIT_HASH_SHA1", "GIT_HASH_SHA256", "HASH_ALGOS", "OPENSSL_FROM", "HashAlgo", "is_hex_oid", "new_hash",
           "oid_length"]

#: ``GIT_HASH_*``: what git puts in ``struct object_id.algo``.
GIT_HASH_SHA1 = 1
GIT_HASH_SHA256 = 2


class HashAlgo(Record, frozen=True):
    """The fields of ``struct git_hash_algo`` a checkout reads."""

    name: str
    format_id: int
    oid_length: int
    hex_length: int


#: By ``extensions.objectFormat`` name.
HASH_ALGOS = {"sha1": HashAlgo("sha1", GIT_HASH_SHA1, 20, 40), "sha256": HashAlgo("sha256", GIT_HASH_SHA256, 32, 64)}
_HEX_LENGTHS = frozenset(a.hex_length for a in HASH_ALGOS.values())


def is_hex_oid(text: bytes) -> bool:
    """An object id as refs hold it: lowercase hex of one of our algorithms' lengths."""
    return len(text) in _HEX_LENGTHS and not text.strip(b"0123456789abcdef")


def oid_length(hash_name: str) -> int:
    """``the_hash_algo->rawsz`` of a repository whose objects are ``hash_name``'s."""
    return HASH_ALGOS[hash_name].oid_length


#: Input this large is hashed with OpenSSL's code even when it is not loaded yet.
OPENSSL_FROM = 1 << 20
_builtin: dict[str, object] = {}


def new_hash(name: str, data: bytes = b"", size: int | None = None):
    """``init_fn`` then ``update_fn(data)`` of ``name``'s algorithm (sha1,
    sha256): a hash object. ``size``: all that will be fed to it (default
    ``len(data)``).

    The interpreter's built-in code does it, unless OpenSSL's (``hashlib``)
    is loaded already or ``size`` is at least :data:`OPENSSL_FROM`. Importing
    ``hashlib`` loads libcrypto: 4.5 ms of every start-up here, when a
    checkout of git.git hashes half a megabyte (its index; the built-in code
    takes 2.1 ms longer over it) and a few hundred small trees; at 100,000
    files the index is 11 MB, 57 ms against 6 with OpenSSL."""
    if (len(data) if size is None else size) < OPENSSL_FROM and "hashlib" not in sys.modules:
        ctor = _builtin.get(name) or _load_builtin(name)
        if ctor is not None:
            return ctor(data)
    import hashlib

    return hashlib.new(name, data)


def _load_builtin(name: str):
    """The built-in constructor of ``name`` (``_sha1``; ``_sha256``, named
    ``_sha2`` from Python 3.12), or None when this build has none."""
    try:
        if name == "sha1":
            from _sha1 import sha1 as ctor
        else:
            try:
                from _sha2 import sha256 as ctor
            except ImportError:
                from _sha256 import sha256 as ctor
    except ImportError:
        return None
    _builtin[name] = ctor
    return ctor
