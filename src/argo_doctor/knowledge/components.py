"""Which Argo component a workload or pod is, by the signatures of knowledge/components.yaml: what its containers run,
else its labels, else its name; Redis and HAProxy only beside the installation they serve (see the file's header).

Works on raw objects (a workload's pod template, a pod's spec), so that the snapshot and a live collection's slim
copies recognise components alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from argo_doctor.knowledge import load_rows
from argo_doctor.sources.objects import Container, mapping

HOOK_ANNOTATIONS = ("helm.sh/hook", "argocd.argoproj.io/hook")
"""A Helm test or hook pod, or an Argo CD hook, is a one-off, not a component (a chart's test pod runs the Redis
image beside Argo CD's Redis)."""
PART_OF = {"argo-cd": ("argocd", "argo-cd"), "argo-rollouts": ("argo-rollouts",), "argo-workflows": ("argo-workflows",),
           "argo-events": ("argo-events",), "argocd-image-updater": ("argocd-image-updater",)}
"""The `app.kubernetes.io/part-of` values the upstream manifests and the charts give each product's workloads."""
RELEASE_LABELS = ("app.kubernetes.io/instance", "release")
"""The labels that name a workload's Helm release (`release` in older charts such as redis-ha)."""


@dataclass(frozen=True)
class ComponentRule:
    """How to recognise one component of an Argo installation (one row of knowledge/components.yaml)."""

    component: str
    product: str
    labels: tuple[str, ...]
    prefixes: tuple[str, ...]
    part_of: str | None
    images: tuple[str, ...] = ()
    programs: tuple[str, ...] = ()
    serves: str | None = None
    """The product whose installation this one serves (Redis for Argo CD): recognised only beside it."""

    def runs(self, image: str, programs: tuple[str, ...]) -> bool:
        """Whether a container with this image name and these programs runs the component."""
        if not (self.images or self.programs):
            return False
        return (not self.images or image in self.images) and (
            not self.programs or any(p in self.programs for p in programs))


@cache
def component_rules() -> tuple[ComponentRule, ...]:
    """The component catalogue, in file order (a component may have several rows)."""
    return tuple(
        ComponentRule(
            component=row["component"], product=row["product"],
            labels=tuple(row.get("labels") or ()), prefixes=tuple(row.get("prefixes") or ()),
            part_of=row.get("part_of"), images=tuple(row.get("images") or ()),
            programs=tuple(row.get("programs") or ()), serves=row.get("serves"),
        )
        for row in load_rows("components.yaml")
    )


@cache
def rule_of(component: str) -> ComponentRule:
    """The first row of a component."""
    return next(r for r in component_rules() if r.component == component)


def image_name(image: str) -> str:
    """The last segment of an image's repository: `quay.io/argoproj/argocd:v3.5.1` → `argocd`,
    `docker.io/bitnami/argo-cd@sha256:…` → `argo-cd`."""
    return image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def is_hook(obj_kind: str, raw: Mapping[str, Any]) -> bool:
    """Whether a workload or pod is a Helm test or hook, or an Argo CD hook."""
    metas = [mapping(raw.get("metadata"))]
    if obj_kind != "Pod":
        metas.append(mapping(mapping(mapping(raw.get("spec")).get("template")).get("metadata")))
    return any(key in mapping(meta.get("annotations")) for meta in metas for key in HOOK_ANNOTATIONS)


@dataclass(frozen=True)
class Recognised:
    """A component found in a workload or pod, and the image of the container that runs it (None when found by its
    labels or name)."""

    rule: ComponentRule
    image: str | None


@lru_cache(maxsize=4096)
def by_containers(containers: tuple[Container, ...], companions: bool = False) -> Recognised | None:
    """The component that containers (`sources.objects.pod_containers`) run (rows with `serves` only when
    `companions`): the first row, in file order, that one of them runs. Cached: the pods of a workload, and the
    workload itself, run the same."""
    by_image, by_program = _signature_index(companions)
    best: tuple[int, Recognised] | None = None
    for image, programs in containers:
        name = image_name(image)
        candidates = [*by_image.get(name, ()), *(c for p in programs for c in by_program.get(p, ()))]
        for order, rule in candidates:
            if (best is None or order < best[0]) and rule.runs(name, programs):
                best = order, Recognised(rule, image)
    return best[1] if best is not None else None


@cache
def _signature_index(companions: bool) -> tuple[dict[str, list[tuple[int, ComponentRule]]],
                                                dict[str, list[tuple[int, ComponentRule]]]]:
    """The rows (with their place in the file) by image name, and the rows without images by program."""
    by_image: dict[str, list[tuple[int, ComponentRule]]] = {}
    by_program: dict[str, list[tuple[int, ComponentRule]]] = {}
    for order, rule in enumerate(component_rules()):
        if (rule.serves is not None) != companions:
            continue
        for image in rule.images:
            by_image.setdefault(image, []).append((order, rule))
        for program in () if rule.images else rule.programs:
            by_program.setdefault(program, []).append((order, rule))
    return by_image, by_program


def by_labels(labels: Mapping[str, Any]) -> ComponentRule | None:
    """The component a workload's or pod's labels name."""
    values = [labels.get("app.kubernetes.io/name"), labels.get("app"), labels.get("controller")]
    values = [v for v in values if isinstance(v, str) and v]  # a rule's labels are strings
    if not values or not label_values().intersection(values):
        return None
    part_of = labels.get("app.kubernetes.io/part-of")
    return next((r for r in component_rules()
                 if any(v in r.labels for v in values) and (r.part_of is None or part_of == r.part_of)), None)


def by_name(name: str) -> ComponentRule | None:
    """The component a pod's or workload's name starts with (rows without `part_of`)."""
    if not name.startswith(name_prefixes()):
        return None
    return next((r for r in component_rules() if r.part_of is None and any(name.startswith(p) for p in r.prefixes)),
                None)


@cache
def label_values() -> frozenset[str]:
    """Every label value of the rows: most objects have none of them, and are told so at once."""
    return frozenset(v for r in component_rules() for v in r.labels)


@cache
def name_prefixes() -> tuple[str, ...]:
    """Every name prefix of the rows without `part_of`."""
    return tuple(p for r in component_rules() if r.part_of is None for p in r.prefixes)


def part_of(labels: Mapping[str, Any], product: str) -> bool:
    """Whether labels say a workload is part of a product's installation (app.kubernetes.io/part-of)."""
    return labels.get("app.kubernetes.io/part-of") in PART_OF.get(product, ())


def releases(labels: Mapping[str, Any]) -> set[str]:
    """The Helm release names a workload's labels give."""
    return {v for v in (labels.get(k) for k in RELEASE_LABELS) if isinstance(v, str) and v}


def serves(rule: ComponentRule, labels: Mapping[str, Any], namespace: str,
           installed: Iterable[tuple[str, str, frozenset[str]]]) -> bool:
    """Whether a workload running a companion's image (`rule`) serves an installation of its product: labelled part
    of it, or of the same Helm release as one of its components in the same namespace (`installed`: product,
    namespace and releases of each component found)."""
    if rule.serves is None:
        return False
    if part_of(labels, rule.serves):
        return True
    own = releases(labels)
    return bool(own) and any(product == rule.serves and ns == namespace and own & found
                             for product, ns, found in installed)
