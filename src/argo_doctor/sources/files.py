"""The one rule every reader follows to open an input file: a regular file, inside the input; and the one
rule for decoding JSON: nested at most `MAX_JSON_DEPTH` levels deep.

A FIFO, a device, a socket or a directory is never opened for reading (a FIFO would hang, `/dev/zero`
would never end), and a link is followed only when it leads to a file inside the input's root.
Opening uses `O_NONBLOCK` so that even a FIFO swapped in after the check cannot block, and the
type is checked on the open descriptor, not on the name. The files that options name (a token, a
key) follow the same rule (`read_option_file`).

JSON from a file, a log line or an API answer is decoded by `decode_json`, which measures the nesting on the
bytes before the decoder recurses, so that no reader, and nothing that walks what it read, runs out of stack.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

MAX_JSON_DEPTH = 256
"""JSON nested more than this many arrays and objects deep is refused (Kubernetes objects stay below 64 levels,
as for YAML)."""


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
    return _open_regular(path, "; skipped")


def _open_regular(path: Path, after: str) -> BinaryIO:
    """`path` opened for binary reading if it is a regular file; else UnsafeInput, its reason ending in `after`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafeInput(path, f"not a regular file ({_kind(mode)}){after}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path, root: Path | None = None, limit: int | None = None) -> bytes:
    """The whole content of a regular input file; UnsafeInput when it is larger than `limit` bytes."""
    with open_input(path, root) as handle:
        return handle.read() if limit is None else _read_limited(handle, path, limit, "; skipped")


def read_option_file(path: Path, limit: int) -> bytes:
    """The content of a file an option names (a token, a key), by the rule of inputs: a regular file, opened
    without blocking, of at most `limit` bytes; else UnsafeInput saying why."""
    with _open_regular(path, "") as handle:
        return _read_limited(handle, path, limit, "")


def _read_limited(handle: BinaryIO, path: Path, limit: int, after: str) -> bytes:
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        raise UnsafeInput(path, f"{size:,} bytes, over the limit of {limit:,} for this kind of file{after}")
    data = handle.read(size + 1)  # never reserve the whole limit up front
    if len(data) > size:
        raise UnsafeInput(path, f"grew while it was read{after}")
    return data


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


class JsonTooDeep(msgspec.DecodeError):
    """JSON nested more than `MAX_JSON_DEPTH` levels deep, refused before decoding (a `msgspec.DecodeError`, so that
    every reader that reports invalid JSON reports it too)."""


_STRUCTURE = bytes(range(256)).translate(None, b'[]{}"')
"""Every byte but brackets and quotes: what `json_too_deep` deletes."""
_PAIRS = bytes.maketrans(b"[{]}", b"(())")


def json_too_deep(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests more than `limit` arrays and objects deep, from its bytes alone: escapes, then
    strings are dropped, and the innermost bracket pairs removed one level at a time (no recursion). Exact for JSON;
    for text that is not, at least as deep as a decoder would go before it fails."""
    if isinstance(data, str):
        if data.count("{") + data.count("[") <= limit:
            return False
        data = data.encode("utf-8", "replace")
    elif data.count(b"{") + data.count(b"[") <= limit:
        return False
    if b"\\\\" in data:
        data = data.replace(b"\\\\", b"")
    if b'\\"' in data:
        data = data.replace(b'\\"', b"")
    skeleton = data.translate(None, _STRUCTURE).replace(b'""', b"")  # adjacent quotes hold nothing outside strings
    if b'"' in skeleton:
        skeleton = b"".join(skeleton.split(b'"')[::2])  # the pieces outside strings
    skeleton = skeleton.translate(_PAIRS)
    levels = 0
    while b"()" in skeleton:
        if levels == limit:
            return True
        skeleton = skeleton.replace(b"()", b"")
        levels += 1
    return levels + skeleton.count(b"(") > limit  # brackets never closed (text cut short): the decoder enters them


def decode_json(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> Any:
    """`msgspec.json.decode` of JSON text nested at most `limit` levels deep; JsonTooDeep for deeper text, and
    `msgspec.DecodeError` for text that is not JSON."""
    if json_too_deep(data, limit):
        raise JsonTooDeep(f"JSON nested more than {limit} levels deep")
    return msgspec.json.decode(data)
