"""The values a chart renders with: files merged as `helm template -f` does, `--set` / `--set-string`
expressions, and what a parent chart hands each sub-chart."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

MAX_LIST_INDEX = 65_536
"""Helm refuses `--set a[N]` above this index."""
_INTEGER = re.compile(r"[+-]?[0-9]+")


class SetError(ValueError):
    """A `--set` expression helm would refuse."""


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`top` over `base`, as helm coalesces user values over defaults: maps merge key by key, a null removes the
    key, anything else replaces."""
    out = dict(base)
    for key, value in top.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _typed(text: str, as_string: bool) -> Any:
    """A `--set` value as helm types it (`--set-string` keeps every value a string)."""
    if as_string:
        return text
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "null":
        return None
    if text == "0":
        return 0
    if text[:1] == "0" or not _INTEGER.fullmatch(text):
        return text
    number = int(text, 10)
    return number if -(1 << 63) <= number < (1 << 63) else text


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def until(self, stops: str) -> tuple[str, str | None]:
        """Characters up to the first unescaped stop character (consumed), with `\\` escapes resolved."""
        out: list[str] = []
        while self.i < len(self.text):
            c = self.text[self.i]
            self.i += 1
            if c == "\\" and self.i < len(self.text):
                out.append(self.text[self.i])
                self.i += 1
            elif c in stops:
                return "".join(out), c
            else:
                out.append(c)
        return "".join(out), None


def parse_set(text: str, as_string: bool = False) -> list[tuple[tuple[str | int, ...], Any]]:
    """The (path, value) assignments of one `--set a.b=1,c[0]=x` expression; a path holds map keys (str) and list
    indexes (int). SetError when helm would refuse it."""
    reader = _Reader(text)
    out: list[tuple[tuple[str | int, ...], Any]] = []
    path: list[str | int] = []
    while reader.i < len(text):
        key, stop = reader.until(".[=,")
        if key:
            path.append(key)
        if stop == "[":
            if not path:
                raise SetError(f"{text!r}: a list index needs a key before it")
            index, close = reader.until("]")
            if close is None or not index.isdigit():
                raise SetError(f"{text!r}: bad list index [{index}]")
            if int(index) > MAX_LIST_INDEX:
                raise SetError(f"{text!r}: list index {index} over helm's limit of {MAX_LIST_INDEX}")
            path.append(int(index))
            continue
        if stop == ".":
            if not key and not (path and isinstance(path[-1], int)):
                raise SetError(f"{text!r}: empty key")
            continue
        if stop != "=":
            raise SetError(f"key {'.'.join(map(str, path)) or text!r} has no value")
        if not path:
            raise SetError(f"{text!r}: empty key")
        if not as_string and text[reader.i : reader.i + 1] == "{":
            reader.i += 1
            body, close = reader.until("}")
            if close is None:
                raise SetError(f"{text!r}: unclosed list")
            value: Any = [_typed(v, False) for v in body.split(",")] if body else []
            _, after = reader.until(",")
            if after is None and reader.i < len(text):
                raise SetError(f"{text!r}: text after list")
        else:
            raw, _ = reader.until(",")
            value = _typed(raw, as_string)
        out.append((tuple(path), value))
        path = []
    return out


def apply_set(values: Mapping[str, Any], text: str, as_string: bool = False) -> dict[str, Any]:
    """`values` with one `--set` (or `--set-string`) expression applied; SetError when helm would refuse it."""
    result = copy.deepcopy(dict(values))
    for path, value in parse_set(text, as_string):
        _put(result, path, value)
    return result


def _put(node: Any, path: tuple[str | int, ...], value: Any) -> None:
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        while len(node) <= head:
            node.append(None)
        if rest:
            child = node[head]
            if not isinstance(child, (dict, list)) or isinstance(child, list) != isinstance(rest[0], int):
                child = [] if isinstance(rest[0], int) else {}
                node[head] = child
            _put(child, rest, value)
        else:
            node[head] = value
        return
    if not rest:
        node[head] = value
        return
    child = node.get(head)
    wants_list = isinstance(rest[0], int)
    if wants_list and not isinstance(child, list):
        child = []
    elif not wants_list and not isinstance(child, dict):
        child = {}
    node[head] = child
    _put(child, rest, value)


def subchart_values(
    parent: Mapping[str, Any], defaults: Mapping[str, Any], key: str
) -> dict[str, Any]:
    """The values a sub-chart renders with: its own values.yaml under the parent's `<key>:` section, and the
    parent's `global:` copied down over the sub-chart's own."""
    section = parent.get(key)
    values = merge(defaults, section) if isinstance(section, Mapping) else dict(defaults)
    globals_ = parent.get("global")
    if isinstance(globals_, Mapping):
        own = values.get("global")
        values["global"] = merge(own, globals_) if isinstance(own, Mapping) else dict(globals_)
    return values
