"""What kind of filesystem a work tree is on, for ``checkout.workers=auto``.

git has no such probe (its ``checkout.workers`` is a number the user picks,
and its documentation tells them: more on SSDs and NFS, sequential on
spinning disks); :mod:`autoworkers` turns what is found here into a number.

* The type: ``statfs(2)``'s ``f_type`` through ctypes (``os.statvfs`` lacks
  it), compared with the magic numbers of ``include/uapi/linux/magic.h``
  (named as Linux names them); if ``statfs`` cannot be called, the type
  name in ``/proc/self/mountinfo``. A FUSE mount's subtype (``sshfs`` of
  ``fuse.sshfs``) comes from mountinfo too, as does an overlay's upper
  directory (probed in turn: a container's writes land there).
* Rotational: ``/sys/dev/block/MAJ:MIN/queue/rotational`` of the device
  holding the mount (a partition has no queue: its parent's). A filesystem
  with an anonymous device (btrfs, and anything without a device) is
  looked up through the mount's source. A paravirtual disk (virtio, Xen)
  says 1 by default whatever the host has: unknown then (:func:`virtual_disk`).
* CPUs: the online ones this process may run on, within its cgroup quota
  (see :func:`usable_cpus`).

Anything not found is ``None`` / ``"unknown"``: on other systems than
Linux, the decision then falls back to what it does for an unknown
filesystem. Nothing here reads the environment.
"""

from __future__ import annotations

import os

from .record import Record

__all__ = ["FsInfo", "Mount", "fs_kind_of_magic", "fs_kind_of_name", "mount_kind", "mount_of", "probe", "rotational",
           "statfs_type", "usable_cpus", "virtual_disk"]

# include/uapi/linux/magic.h (and the filesystems' own headers for the few
# magic.h lacks: CIFS, ZFS, Lustre, GPFS).
NFS_SUPER_MAGIC = 0x6969
SMB_SUPER_MAGIC = 0x517B
CIFS_SUPER_MAGIC = 0xFF534D42
SMB2_SUPER_MAGIC = 0xFE534D42
FUSE_SUPER_MAGIC = 0x65735546
OVERLAYFS_SUPER_MAGIC = 0x794C7630
TMPFS_MAGIC = 0x01021994
RAMFS_MAGIC = 0x858458F6
EXT4_SUPER_MAGIC = 0xEF53  # also EXT2_SUPER_MAGIC and EXT3_SUPER_MAGIC
XFS_SUPER_MAGIC = 0x58465342
BTRFS_SUPER_MAGIC = 0x9123683E
F2FS_SUPER_MAGIC = 0xF2F52010
BCACHEFS_SUPER_MAGIC = 0xCA451A4E
ZFS_SUPER_MAGIC = 0x2FC12FC1
NILFS_SUPER_MAGIC = 0x3434
JFS_SUPER_MAGIC = 0x3153464A
REISERFS_SUPER_MAGIC = 0x52654973
EXFAT_SUPER_MAGIC = 0x2011BAB0
MSDOS_SUPER_MAGIC = 0x4D44
NTFS_SB_MAGIC = 0x5346544E
CEPH_SUPER_MAGIC = 0x00C36400
V9FS_MAGIC = 0x01021997
AFS_SUPER_MAGIC = 0x5346414F
AFS_FS_MAGIC = 0x6B414653
CODA_SUPER_MAGIC = 0x73757245
GFS2_MAGIC = 0x01161970
OCFS2_SUPER_MAGIC = 0x7461636F
ORANGEFS_DEVREQ_MAGIC = 0x20030528
LL_SUPER_MAGIC = 0x0BD00BD0  # Lustre
GPFS_SUPER_MAGIC = 0x47504653

#: The kinds :mod:`autoworkers` decides on. "nfs", "smb", "fuse" and
#: "network" are latency-bound (every create, write, close and stat is a
#: round trip); "tmpfs" is CPU-bound; "local" is a block device's
#: filesystem (rotational or not); "overlay" is resolved to its upper
#: directory's kind when that can be found.
KINDS = ("nfs", "smb", "fuse", "network", "overlay", "tmpfs", "local", "unknown")

_MAGIC_KIND = {
    NFS_SUPER_MAGIC: ("nfs", "nfs"),
    SMB_SUPER_MAGIC: ("smb", "smbfs"),
    CIFS_SUPER_MAGIC: ("smb", "cifs"),
    SMB2_SUPER_MAGIC: ("smb", "smb3"),
    FUSE_SUPER_MAGIC: ("fuse", "fuse"),
    OVERLAYFS_SUPER_MAGIC: ("overlay", "overlay"),
    TMPFS_MAGIC: ("tmpfs", "tmpfs"),
    RAMFS_MAGIC: ("tmpfs", "ramfs"),
    EXT4_SUPER_MAGIC: ("local", "ext4"),
    XFS_SUPER_MAGIC: ("local", "xfs"),
    BTRFS_SUPER_MAGIC: ("local", "btrfs"),
    F2FS_SUPER_MAGIC: ("local", "f2fs"),
    BCACHEFS_SUPER_MAGIC: ("local", "bcachefs"),
    ZFS_SUPER_MAGIC: ("local", "zfs"),
    NILFS_SUPER_MAGIC: ("local", "nilfs2"),
    JFS_SUPER_MAGIC: ("local", "jfs"),
    REISERFS_SUPER_MAGIC: ("local", "reiserfs"),
    EXFAT_SUPER_MAGIC: ("local", "exfat"),
    MSDOS_SUPER_MAGIC: ("local", "vfat"),
    NTFS_SB_MAGIC: ("local", "ntfs"),
    CEPH_SUPER_MAGIC: ("network", "ceph"),
    V9FS_MAGIC: ("network", "9p"),
    AFS_SUPER_MAGIC: ("network", "afs"),
    AFS_FS_MAGIC: ("network", "afs"),
    CODA_SUPER_MAGIC: ("network", "coda"),
    GFS2_MAGIC: ("network", "gfs2"),
    OCFS2_SUPER_MAGIC: ("network", "ocfs2"),
    ORANGEFS_DEVREQ_MAGIC: ("network", "orangefs"),
    LL_SUPER_MAGIC: ("network", "lustre"),
    GPFS_SUPER_MAGIC: ("network", "gpfs"),
}

_NAME_KIND = {
    "nfs": "nfs", "nfs4": "nfs",
    "cifs": "smb", "smb3": "smb", "smbfs": "smb",
    "fuse": "fuse", "fuseblk": "fuse",
    "overlay": "overlay",
    "tmpfs": "tmpfs", "ramfs": "tmpfs",
    "ext2": "local", "ext3": "local", "ext4": "local", "xfs": "local", "btrfs": "local", "f2fs": "local",
    "bcachefs": "local", "zfs": "local", "nilfs2": "local", "jfs": "local", "reiserfs": "local",
    "exfat": "local", "vfat": "local", "msdos": "local", "ntfs": "local", "ntfs3": "local",
    "ceph": "network", "9p": "network", "afs": "network", "coda": "network", "gfs2": "network",
    "ocfs2": "network", "orangefs": "network", "lustre": "network", "gpfs": "network",
    "glusterfs": "network",
}


class FsInfo(Record, omit_defaults=True):
    """What :func:`probe` found; every field is reported with ``-v``."""

    kind: str = "unknown"  # one of KINDS
    fstype: str | None = None  # ext4, fuse.sshfs, ...
    magic: str | None = None  # f_type in hex, when statfs answered
    rotational: bool | None = None  # None: unknown (or a virtual disk's default)
    device: str | None = None  # MAJ:MIN whose queue answered ``rotational``
    virtual_disk: str | None = None  # "virtio", "xen": its rotational flag is not information


class Mount(Record):
    """One line of ``/proc/self/mountinfo``, the fields we use."""

    mount_point: str
    device: str  # MAJ:MIN
    fstype: str  # fuse.sshfs for FUSE with a subtype
    source: str
    super_options: str
    mount_options: str = ""  # the per-mount ones (ro, noatime...), before the separator


def fs_kind_of_magic(magic: int) -> tuple[str, str] | None:
    """(kind, type name) for a ``statfs`` ``f_type``, or None."""
    return _MAGIC_KIND.get(magic & 0xFFFFFFFF)


def fs_kind_of_name(fstype: str) -> str:
    """The kind for a mountinfo type name (``fuse.sshfs`` is FUSE)."""
    base = fstype.split(".", 1)[0]
    if base in ("fuse", "fuseblk"):
        # Some FUSE filesystems are network filesystems by name; all are
        # latency-bound the same way (each request a trip to a daemon).
        return "fuse"
    return _NAME_KIND.get(base, "unknown")


_libc = None
_Statfs = None


def statfs_type(path: str | bytes) -> int | None:
    """``statfs(2)``'s ``f_type`` (unsigned 32 bits), or None where there is
    no such call (not Linux) or it fails."""
    global _libc, _Statfs
    if not os.uname().sysname == "Linux":
        return None
    import ctypes  # only here: most checkouts never ask (-j N), and ctypes costs start-up

    try:
        if _libc is None:
            # The process's own symbols, libc's among them: ctypes.util's
            # find_library would run ldconfig in a subprocess (12 ms of every
            # -j auto checkout) to name the library this process has loaded.
            _libc = ctypes.CDLL(None, use_errno=True)
        if _Statfs is None:
            class _Statfs(ctypes.Structure):
                # Large enough for struct statfs on every Linux ABI (120 bytes on
                # x86-64); only f_type, the first word, is read.
                _fields_ = [("f_type", ctypes.c_long), ("_rest", ctypes.c_byte * 248)]
        buf = _Statfs()
        if _libc.statfs(os.fsencode(path), ctypes.byref(buf)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return buf.f_type & 0xFFFFFFFF


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (``\\040`` for a space)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    """``proc(5)``: ``id parent MAJ:MIN root mount-point options [tags] - type source super-options``."""
    mounts = []
    for line in text.splitlines():
        parts = line.split(" ")
        try:
            sep = parts.index("-", 6)
            mounts.append(Mount(_unescape(parts[4]), parts[2], parts[sep + 1], _unescape(parts[sep + 2]),
                                parts[sep + 3] if len(parts) > sep + 3 else "", parts[5]))
        except (ValueError, IndexError):
            continue
    return mounts


def mount_of(path: str | bytes, mountinfo: str | None = None) -> Mount | None:
    """The mount holding ``path``: the last-mounted of the longest mount
    points that are a prefix of its real path (a later mount over the same
    point hides the earlier)."""
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
                mountinfo = f.read()
        except OSError:
            return None
    real = os.path.realpath(os.fsdecode(path))
    best = None
    for m in parse_mountinfo(mountinfo):
        mp = m.mount_point
        if (real == mp or real.startswith(mp.rstrip("/") + "/")) and (best is None or len(mp) >= len(best.mount_point)):
            best = m
    return best


def mount_kind(path: str | bytes, mountinfo: str | None = None) -> str:
    """The kind of filesystem ``path`` is on, from the type name of the
    mount with its device number in ``/proc/self/mountinfo``: no ``statfs``
    (ctypes) and no ``realpath``, a tenth of a millisecond, for a question
    every switch asks (:mod:`iopool`). A bind mount shares its source's
    device and type; "unknown" where there is no mountinfo."""
    try:
        dev = os.stat(path).st_dev
        if mountinfo is None:
            with open("/proc/self/mountinfo", "rb") as f:
                text = f.read()
        else:
            text = mountinfo.encode()
    except OSError:
        return "unknown"
    key = f"{os.major(dev)}:{os.minor(dev)}".encode()
    for line in text.splitlines():
        parts = line.split(b" ", 3)
        if len(parts) > 3 and parts[2] == key:
            _, sep, rest = parts[3].partition(b" - ")
            if sep:
                return fs_kind_of_name(rest.split(b" ", 1)[0].decode("utf-8", "replace"))
    return "unknown"


def rotational(device: str, sysfs: str = "/sys") -> bool | None:
    """``queue/rotational`` of block device ``MAJ:MIN``; a partition's is its
    parent's (a partition directory has no ``queue``)."""
    try:
        dev = os.path.realpath(os.path.join(sysfs, "dev", "block", device))
    except OSError:
        return None
    for d in (dev, os.path.dirname(dev)):
        try:
            with open(os.path.join(d, "queue", "rotational")) as f:
                return f.read().strip() == "1"
        except OSError:
            continue
    return None


def _device_of(path: str | bytes, mount: Mount | None) -> str | None:
    """MAJ:MIN of the block device under ``path``: its ``st_dev`` unless that
    is anonymous (major 0: btrfs, overlay, tmpfs...), then the mount's
    source when it is a device node."""
    try:
        st = os.stat(path)
        if os.major(st.st_dev) != 0:
            return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    except OSError:
        pass
    if mount is not None and mount.source.startswith("/dev/"):
        try:
            rdev = os.stat(mount.source).st_rdev
            return f"{os.major(rdev)}:{os.minor(rdev)}"
        except OSError:
            return None
    return None


def probe(path: str | bytes, *, mountinfo: str | None = None, _depth: int = 0) -> FsInfo:
    """The kind of filesystem ``path`` is on (see the module docstring)."""
    info = FsInfo()
    magic = statfs_type(path)
    mount = mount_of(path, mountinfo)
    if magic is not None:
        info.magic = f"0x{magic:x}"
        found = fs_kind_of_magic(magic)
        if found is not None:
            info.kind, info.fstype = found
    if mount is not None:
        if info.kind == "unknown":
            info.kind = fs_kind_of_name(mount.fstype)
        if info.fstype is None or info.kind == "fuse":
            info.fstype = mount.fstype  # fuse.sshfs says more than fuse
    if info.kind == "overlay" and mount is not None and _depth == 0:
        upper = next((o[len("upperdir="):] for o in mount.super_options.split(",")
                      if o.startswith("upperdir=")), None)
        if upper and os.path.isdir(upper):
            below = probe(upper, mountinfo=mountinfo, _depth=1)
            if below.kind != "unknown":
                info.kind = below.kind
                info.fstype = f"overlay over {below.fstype}"
                info.rotational, info.device = below.rotational, below.device
            return info
    if info.kind == "local":
        info.device = _device_of(path, mount)
        if info.device is not None:
            info.virtual_disk = virtual_disk(info.device)
            info.rotational = None if info.virtual_disk else rotational(info.device)
    return info


def virtual_disk(device: str, sysfs: str = "/sys") -> str | None:
    """"virtio" or "xen" for a paravirtual disk (or a partition of one),
    else None. Such a driver has no way to learn the host's medium and
    leaves the block layer's default, rotational (``vda`` here says 1 over
    whatever the host has); the flag then says nothing either way."""
    try:
        dev = os.path.realpath(os.path.join(sysfs, "dev", "block", device))
    except OSError:
        return None
    if "/virtio" in dev:
        return "virtio"
    if "/vbd-" in dev or os.path.basename(dev).startswith("xvd"):
        return "xen"
    return None


def usable_cpus(online: int, affinity: int | None = None, loadavg: float | None = None,
                quota: float | None = None) -> int:
    """CPUs a checkout can use: the online ones (git's ``online_cpus``), cut
    to this process's affinity mask and cgroup quota; with ``loadavg``, less
    that load rounded (idle ones; at least one is always left). The
    coordinator does not subtract the load (autoworkers.py says why)."""
    n = max(1, online)
    if affinity:
        n = min(n, affinity)
    if quota:
        n = min(n, max(1, int(quota + 0.5)))
    if loadavg is not None:
        n -= int(loadavg + 0.5)
    return max(1, n)


def system_cpus(online: int) -> tuple[int, int | None, float | None, float | None]:
    """(online, affinity, 1-minute load, cgroup CPU quota) of this process,
    each None where it cannot be read."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    return online, affinity, load, _cgroup_quota()


def _cgroup_quota() -> float | None:
    """CPUs the cgroup allows: v2 ``cpu.max`` or v1 ``cfs_quota_us/period``."""
    for path in ("/sys/fs/cgroup/cpu.max",):
        try:
            with open(path) as f:
                q, p = f.read().split()[:2]
            return None if q == "max" else int(q) / int(p)
        except (OSError, ValueError):
            pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            q = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            p = int(f.read())
        return q / p if q > 0 and p > 0 else None
    except (OSError, ValueError):
        return None
