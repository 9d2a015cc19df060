"""The table of non-deterministic template functions (functions.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

KINDS = frozenset({"random", "time", "lookup"})


@dataclass(frozen=True)
class FunctionInfo:
    """One row of functions.yaml."""

    name: str
    kind: str  # random | time | lookup
    source: str
    example: str
    requires: str | None = None  # only varies when fed by this function (date formatting of `now`)
    note: str | None = None


@cache
def nondeterministic_functions() -> dict[str, FunctionInfo]:
    """Every listed function by name; rows without a source or with an unknown kind are refused."""
    text = resources.files(__package__).joinpath("functions.yaml").read_text(encoding="utf-8")
    rows = yaml.safe_load(text) or []
    out: dict[str, FunctionInfo] = {}
    for row in rows:
        if not row.get("source") or row.get("kind") not in KINDS or not row.get("name"):
            raise ValueError(f"helm/functions.yaml: bad row {row!r}")
        out[row["name"]] = FunctionInfo(
            name=str(row["name"]),
            kind=str(row["kind"]),
            source=str(row["source"]),
            example=str(row.get("example") or ""),
            requires=row.get("requires"),
            note=row.get("note"),
        )
    return out

