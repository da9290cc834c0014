"""A FUSE passthrough filesystem that adds a fixed latency to every operation.

``python bench/latencyfs.py [--latency-ms 1] ROOT MOUNTPOINT``
mounts ROOT at MOUNTPOINT (in the foreground, until unmounted); the bench uses
:func:`mounted`.

It stands in for a network filesystem, the case parallel checkout was made for
(git's ``checkout.workers`` pays off on NFS because each worker's create,
write, close and stat round trips overlap with the others'). Why each choice:

* Every request (lookup, getattr, create, write, flush, release, mkdir,
  chmod, ...) sleeps ``latency`` before it is served: a round trip to a server
  whose own work is free. 1 ms by default: a LAN NFS server.
* Multi-threaded (libfuse's multi-threaded loop, one thread per request in
  flight): sleeping releases the GIL, so concurrent requests from several
  processes overlap as they do on NFS, and one process's requests are serial
  as they are on NFS. The Python per-request cost (~50-100 us of CPU) is still
  paid on the same two cores as the tools; the bench records the daemon's
  CPU time per run so that this stays visible.
* ``use_ino``: the backing inode numbers are passed through, so an index
  written in ROOT by the bench's preparation (outside timing, at full speed)
  still matches the files seen through the mount (git compares st_ino, not
  st_dev).
* ``big_writes,max_write=131072`` and reads of up to 128 KiB: NFS moves at
  least that much per request; without it every 4 KiB of a write would be a
  round trip.
* ``auto_cache``: file pages stay cached across opens while mtime and size are
  unchanged, like NFS's close-to-open consistency (otherwise every helper
  process would re-read the pack through the latency).
* Attribute and entry timeouts are libfuse's 1 s (NFS: acregmin 3 s); no
  negative lookup cache (NFS has one by default: this is the harsher case).
* xattr, access, lock, ioctl and bmap are left unimplemented: the kernel then
  stops asking after one ENOSYS (otherwise every write would be preceded by a
  ``security.capability`` getxattr round trip that no NFS client makes).

Needs fusepy (the ``bench`` extra) and libfuse 2 (Debian's ``libfuse2``; the
``fuse3`` package gives ``fusermount``); mounting as root needs no fusermount.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import shutil
import subprocess
import sys
import time

__all__ = ["available", "mounted", "main"]


def available() -> str | None:
    """None when a latency filesystem can be mounted here, else why not."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist"
    try:
        import fuse  # noqa: F401  (fusepy; loads libfuse.so.2)
    except ImportError:
        return "fusepy is not installed (pip install -e '.[bench]')"
    except OSError as e:  # libfuse.so.2 missing
        return f"fusepy cannot load libfuse 2 ({e}); apt-get install libfuse2"
    if os.geteuid() != 0 and not (shutil.which("fusermount") or shutil.which("fusermount3")):
        return "neither root nor fusermount (apt-get install fuse3)"
    return None


def _fold_case_resolver(root: str):
    """Case-insensitive, case-preserving lookups (as on macOS and Windows):
    each component that does not exist as spelled is matched against its
    directory's entries by ``casefold``; a new name keeps its spelling."""

    def resolve(path: str) -> str:
        cur = root
        for comp in path.split("/"):
            if not comp:
                continue
            cand = cur + "/" + comp
            if not os.path.lexists(cand):
                low = comp.casefold()
                try:
                    for name in os.listdir(cur):
                        if name.casefold() == low:
                            cand = cur + "/" + name
                            break
                except OSError:
                    pass
            cur = cand
        return cur

    return resolve


def _make_operations(root: str, latency: float, fold_case: bool = False):
    from fuse import FuseOSError, Operations

    sleep = time.sleep
    resolve = _fold_case_resolver(root) if fold_case else (lambda path: root + path)

    class LatencyFS(Operations):
        use_ns = True
        # Unregistered: the kernel gets ENOSYS once and stops asking.
        getxattr = listxattr = setxattr = removexattr = None
        access = lock = ioctl = bmap = None

        def __call__(self, op, *args):
            if op not in ("init", "destroy"):
                sleep(latency)
            fn = getattr(self, op, None)
            if fn is None:
                raise FuseOSError(errno.ENOSYS)
            return fn(*args)

        @staticmethod
        def _p(path: str) -> str:
            return resolve(path)

        def getattr(self, path, fh=None):
            st = os.fstat(fh.fh) if fh else os.lstat(resolve(path))
            return {
                "st_mode": st.st_mode, "st_ino": st.st_ino, "st_nlink": st.st_nlink,
                "st_uid": st.st_uid, "st_gid": st.st_gid, "st_size": st.st_size,
                "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns,
                "st_blocks": st.st_blocks, "st_rdev": st.st_rdev,
            }

        def readdir(self, path, fh):
            return [".", "..", *os.listdir(resolve(path))]

        def readlink(self, path):
            return os.readlink(resolve(path))

        def mkdir(self, path, mode):
            os.mkdir(resolve(path), mode)

        def rmdir(self, path):
            os.rmdir(resolve(path))

        def unlink(self, path):
            os.unlink(resolve(path))

        def symlink(self, target, source):  # fusepy: link at `target`, pointing to `source`
            os.symlink(source, resolve(target))

        def link(self, target, source):
            os.link(resolve(source), resolve(target))

        def rename(self, old, new):
            os.rename(resolve(old), resolve(new))

        def chmod(self, path, mode):
            os.chmod(resolve(path), mode)

        def chown(self, path, uid, gid):
            os.lchown(resolve(path), uid, gid)

        def mknod(self, path, mode, dev):
            os.mknod(resolve(path), mode, dev)

        def truncate(self, path, length, fh=None):
            if fh:
                os.ftruncate(fh.fh, length)
            else:
                os.truncate(resolve(path), length)

        def utimens(self, path, times=None):
            os.utime(resolve(path), ns=times, follow_symlinks=False) if times else \
                os.utime(resolve(path), follow_symlinks=False)

        def open(self, path, fi):
            fi.fh = os.open(resolve(path), fi.flags)
            return 0

        def create(self, path, mode, fi):
            fi.fh = os.open(resolve(path), fi.flags | os.O_CREAT, mode)
            return 0

        def read(self, path, size, offset, fi):
            return os.pread(fi.fh, size, offset)

        def write(self, path, data, offset, fi):
            return os.pwrite(fi.fh, data, offset)

        def flush(self, path, fi):
            return 0

        def fsync(self, path, datasync, fi):
            (os.fdatasync if datasync else os.fsync)(fi.fh)

        def release(self, path, fi):
            os.close(fi.fh)

        def statfs(self, path):
            sv = os.statvfs(resolve(path))
            return {k: getattr(sv, k) for k in (
                "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
                "f_flag", "f_frsize", "f_namemax")}

    return LatencyFS()


def serve(root: str, mountpoint: str, latency_ms: float, fold_case: bool = False) -> None:
    """Mount and serve in the foreground until unmounted."""
    import warnings

    from fuse import FUSE

    warnings.simplefilter("ignore", DeprecationWarning)
    root = os.path.realpath(root).rstrip("/")
    FUSE(
        _make_operations(root, latency_ms / 1000.0, fold_case), mountpoint,
        foreground=True, nothreads=False, raw_fi=True,
        use_ino=True, big_writes=True, max_write=131072, max_read=131072, auto_cache=True,
        fsname="latencyfs", subtype="latencyfs",
    )


def _unmount(mountpoint: str) -> None:
    for cmd in (["fusermount", "-u", "-q"], ["fusermount3", "-u", "-q"], ["umount"], ["umount", "-l"]):
        if not shutil.which(cmd[0]):
            continue
        if subprocess.run([*cmd, mountpoint], capture_output=True).returncode == 0:
            return


@contextlib.contextmanager
def mounted(root: str, mountpoint: str, latency_ms: float = 1.0, timeout: float = 15.0,
            fold_case: bool = False):
    """Mount ROOT at MOUNTPOINT with the latency for the duration of the block.

    Yields the daemon's :class:`subprocess.Popen` (its pid serves to read its
    CPU time). Raises RuntimeError if the mount does not appear in time.
    """
    os.makedirs(root, exist_ok=True)
    os.makedirs(mountpoint, exist_ok=True)
    log = open(os.path.join(os.path.dirname(os.path.abspath(mountpoint)), "latencyfs.log"), "ab")
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--latency-ms", str(latency_ms),
         *(["--fold-case"] if fold_case else []), root, mountpoint],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
    )
    try:
        deadline = time.monotonic() + timeout
        while not os.path.ismount(mountpoint):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"latencyfs did not mount (exit {proc.poll()}); see {log.name}")
            time.sleep(0.05)
        yield proc
    finally:
        if os.path.ismount(mountpoint):
            _unmount(mountpoint)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="latencyfs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency-ms", type=float, default=1.0)
    ap.add_argument("--fold-case", action="store_true", help="case-insensitive lookups (collision tests)")
    ap.add_argument("root")
    ap.add_argument("mountpoint")
    a = ap.parse_args(argv)
    why = available()
    if why:
        sys.stderr.write(f"latencyfs: {why}\n")
        return 1
    serve(a.root, a.mountpoint, a.latency_ms, a.fold_case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
