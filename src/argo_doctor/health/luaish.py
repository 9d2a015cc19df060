"""Lua 5.1 value semantics, for the Python re-implementations of Argo CD's built-in Lua checks.

Argo CD hands a Lua script the object as tables; a script that indexes a missing field, or
iterates a nil list, stops with a Lua error and the resource becomes Unknown. These helpers
reproduce those outcomes (with gopher-lua's wording, minus the script position), with the
object as Argo CD builds it (gopher-lua's append skips nil, so the null items of a JSON array
are dropped rather than left as holes) and the standard libraries open, as for built-in scripts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from argo_doctor.health.fields import CheckError

_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)\s*")
_HEX = re.compile(r"\s*[-+]?0[xX][0-9a-fA-F]+\s*")


def lua_type(value: Any) -> str:
    """Lua's type() of a decoded JSON value."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "table"


def truthy(value: Any) -> bool:
    """Lua truth: everything but nil and false (0 and "" are true)."""
    return value is not None and value is not False


def index(value: Any, key: str) -> Any:
    """`value.key`: nil for a missing key, an error when `value` is not a table or a string.

    A string indexes the string library; none of the keys the checks read is one of its functions.
    """
    if isinstance(value, Mapping):
        return value.get(key)
    if isinstance(value, list | tuple | str):
        return None
    raise CheckError(f"attempt to index a non-table object({lua_type(value)}) with key '{key}'")


def tonumber(value: Any) -> float | None:
    """Lua 5.1 tonumber(): numbers and numeric strings (decimal or 0x hex), else nil."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        if _NUMBER.fullmatch(value):
            return float(value)
        if _HEX.fullmatch(value):
            return float(int(value.strip(), 16))
    return None


def less_than(left: Any, right: Any) -> bool:
    """Lua `left < right`: numbers with numbers, strings with strings, an error otherwise."""
    left_type, right_type = lua_type(left), lua_type(right)
    if left_type == right_type == "number":
        return float(left) < float(right)
    if left_type == right_type == "string":
        return str(left).encode() < str(right).encode()
    raise CheckError(f"attempt to compare {left_type} with {right_type}")


def getn(value: Any) -> int:
    """table.getn(): the length of a table, an error for anything else."""
    if isinstance(value, Mapping | list | tuple):
        return length(value)
    raise CheckError(f"bad argument #1 to getn (table expected, got {lua_type(value)})")


def ipairs(value: Any) -> Iterator[Any]:
    """Lua ipairs(): an array's items (null items are not in the table); none for an object;
    an error for a non-table."""
    if isinstance(value, Mapping):
        return iter(())
    if not isinstance(value, list | tuple):
        raise CheckError(f"bad argument #1 to ipairs (table expected, got {lua_type(value)})")
    return (item for item in value if item is not None)


def pairs(value: Any) -> list[Any]:
    """The values Lua's pairs() visits: an array's non-null items, or an object's non-null values
    (in key order here; in no defined order in Argo CD)."""
    if isinstance(value, Mapping):
        return [item for item in value.values() if item is not None]
    if isinstance(value, list | tuple):
        return [item for item in value if item is not None]
    raise CheckError(f"bad argument #1 to pairs (table expected, got {lua_type(value)})")


def length(value: Any) -> int:
    """Lua's `#` for a table decoded from JSON (null array items are not in it; 0 for an object)."""
    if isinstance(value, list | tuple):
        return sum(1 for item in value if item is not None)
    if isinstance(value, Mapping):
        return 0
    if isinstance(value, str):
        return len(value.encode())
    raise CheckError("__len undefined")  # gopher-lua's wording


def concat(left: str, right: Any) -> str:
    """`left .. right`: strings and numbers only."""
    if isinstance(right, str):
        return left + right
    if isinstance(right, int | float) and not isinstance(right, bool):
        return left + format_number(float(right))
    raise CheckError(f"cannot perform concat operation between string and {lua_type(right)}")  # gopher-lua's wording


def format_number(value: float) -> str:
    """A Lua number as tostring() prints it (%.14g)."""
    return f"{value:.14g}"
