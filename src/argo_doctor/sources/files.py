"""The one rule every reader follows to open an input file: a regular file, inside the input.

A FIFO, a device, a socket or a directory is never opened for reading (a FIFO would hang, `/dev/zero`
would never end), and a link is followed only when it leads to a file inside the input's root.
Opening uses `O_NONBLOCK` so that even a FIFO swapped in after the check cannot block, and the
type is checked on the open descriptor, not on the name.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO


class UnsafeInput(OSError):
    """An input path that is not a regular file inside the input (an OSError, so that every reader's
    `except OSError` reports it as one line)."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(errno.EPERM, reason, str(path))


def outside(path: Path, root: Path | None) -> bool:
    """Whether `path`, links resolved, leads outside `root` (never when `root` is None)."""
    if root is None:
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link loop
        return True


def open_input(path: Path, root: Path | None = None) -> BinaryIO:
    """Open `path` for binary reading if it is a regular file inside `root`; else raise UnsafeInput
    (or the OSError of the failed open)."""
    if outside(path, root):
        raise UnsafeInput(path, "a link to a file outside the input; skipped")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafeInput(path, f"not a regular file ({_kind(mode)}); skipped")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path, root: Path | None = None, limit: int | None = None) -> bytes:
    """The whole content of a regular input file; UnsafeInput when it is larger than `limit` bytes."""
    with open_input(path, root) as handle:
        if limit is not None:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise UnsafeInput(path, f"{size:,} bytes, over the limit of {limit:,} for this kind of file; skipped")
            data = handle.read(size + 1)  # never reserve the whole limit up front
            if len(data) > size:
                raise UnsafeInput(path, "grew while it was read; skipped")
            return data
        return handle.read()


def is_regular(path: Path) -> bool:
    """Whether `path` (links followed) is a regular file; False for anything that cannot be stat'ed."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, RuntimeError):
        return False


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def is_dir(path: Path) -> bool:
    """Whether `path` (links followed) is a directory; False for anything that cannot be stat'ed, such as a
    link to an over-long name (where `Path.is_dir` raises)."""
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except (OSError, RuntimeError, ValueError):
        return False


def exists(path: Path) -> bool:
    """Whether `path` (links followed) exists; False for anything that cannot be stat'ed."""
    try:
        path.stat()
    except (OSError, RuntimeError, ValueError):
        return False
    return True
