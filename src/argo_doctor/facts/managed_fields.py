"""Who wrote which field of an object: `metadata.managedFields` as the API server records it.

Each entry names a manager, an operation (Apply or Update), an optional subresource (`scale`, `status`) and a time,
and the fields it owns in the `FieldsV1` format: `f:<name>` a field, `k:<json>` a list item by its keys,
`v:<json>` a set item by its value, `i:<n>` a list item by index, `.` the item itself
(https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management,
k8s.io/apimachinery/pkg/util/managedfields, sigs.k8s.io/structured-merge-diff fieldpath/serialize.go).
`foreign_writes` compares what Argo CD applied (the last-applied configuration of client-side apply) with the
live object, and names the other manager behind each field that differs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from argo_doctor import knowledge
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Manager:
    """One managedFields entry: who, how, when, and the leaf fields it owns (paths into the live object)."""

    name: str
    operation: str
    subresource: str
    time: datetime | None
    paths: tuple[Path, ...]


def managers(obj: Obj) -> list[Manager]:
    """The object's managedFields entries, each with the concrete paths it owns."""
    found = []
    for entry in as_list(obj.meta.get("managedFields")):
        entry = mapping(entry)
        fields = entry.get("fieldsV1")
        paths = tuple(owned_paths(fields, obj.raw)) if isinstance(fields, dict) else ()
        found.append(Manager(str(entry.get("manager") or ""), str(entry.get("operation") or ""),
                             str(entry.get("subresource") or ""), parse_time(entry.get("time")), paths))
    return found


def owned_paths(fields: dict[str, Any], live: Any, prefix: Path = ()) -> Iterator[Path]:
    """The leaf paths a FieldsV1 tree owns, list items resolved against `live` (an item absent from it is skipped:
    what a manager owned there is gone)."""
    for key, child in fields.items():
        if key == ".":
            continue
        step = _step(key, live)
        if step is None:
            continue
        value = _child(live, step)[1]
        if isinstance(child, dict) and any(k != "." for k in child):
            yield from owned_paths(child, value, (*prefix, step))
        else:
            yield (*prefix, step)


def _step(key: str, live: Any) -> str | int | None:
    """The field name or list index a FieldsV1 key stands for in `live`."""
    kind, _, rest = key.partition(":")
    if kind == "f":
        return rest
    if kind == "i" and rest.isdigit():
        return int(rest)
    if not isinstance(live, list):
        return None
    try:
        wanted = json.loads(rest)
    except ValueError:
        return None
    for index, item in enumerate(live):
        if kind == "k" and isinstance(wanted, dict) and isinstance(item, dict) and all(
                item.get(k) == v for k, v in wanted.items()):
            return index
        if kind == "v" and item == wanted:
            return index
    return None


def value_at(doc: Any, path: Path) -> tuple[bool, Any]:
    """Whether `path` exists in `doc`, and its value there."""
    for step in path:
        found, doc = _child(doc, step)
        if not found:
            return False, None
    return True, doc


def _child(doc: Any, step: str | int) -> tuple[bool, Any]:
    """Whether `doc` has the field or item `step`, and its value."""
    if isinstance(doc, dict) and isinstance(step, str) and step in doc:
        return True, doc[step]
    if isinstance(doc, list) and isinstance(step, int) and 0 <= step < len(doc):
        return True, doc[step]
    return False, None


def item_path(doc: Any, path: Path, live: Any) -> Path | None:
    """`path`, whose list indices are positions in `live`, as positions in `doc` (the same items matched by their
    `name`, as Kubernetes merges containers, ports and env); None when an item is not in `doc`."""
    out: list[str | int] = []
    for step in path:
        if isinstance(step, int):
            if not isinstance(live, list) or not isinstance(doc, list) or step >= len(live):
                return None
            item = live[step]
            name = item.get("name") if isinstance(item, dict) else None
            matches = [i for i, d in enumerate(doc) if isinstance(d, dict) and name is not None and
                       d.get("name") == name] if name is not None else ([step] if step < len(doc) else [])
            if not matches:
                return None
            out.append(matches[0])
            doc, live = doc[matches[0]], item
        else:
            doc = doc.get(step) if isinstance(doc, dict) else None
            live = live.get(step) if isinstance(live, dict) else None
            out.append(step)
    return tuple(out)


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ARGO_MANAGERS = ("argocd-controller", "argocd-application-controller")
"""Argo CD's own managers: `argocd-controller` for server-side apply (common.ArgoCDSSAManager), the controller's
binary name for the updates of client-side apply."""
SKIPPED = ("metadata.annotations.kubectl.kubernetes.io/last-applied-configuration", "metadata.resourceVersion")


@dataclass(frozen=True)
class Difference:
    """A field Git sets whose live value another manager wrote."""

    path: tuple[str | int, ...]
    desired: Any
    live: Any
    manager: Manager
    writer: str

    @property
    def dotted(self) -> str:
        return ".".join(str(p) for p in self.path)


def _known_writer(manager: Manager, path: tuple[str | int, ...]) -> str:
    """Who a manager is, in words (knowledge/field_writers.yaml), else its name."""
    row = known_row(manager, path)
    if row is not None:
        return row.writer
    via = f" through the {manager.subresource} subresource" if manager.subresource else ""
    return f"the manager {manager.name!r}{via}"


def known_row(manager: Manager, path: tuple[str | int, ...]) -> knowledge.FieldWriter | None:
    """The row of knowledge/field_writers.yaml that names this manager writing this field, if any."""
    field = ".".join("[]" if isinstance(p, int) else str(p) for p in path)
    for row in knowledge.field_writers():
        if manager.name.startswith(row.manager) and (not row.subresource or row.subresource == manager.subresource) \
                and (not row.field or row.field == field):
            return row
    return None


def applied_server_side(live: Obj) -> bool:
    """Argo CD applies the object server-side: an `argocd-controller` Apply entry and no last-applied annotation."""
    return not live.annotations.get(LAST_APPLIED) and any(
        m.name == ARGO_MANAGERS[0] and m.operation == "Apply" for m in managers(live))


def server_side_takeovers(live: Obj) -> list[tuple[Manager, tuple[str | int, ...], knowledge.FieldWriter | None]]:
    """For an object Argo CD applies server-side (an `argocd-controller` Apply entry, no last-applied annotation):
    the `spec` fields another manager took over with an Update of the object itself (a known writer's row, or None),
    known writers first. With server-side apply an Update takes a field from the applier, so whether Git sets it,
    and to what, is not in the object: these are likely, not certain, causes."""
    if not applied_server_side(live):
        return []
    found: list[tuple[Manager, tuple[str | int, ...], knowledge.FieldWriter | None]] = []
    for manager in managers(live):
        if manager.name.startswith(ARGO_MANAGERS) or manager.operation != "Update":
            continue
        for path in manager.paths:
            row = known_row(manager, path)
            if row is not None and row.field:
                found.append((manager, path, row))
            elif not manager.subresource and path[:1] == ("spec",):
                found.append((manager, path, None))
    return sorted(found, key=lambda found: found[2] is None)


def _desired(live: Obj) -> Any:
    """What Argo CD applied last (client-side apply's annotation), parsed; None without one."""
    text = live.annotations.get(LAST_APPLIED)
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def own_changes(live: Obj) -> list[tuple[tuple[str | int, ...], Any, Any]]:
    """(path, applied, live) of the scalar fields of the last-applied configuration whose live value differs although
    no other manager wrote them: changed on the way in (a mutating webhook, the API server's normalisation)."""
    desired = _desired(live)
    if not isinstance(desired, dict):
        return []
    foreign = {d.path for d in foreign_writes(live)}
    found = []
    for path, wanted in _leaves(desired):
        dotted = ".".join(str(p) for p in path)
        if dotted.startswith(SKIPPED) or path[:1] in (("status",), ("apiVersion",), ("kind",)):
            continue
        where = item_path(live.raw, path, desired)
        if where is None or where in foreign:
            continue
        exists, actual = value_at(live.raw, where)
        if exists and str(wanted) != str(actual) and not isinstance(actual, dict | list):
            found.append((where, wanted, actual))
    return found


def dropped_fields(live: Obj) -> list[tuple[tuple[str | int, ...], Any]]:
    """(path, applied value) of the scalar fields of the last-applied configuration that the live object lacks."""
    desired = _desired(live)
    if not isinstance(desired, dict):
        return []
    found = []
    for path, wanted in _leaves(desired):
        if path[:1] in (("status",), ("metadata",)):
            continue
        where = item_path(live.raw, path, desired)  # None: a list item live lacks, whose fields cannot be told
        if where is not None and not value_at(live.raw, where)[0]:
            found.append((path, wanted))
    return found


def _leaves(doc: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _leaves(value, (*prefix, str(key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _leaves(value, (*prefix, index))
    else:
        yield prefix, doc


def foreign_writes(live: Obj) -> list[Difference]:
    """The fields of the last-applied configuration whose live value another manager wrote."""
    desired = _desired(live)
    if desired is None:
        return []
    found = []
    for manager in managers(live):
        if manager.name.startswith(ARGO_MANAGERS):
            continue
        for path in manager.paths:
            dotted = ".".join(str(p) for p in path)
            if dotted.startswith(SKIPPED) or path[:1] == ("status",):
                continue
            where = item_path(desired, path, live.raw)
            if where is None:
                continue
            present, wanted = value_at(desired, where)
            exists, actual = value_at(live.raw, path)
            if present and exists and not isinstance(wanted, dict | list) and str(wanted) != str(actual):
                found.append(Difference(path, wanted, actual, manager, _known_writer(manager, path)))
    return found


_QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?")
_SCALE = {"Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
          "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60, "n": Decimal("1e-9"), "u": Decimal("1e-6"),
          "m": Decimal("1e-3"), "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
          "P": Decimal("1e15"), "E": Decimal("1e18")}
"""Kubernetes' quantity suffixes (k8s.io/apimachinery/pkg/api/resource/quantity.go)."""


def quantity(text: Any) -> Decimal | None:
    """The value of a Kubernetes quantity (`1000m`, `1`, `0.5Gi`, `1e3`); None for anything else."""
    if not isinstance(text, str | int | float) or isinstance(text, bool):
        return None
    found = _QUANTITY.fullmatch(str(text).strip())
    if found is None:
        return None
    number, suffix = Decimal(found.group(1)), found.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * Decimal(10) ** int(suffix[1:])
    return number * _SCALE.get(suffix, Decimal(1))


def same_quantity(a: Any, b: Any) -> bool:
    """Whether two different spellings are one quantity (`1000m` and `1`): the API server's normalisation."""
    first, second = quantity(a), quantity(b)
    return first is not None and first == second and str(a) != str(b)
