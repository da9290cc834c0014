"""hash_algo.new_hash: git's object and index hashes, by the interpreter's own
code for what is small (no OpenSSL to load at start-up) and by hashlib's for
what is large or once hashlib is loaded; the same digests either way."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from git_checkout_helper.hash_algo import OPENSSL_FROM

SIZES = [0, 1, 1000, OPENSSL_FROM - 1, OPENSSL_FROM]


def _data(size: int) -> bytes:
    return bytes(range(256)) * (size // 256) + b"x" * (size % 256)


def test_same_digest_as_hashlib():
    """Every size, fed in two parts, in a process without hashlib (so that
    the built-in code hashes what is below OPENSSL_FROM): hashlib's digests."""
    code = f"""
import sys
from git_checkout_helper.hash_algo import new_hash
sizes = {SIZES!r}
for size in sizes:  # (ascending: hashlib is loaded by the last, OPENSSL_FROM)
    for name in ("sha1", "sha256"):
        data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        h = new_hash(name, data[: size // 2], size)
        h.update(data[size // 2 :])
        print(name, size, type(h).__module__, h.hexdigest())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = [line.split() for line in out.splitlines()]
    assert len(lines) == 2 * len(SIZES)
    for name, size, module, digest in lines:
        assert digest == hashlib.new(name, _data(int(size))).hexdigest(), (name, size)
        # The built-in modules hash what is small; hashlib's, what is not.
        builtin = {"sha1": ("_sha1",), "sha256": ("_sha256", "_sha2")}[name]
        assert (module in builtin) == (int(size) < OPENSSL_FROM), (name, size, module)


def test_which_code_hashes():
    """In a process without hashlib: small input by the built-in modules,
    hashlib left unloaded; input of OPENSSL_FROM bytes or more, or any once
    hashlib is loaded, by hashlib's."""
    code = """
import sys
from git_checkout_helper.hash_algo import OPENSSL_FROM, new_hash
small = [type(new_hash(n, b"x" * 1000)).__module__ for n in ("sha1", "sha256")]
before = "hashlib" in sys.modules
big = type(new_hash("sha1", b"", OPENSSL_FROM)).__module__
after = type(new_hash("sha1", b"x")).__module__
print(small, before, big, after)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0].startswith("['_sha1'") and "_sha2" in out[1] and out[2] == "False"
    assert out[3] == out[4] == "_hashlib"
