"""Knowledge that changes with upstream releases, as data files with a source on every row."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from argo_doctor.sources.logs import LogSignature


def load_rows(name: str) -> list[dict[str, Any]]:
    """The rows of the data file `name` shipped in this package; every row must name a source."""
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    rows = yaml.load(text, Loader=yaml.CSafeLoader) or []
    for row in rows:
        if not row.get("source"):
            raise ValueError(f"knowledge/{name}: row {row!r} has no source")
    return list(rows)


@cache
def log_signatures() -> dict[str, LogSignature]:
    """Every known log signature, by id."""
    result: dict[str, LogSignature] = {}
    for row in load_rows("log_signatures.yaml"):
        pattern = row.get("pattern")
        result[row["id"]] = LogSignature(
            id=row["id"],
            needle=row["needle"].encode(),
            pattern=re.compile(pattern) if pattern else None,
            components=frozenset(row.get("components") or ()),
            source=row["source"],
        )
    return result


@dataclass(frozen=True)
class ComponentRule:
    """How to recognise one component of an Argo installation."""

    component: str
    product: str
    labels: tuple[str, ...]
    prefixes: tuple[str, ...]
    part_of: str | None


@cache
def component_rules() -> tuple[ComponentRule, ...]:
    """The component catalogue, in file order."""
    return tuple(
        ComponentRule(
            component=row["component"],
            product=row["product"],
            labels=tuple(row.get("labels") or ()),
            prefixes=tuple(row.get("prefixes") or ()),
            part_of=row.get("part_of"),
        )
        for row in load_rows("components.yaml")
    )


@dataclass(frozen=True)
class SyncErrorAdvice:
    """What a sync error message means and what to do about it."""

    id: str
    pattern: re.Pattern[str]
    explanation: str
    remediation: str
    source: str


@cache
def sync_error_advice() -> tuple[SyncErrorAdvice, ...]:
    """The known sync error messages, in file order."""
    return tuple(
        SyncErrorAdvice(
            id=row["id"],
            pattern=re.compile(row["pattern"], re.I),
            explanation=" ".join(row["explanation"].split()),
            remediation=" ".join(row["remediation"].split()),
            source=row["source"],
        )
        for row in load_rows("sync_errors.yaml")
    )


@cache
def known_kinds() -> frozenset[tuple[str, str]]:
    """(group, kind) of every kind known without a CRD: built-in Kubernetes and the Argo projects."""
    return frozenset((str(row["group"]), kind) for row in load_rows("kinds.yaml") for kind in row["kinds"])
