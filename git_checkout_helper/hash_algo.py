"""``struct git_hash_algo`` and ``hash_algos[]`` (hash.h): the one place that
says what sha1 and sha256 objects are (name, ``GIT_HASH_*`` number, id
lengths). dulwich's ``ObjectFormat`` has the lengths too, but importing it
imports the dulwich package (see :mod:`dulwich_ext`); it stays for what is
handed to dulwich."""

from __future__ import annotations

from .record import Record

__all__ = ["GIT_HASH_SHA1", "GIT_HASH_SHA256", "HASH_ALGOS", "HashAlgo", "oid_length"]

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


def oid_length(hash_name: str) -> int:
    """``the_hash_algo->rawsz`` of a repository whose objects are ``hash_name``'s."""
    return HASH_ALGOS[hash_name].oid_length
