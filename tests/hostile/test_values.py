"""Hostile values inside well-formed objects: text that argo-doctor parses further (JSON in annotations and in a
Secret, YAML in argocd-cm) nested deeper than any parser recurses.

The object files themselves are shallow, so the object guards never see the depth: the parsers of the values must
refuse it, and the command goes on with everything else.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.hostile.conftest import Argo, Baseline, assert_contract, assert_reader

DEPTH = 100_000
DEEP_JSON_OBJECT = '{"a":' * DEPTH + "1" + "}" * DEPTH
DEEP_JSON_ARRAY = "[" * DEPTH + "]" * DEPTH


def _write(objects: Path, name: str, *items: dict[str, Any]) -> None:
    (objects / f"{name}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))


def last_applied(objects: Path) -> None:
    """`kubectl apply`'s annotation on a Deployment (read for the apiVersion it last sent)."""
    metadata = {"name": "deep-applied", "namespace": "hostile",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": DEEP_JSON_OBJECT}}
    _write(objects, "applied", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
                                "spec": {"replicas": 1}})


def hpa_conditions(objects: Path) -> None:
    """An autoscaling/v1 HPA's conditions annotation (read by its health check)."""
    annotations = {"autoscaling.alpha.kubernetes.io/conditions": DEEP_JSON_ARRAY}
    _write(objects, "hpa", {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                            "metadata": {"name": "deep-conditions", "namespace": "hostile", "annotations": annotations},
                            "spec": {"maxReplicas": 2, "scaleTargetRef": {"kind": "Deployment", "name": "x"}},
                            "status": {"currentReplicas": 1, "desiredReplicas": 1}})


def docker_config(objects: Path) -> None:
    """A pull Secret whose `.dockerconfigjson` (read for the credentials to scrub) nests 100,000 deep."""
    config = base64.b64encode(DEEP_JSON_OBJECT.encode()).decode()
    _write(objects, "secret", {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                               "metadata": {"name": "deep-pull", "namespace": "hostile"},
                               "data": {".dockerconfigjson": config}})


BESIDE_GOOD: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "last-applied": (last_applied, ("scan", "health", "deprecations", "timeline")),
    "hpa-conditions": (hpa_conditions, ("scan", "health")),
    "docker-config": (docker_config, ("scan", "health")),
}
CASES = [(case, command) for case, (_, commands) in sorted(BESIDE_GOOD.items()) for command in commands]


@pytest.mark.parametrize(("case", "command"), CASES)
def test_deep_value_beside_a_good_input(argo: Argo, good: Baseline, tmp_path: Path, case: str, command: str) -> None:
    """No crash and nothing of the good input lost; the object that holds the value is still read."""
    make, _ = BESIDE_GOOD[case]
    hostile = tmp_path / "hostile"
    (hostile / "objects").mkdir(parents=True)
    make(hostile / "objects")
    run = assert_reader(argo, command, hostile, None, "", good)
    assert not [e for e in run.errors if "hostile" in e], run.errors


def test_deep_values_are_told_apart_from_good_ones(argo: Argo, tmp_path: Path) -> None:
    """The HPA's health is Unknown with the reason, in Argo CD's words for a conditions annotation it cannot
    convert, and the pull Secret is indexed, not skipped."""
    hostile = tmp_path / "hostile"
    (hostile / "objects").mkdir(parents=True)
    hpa_conditions(hostile / "objects")
    docker_config(hostile / "objects")
    doc = assert_contract(argo("health", hostile, "-o", "json"), codes=(0,))
    health = {o["name"]: o for o in doc["objects"]}
    assert health["deep-conditions"]["health"] == {
        "status": "Unknown", "message": "failed to convert conditions annotation to typed: nested too deeply to read"}
    scanned = assert_contract(argo("scan", hostile, "-o", "json", "--fail-on", "never"), codes=(0,))
    assert scanned["source"]["objects"] == 2
    assert scanned["errors"] == []


def test_deep_health_customizations_are_one_error(argo: Argo, tmp_path: Path) -> None:
    """argocd-cm `resource.customizations` nested 100,000 deep: one error naming the key, for every reader."""
    hostile = tmp_path / "hostile"
    (hostile / "objects").mkdir(parents=True)
    (hostile / "objects" / "argocd-cm.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd", "labels": {"app.kubernetes.io/part-of": "argocd"}},
        "data": {"resource.customizations": DEEP_JSON_ARRAY}}))
    for args in (("scan", "-o", "json"), ("health", "-o", "json"), ("map", "-o", "json"), ("timeline", "-o", "json")):
        run = argo(args[0], hostile, *args[1:])
        assert_contract(run, *(() if args[0] == "timeline" else ("argocd-cm resource.customizations",)),
                        phrase="nested too deeply", codes=(0,))


ROLLOUTS = Path(__file__).resolve().parents[1] / "bundles" / "rollouts-mixed"


def _odd_numbers(item: dict[str, Any], index: int) -> None:
    """Numbers no API server writes: a superscript digit (`str.isdigit` takes it, `int` does not), 5,000 digits
    (past Python's limit for a string to convert), 10**30 (past int64), and a time at year 1."""
    kind, status = item["kind"], item.setdefault("status", {})
    if kind == "Rollout":
        odd = ["²", "9" * 5000, 10**30][index % 3]
        item["spec"].update(replicas=odd, progressDeadlineSeconds=odd)
        item.setdefault("metadata", {})["generation"] = 3
        status["observedGeneration"] = "²"
        for condition in status.get("conditions") or []:
            if condition.get("type") == "Progressing" and index % 2:
                condition["lastUpdateTime"] = "0001-01-01T00:00:00Z"
    elif kind == "Pod":
        for container in status.get("containerStatuses") or []:
            container["restartCount"] = "²"
    elif kind == "Event":
        item["count"] = "²" if index % 2 else "9" * 5000
    elif kind == "AnalysisRun":
        for metric in status.get("metricResults") or []:
            metric["failed"] = "9" * 5000
    elif kind == "Deployment":
        item["spec"]["replicas"] = "²"


def test_numbers_no_api_server_writes_are_read_as_absent(argo: Argo, tmp_path: Path) -> None:
    """The Rollouts bundle with its counts, deadlines and generations made absurd: every reader runs every rule
    to the end (no rule crashed, no internal error)."""
    hostile = tmp_path / "odd"
    (hostile / "objects").mkdir(parents=True)
    for source in sorted((ROLLOUTS / "objects").glob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(source.read_text()) if d]
        for document in documents:
            for index, item in enumerate(document["items"] if document.get("kind") == "List" else [document]):
                _odd_numbers(item, index)
        (hostile / "objects" / source.name).write_text(yaml.safe_dump_all(documents))
    for command in ("scan", "health", "map", "timeline"):
        extra = ("--fail-on", "never") if command == "scan" else ()
        assert_contract(argo(command, hostile, "-o", "json", *extra), codes=(0,))
