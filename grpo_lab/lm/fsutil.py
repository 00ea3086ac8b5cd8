"""Disk trouble, said in one line: full disks, read-only caches, temporaries left by killed processes.

* :class:`StorageError` (an ``OSError``) is what a failed write of a run or cache file becomes:
  one line naming the path, the cause and what to do (the CLI prints it and exits 1).
  :func:`write_error` builds it from whatever the writer raised — an ``OSError``, safetensors'
  ``SafetensorError`` or torch's ``RuntimeError`` ("enforce fail at inline_container.cc"),
  which do not say that the disk is full — and adds the space left on that disk.
* Temporary folders carry their owner in the name (``.tmp-<what>-<hex>-pid<PID>@<host>``), so
  :func:`remove_stale_tmp` removes those of processes that are gone and spares live ones.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path

# errors that mean "this cannot be written here" rather than a bug
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)
_OWNER = re.compile(r"-pid(\d+)@(.+)$")
LEGACY_STALE_S = 3600.0          # a temporary without an owner (older grpo_lab), untouched this long, is stale
OTHER_HOST_STALE_S = 6 * 3600.0  # one of another machine sharing the cache: we cannot ask it


class StorageError(OSError):
    """A file of a run or a cache could not be written (disk full, read-only, ...); the message says which."""


def alive(pid: int) -> bool:
    """Is process ``pid`` (on this machine) still running? A zombie counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def free_mb(path) -> float | None:
    """MB free on the disk holding ``path`` (its nearest existing ancestor); None if unknown."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free / 1e6
    except OSError:
        return None


def _errno(e: BaseException) -> int | None:
    """The errno of ``e`` or of an exception it was raised from; 28 from a safetensors IoError text."""
    seen = 0
    while e is not None and seen < 5:
        if isinstance(e, OSError) and e.errno:
            return e.errno
        text = str(e)
        if "No space left" in text or "StorageFull" in text or "code: 28" in text:
            return errno.ENOSPC
        if "Read-only file system" in text or "code: 30" in text:
            return errno.EROFS
        e, seen = e.__cause__ or e.__context__, seen + 1
    return None


def is_no_space(e: BaseException) -> bool:
    return _errno(e) in NO_SPACE


def is_not_writable(e: BaseException) -> bool:
    return _errno(e) in NOT_WRITABLE


def reason(e: BaseException, path) -> str:
    """What went wrong writing at ``path``, in words, with the space left on its disk."""
    code = _errno(e)
    free = free_mb(path)
    room = f"; {free:.0f} MB free on that disk" if free is not None else ""
    if code in NO_SPACE:
        return f"no space left on the disk{room}"
    if code in NOT_WRITABLE:
        return "the folder is read-only (not writable by you)"
    detail = e.strerror if isinstance(e, OSError) and e.strerror else f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return f"{detail}{room}"


def write_error(what: str, path, e: BaseException, todo: str) -> StorageError:
    """``StorageError("cannot write WHAT to 'PATH': REASON. TODO")``, errno kept."""
    err = StorageError(f"cannot write {what} to {str(path)!r}: {reason(e, path)}. {todo}")
    err.errno = _errno(e)
    return err


def fsync(path) -> None:
    """fsync a file or a folder (its directory entries)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def owner_tag() -> str:
    return f"pid{os.getpid()}@{socket.gethostname()}"


def make_tmp_dir(root: Path, what: str) -> Path:
    """A new temporary folder ``root/.tmp-<what>-<hex>-pid<PID>@<host>`` (created)."""
    p = Path(root) / f".tmp-{what}-{uuid.uuid4().hex[:8]}-{owner_tag()}"
    p.mkdir(parents=True)
    return p


def owner_gone(tag: str, age_s: float) -> bool:
    """Is the owner ``pid<PID>@<host>`` of something ``age_s`` seconds old gone? Without a readable
    owner, or on another host, only age can tell."""
    m = _OWNER.search("-" + tag)
    if m is None:
        return age_s > LEGACY_STALE_S
    pid, host = int(m.group(1)), m.group(2)
    if host != socket.gethostname():
        return age_s > OTHER_HOST_STALE_S
    return not alive(pid)


def is_stale(p: Path, now: float | None = None) -> bool:
    """Is the temporary ``p`` left by a process that is gone (or, without an owner, old)?"""
    try:
        age = (time.time() if now is None else now) - p.lstat().st_mtime
    except OSError:
        return False
    m = _OWNER.search(p.name)
    return owner_gone(m.group(0)[1:] if m else "", age)


def remove_stale_tmp(root: Path, prefix: str = ".tmp-") -> list[Path]:
    """Remove the temporaries ``root/<prefix>*`` whose process is gone; returns what was removed.
    A read-only cache is left as it is (nothing raised)."""
    removed = []
    try:
        entries = list(Path(root).glob(prefix + "*"))
    except OSError:
        return removed
    for p in entries:
        if is_stale(p):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            if not p.exists():
                removed.append(p)
    return removed


def can_create_in(folder: Path) -> OSError | None:
    """None if a file can be created in ``folder`` (created when missing), else the OSError.

    Tried for real (a probe file): ``os.access`` says yes to root on a read-only mount or an
    immutable folder.
    """
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        probe = Path(folder) / f".tmp-probe-{uuid.uuid4().hex[:8]}-{owner_tag()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return e
    return None


__all__ = ["StorageError", "alive", "free_mb", "is_no_space", "is_not_writable", "reason", "write_error",
           "make_tmp_dir", "remove_stale_tmp", "is_stale", "owner_gone", "fsync", "can_create_in", "owner_tag"]
