"""The objects of examples/incidents/stuck-operations, to scan as they are or changed one field at a time."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import RawObject
from tests.conftest import EXAMPLES

BUNDLE = EXAMPLES / "incidents" / "stuck-operations"
Raw = dict[str, Any]


def objects() -> list[Raw]:
    """Every object of the bundle (fresh copies), Applications first."""
    found: list[Raw] = []
    for path in sorted((BUNDLE / "objects").rglob("*.yaml")):
        found += yaml.safe_load(path.read_text())["items"]
    found.sort(key=lambda o: o["kind"] != "Application")
    return copy.deepcopy(found)


def named(items: list[Raw], kind: str, name: str) -> Raw:
    return next(o for o in items if o["kind"] == kind and o["metadata"]["name"] == name)


def scan(rule: str, change: Callable[[list[Raw]], None] | None = None,
         collected: str = "2026-11-27T09:02:00Z") -> list[Finding]:
    """The findings of `rule` on the bundle's objects after `change`, as collected at `collected`."""
    items = objects()
    if change is not None:
        change(items)
    snap = Snapshot("test", {"collectedAt": collected})
    for index, obj in enumerate(items):
        snap.add(RawObject(obj, f"objects/all.yaml:{index * 40 + 1}"))
    result = run_scan(snap, select_analyzers(only=(rule,)))
    assert not result.crashed
    return result.findings
