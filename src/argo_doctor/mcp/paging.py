"""Every tool result within a size cap: a list is cut into pages behind a cursor, and an item too large for a page
alone has its texts shortened (and says so)."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from argo_doctor.errors import ConfigError
from argo_doctor.report.json import compact

DEFAULT_CAP = 48_000
"""Bytes of one tool result by default: about 12,000 tokens, a fraction of an assistant's context."""
MIN_CAP = 4_096
"""The smallest cap a server takes: a page must hold at least a header and one shortened item."""
SHORTEST_TEXT = 40
"""Characters a shortened text keeps at least."""
CURSOR_ROOM = 64
"""Bytes kept free for the `nextCursor` field."""


def query_key(tool: str, arguments: dict[str, Any]) -> str:
    """A short digest of a call's arguments (the cursor left out): a cursor holds it, so that it is refused by a
    call that asks something else."""
    text = compact({"tool": tool, "arguments": {k: v for k, v in sorted(arguments.items()) if k != "cursor"}})
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def make_cursor(generation: int, key: str, offset: int) -> str:
    """The opaque cursor of the page that starts at `offset`."""
    return base64.urlsafe_b64encode(f"{generation}:{key}:{offset}".encode()).decode().rstrip("=")


def read_cursor(cursor: str | None, generation: int, key: str) -> int:
    """The offset a cursor points at (0 without one); ConfigError for a cursor of another call or of an earlier
    reading of the input."""
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        gen, given_key, offset = text.split(":")
        at = int(offset)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ConfigError("cursor: not a cursor this server gave (pass back `nextCursor` as it came)") from None
    if int(gen) != generation:
        raise ConfigError("cursor: the input was read again (refresh) since this cursor was given: call again "
                          "without a cursor")
    if given_key != key or at < 0:
        raise ConfigError("cursor: it belongs to a call with other arguments: pass the same arguments with it")
    return at


def _size(doc: Any) -> int:
    return len(compact(doc).encode())


def _cut(value: Any, limit: int, items: int | None = None) -> Any:
    """`value` with every text longer than `limit` characters shortened and every list longer than `items` cut,
    each saying by how much."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"… [{len(value) - limit} more characters]"
    if isinstance(value, list):
        kept = [_cut(v, limit, items) for v in value[:items]]
        return kept if items is None or len(value) <= items else [*kept, f"[{len(value) - items} more]"]
    if isinstance(value, dict):
        return {k: _cut(v, limit, items) for k, v in value.items()}
    return value


def _longest(value: Any, lists: bool = False) -> int:
    """The length of the longest text in `value` (of the longest list, with `lists`)."""
    if isinstance(value, str):
        return 0 if lists else len(value)
    if isinstance(value, list):
        return max([len(value) if lists else 0, *(_longest(v, lists) for v in value)])
    if isinstance(value, dict):
        return max((_longest(v, lists) for v in value.values()), default=0)
    return 0


def _largest_fitting(low: int, high: int, make: Any, budget: int) -> dict[str, Any] | None:
    """The candidate `make(n)` of the largest n in [low, high] that fits in `budget` bytes (fewer fit as n grows)."""
    best = None
    while low <= high:
        middle = (low + high) // 2
        candidate = make(middle)
        if _size(candidate) <= budget:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


IDENTITY = ("id", "rule", "severity", "title", "kind", "namespace", "name")
"""The fields a stand-in for an item too large to show keeps, so that it can be asked for on its own."""


def fit(item: dict[str, Any], budget: int, cap: int) -> dict[str, Any]:
    """`item` as it is when it takes at most `budget` bytes, else with its texts shortened as little as needed
    (`truncated: true`), else its lists cut too; else a stand-in with what identifies it."""
    if _size(item) <= budget:
        return item
    best = _largest_fitting(SHORTEST_TEXT, _longest(item), lambda n: {**_cut(item, n), "truncated": True}, budget)
    if best is None:
        best = _largest_fitting(0, _longest(item, lists=True), lambda n: {**_cut(item, SHORTEST_TEXT, n),
                                                                    "truncated": True}, budget)
    if best is not None:
        return best
    return {**{k: _cut(item[k], SHORTEST_TEXT) for k in IDENTITY if isinstance(item.get(k), str)},
            "truncated": True, "note": f"larger than a result may be ({cap} bytes) even shortened"}


def page(head: dict[str, Any], key: str, items: list[dict[str, Any]], start: int, cap: int,
         cursor: tuple[int, str]) -> str:
    """The JSON text of `head` with `items[start:]` under `key`, as many as fit in `cap` bytes (one at least,
    shortened if it must be), and `nextCursor` when some are left (`cursor`: the generation and query key)."""
    head = {**head, "total": len(items), "offset": start}
    room = cap - CURSOR_ROOM - len(key) - 8
    if _size({**head, key: []}) > room * 3 // 4:  # the header leaves a quarter of a page to the items at least
        head = fit(head, room * 3 // 4, cap)
    used = _size({**head, key: []})
    shown: list[dict[str, Any]] = []
    for item in items[start:]:
        size = _size(item) + 1  # and its comma
        if used + size > room:
            if not shown:
                shown.append(fit(item, room - used - 1, cap))
            break
        shown.append(item)
        used += size
    doc: dict[str, Any] = {**head, key: shown}
    end = start + len(shown)
    if end < len(items):
        doc["nextCursor"] = make_cursor(cursor[0], cursor[1], end)
    return compact(doc)
