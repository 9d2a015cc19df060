"""Typed reads from unstructured objects, with the zero values Go's converter would give.

gitops-engine converts an object to its typed Go struct before judging it; a field of the
wrong JSON type makes that conversion fail and the health becomes Unknown. These helpers
return Go's zero value for an absent or null field and raise `ConversionError` for a field
of the wrong type, so the checks can reproduce both behaviours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

_EMPTY: Mapping[str, Any] = {}


class ConversionError(ValueError):
    """A field does not have the JSON type the typed Go struct expects."""


class CheckError(Exception):
    """A health check failed; Argo CD shows Unknown with this message."""


def obj_map(value: Any, path: str) -> Mapping[str, Any]:
    """An object field; empty when absent or null."""
    if value is None:
        return _EMPTY
    if isinstance(value, Mapping):
        return value
    raise ConversionError(f"{path}: expected an object, got {type_name(value)}")


def obj_list(value: Any, path: str) -> Sequence[Any]:
    """An array field; empty when absent or null."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return value
    raise ConversionError(f"{path}: expected an array, got {type_name(value)}")


def obj_str(value: Any, path: str) -> str:
    """A string field; "" when absent or null."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise ConversionError(f"{path}: expected a string, got {type_name(value)}")


def obj_opt_int(value: Any, path: str) -> int | None:
    """An optional integer field (a Go pointer): None when absent or null."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConversionError(f"{path}: expected an integer, got boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ConversionError(f"{path}: expected an integer, got {type_name(value)}")


def obj_int(value: Any, path: str) -> int:
    """An integer field; 0 when absent or null."""
    result = obj_opt_int(value, path)
    return 0 if result is None else result


def obj_bool(value: Any, path: str) -> bool:
    """A boolean field; False when absent or null."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    raise ConversionError(f"{path}: expected a boolean, got {type_name(value)}")


def type_name(value: Any) -> str:
    """The JSON type name of a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def go_quote(text: str) -> str:
    """Roughly Go's %q: a double-quoted string with backslash escapes."""
    return json.dumps(text, ensure_ascii=False)


def split_api_version(api_version: str) -> tuple[str, str]:
    """(group, version) of an apiVersion; the core group is ""."""
    if "/" in api_version:
        group, _, version = api_version.partition("/")
        return group, version
    return "", api_version


def gvk_string(group: str, version: str, kind: str) -> str:
    """A GroupVersionKind as Go's String() prints it, e.g. "apps/v1beta2, Kind=Deployment"."""
    return f"{group}/{version}, Kind={kind}"
