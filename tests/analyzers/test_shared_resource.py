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
