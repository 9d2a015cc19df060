"""shared-resource: one object two Applications manage, from the controller's condition or from their resources."""

from __future__ import annotations

from argo_doctor.model import Severity
from tests.analyzers.stuck_operations import Raw, named, scan

RULE = "shared-resource"


def test_two_automated_applications_take_turns_and_the_tracking_label_names_the_last() -> None:
    [finding] = scan(RULE)
    assert finding.severity == Severity.HIGH
    assert finding.title == ("ConfigMap/monitoring/grafana-dashboards is managed by argocd/grafana and "
                             "argocd/platform-monitoring")
    assert "they take turns for ever" in finding.summary and "names platform-monitoring" in finding.summary
    assert "FailOnSharedResource=true" in finding.remediation.text


def test_the_resources_of_two_applications_say_it_without_the_condition() -> None:
    def quiet(items: list[Raw]) -> None:
        del named(items, "Application", "grafana")["status"]["conditions"]
        del named(items, "Application", "grafana")["spec"]["syncPolicy"]
    [finding] = scan(RULE, quiet)
    assert finding.severity == Severity.MEDIUM and "take turns" not in finding.summary


def test_an_object_of_one_application_is_not_shared() -> None:
    def single(items: list[Raw]) -> None:
        grafana = named(items, "Application", "grafana")
        del grafana["status"]["conditions"]
        grafana["status"]["resources"] = grafana["status"]["resources"][1:]
    assert scan(RULE, single) == []


def test_objects_of_the_same_name_on_two_clusters_are_not_shared() -> None:
    """Applications of three clusters deploying `svc-00` each (examples/incidents/controller-sharding): three
    objects, on three clusters, by destination server or by cluster name."""
    from tests.conftest import EXAMPLES, scan_json

    doc = scan_json(EXAMPLES / "incidents" / "controller-sharding", "--rule", "shared-resource")
    assert doc["findings"] == []
