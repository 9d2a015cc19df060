"""What a CustomResourceDefinition's schema keeps of an object: the API server prunes the fields a structural schema
does not declare, unless `x-kubernetes-preserve-unknown-fields` keeps them
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning)."""

from __future__ import annotations

from typing import Any

from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import as_list, mapping


def schema_of(snap: Snapshot, obj: Obj) -> dict[str, Any] | None:
    """The OpenAPI v3 schema the object's CustomResourceDefinition gives its version; None for a built-in kind, a
    CRD the input does not hold or a version without a schema."""
    if not obj.group or "." not in obj.group:
        return None
    version = obj.api_version.rpartition("/")[2]
    for crd in snap.of_kind("CustomResourceDefinition", "apiextensions.k8s.io"):
        spec = mapping(crd.raw.get("spec"))
        if spec.get("group") != obj.group or mapping(spec.get("names")).get("kind") != obj.kind:
            continue
        for entry in as_list(spec.get("versions")):
            entry = mapping(entry)
            if entry.get("name") == version:
                schema = mapping(mapping(entry.get("schema")).get("openAPIV3Schema"))
                return schema or None
    return None


def pruned(schema: dict[str, Any], path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """The first step of `path` the schema does not declare, where no `x-kubernetes-preserve-unknown-fields` keeps
    unknown fields: what the API server prunes (the path up to it); None when the schema keeps the field."""
    if path[:1] in (("apiVersion",), ("kind",), ("metadata",)):  # the API server's own, never pruned by a schema
        return None
    node: Any = schema
    for depth, step in enumerate(path):
        if not isinstance(node, dict) or node.get("x-kubernetes-preserve-unknown-fields") is True:
            return None
        if isinstance(step, int):
            node = node.get("items")
            continue
        properties = node.get("properties")
        if isinstance(properties, dict) and step in properties:
            node = properties[step]
        elif isinstance(node.get("additionalProperties"), dict | bool) and node.get("additionalProperties"):
            node = node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else {}
        else:
            return path[:depth + 1]
    return None
