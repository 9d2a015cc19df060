"""ignoreDifferences evaluated against live objects, as Argo CD does, and the paths it suggests."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from argo_doctor import jqpaths
from argo_doctor.cli import main
from argo_doctor.facts.ignore_differences import (
    concrete_paths,
    coverage,
    jq_expression,
    json_pointer,
    respects_ignore_differences,
)
from argo_doctor.jqpaths import JQ_TIMEOUT, jq_paths
from argo_doctor.snapshot import Obj
from argo_doctor.timeutil import parse_go_duration
from tests.conftest import ROOT

WEBHOOK = Obj.from_raw({
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "aws-load-balancer-webhook"},
    "webhooks": [
        {"name": "mpod.elbv2.k8s.aws", "clientConfig": {"caBundle": "TFMwdExTMUNS"}},
        {"name": "mtargetgroupbinding.elbv2.k8s.aws", "clientConfig": {"caBundle": "TFMwdExTMUNS"}},
    ],
}, "objects/webhooks.yaml:1")
SECRET = Obj.from_raw({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": "kube-system"},
                       "data": {"ca.crt": "<redacted>", "tls.crt": "<redacted>", "tls.key": "<redacted>"}}, "x:1")
FIELD = ("webhooks", "[]", "clientConfig", "caBundle")


def app(ignore: list[dict[str, object]], options: list[str] | None = None) -> Obj:
    spec: dict[str, object] = {"ignoreDifferences": ignore}
    if options is not None:
        spec["syncPolicy"] = {"automated": {}, "syncOptions": options}
    return Obj.from_raw({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                         "metadata": {"name": "lbc", "namespace": "argocd"}, "spec": spec}, "apps.yaml:1")


def test_concrete_paths_expand_lists() -> None:
    assert concrete_paths(WEBHOOK.raw, FIELD) == [("webhooks", 0, "clientConfig", "caBundle"),
                                                  ("webhooks", 1, "clientConfig", "caBundle")]
    assert concrete_paths(SECRET.raw, ("data", "missing")) == []


@pytest.mark.parametrize(
    ("entry", "complete", "covered"),
    [
        ({"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
          "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]}, True, 2),
        ({"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
          "jsonPointers": ["/webhooks/0/clientConfig/caBundle"]}, False, 1),
        ({"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
          "jsonPointers": ["/webhooks"]}, True, 2),
        ({"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration", "name": "other",
          "jsonPointers": ["/webhooks"]}, False, 0),
        ({"group": "apps", "kind": "MutatingWebhookConfiguration", "jsonPointers": ["/webhooks"]}, False, 0),
        ({"kind": "MutatingWebhookConfiguration",
          "jqPathExpressions": ['.webhooks[] | select(.name == "mpod.elbv2.k8s.aws") | .clientConfig']}, False, 1),
    ],
)
def test_coverage(entry: dict[str, object], complete: bool, covered: int) -> None:
    result = coverage(app([entry]), WEBHOOK, FIELD)
    assert result.complete is complete and len(result.covered) == covered
    assert bool(result.by) == (covered > 0)


def test_a_broken_jq_expression_is_reported_not_raised() -> None:
    result = coverage(app([{"kind": "MutatingWebhookConfiguration", "jqPathExpressions": [".webhooks[("]}]),
                      WEBHOOK, FIELD)
    assert not result.complete and "jqPathExpressions" in result.problems[0]


@pytest.mark.parametrize("expr", ["repeat(.)", "until(false; .)", "[range(1e9)] | .[]"])
def test_a_jq_expression_that_never_ends_is_stopped_as_argo_cd_stops_it(expr: str) -> None:
    """Unbounded memory, an endless loop, a billion paths: each stopped after JQ_TIMEOUT or JQ_MEMORY in its child,
    one problem; the other expressions of the entry still cover their paths."""
    started = time.monotonic()
    result = coverage(app([{"kind": "MutatingWebhookConfiguration", "jqPathExpressions": [
        expr, ".webhooks[].clientConfig.caBundle"]}]), WEBHOOK, FIELD)
    assert time.monotonic() - started < JQ_TIMEOUT + 5
    assert result.complete
    assert len(result.problems) == 1 and result.problems[0].startswith(
        f".spec.ignoreDifferences[0].jqPathExpressions {expr!r}: stopped")


def test_a_jq_expression_that_runs_out_of_memory_is_one_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory bound, whatever the machine's speed: a time limit far off, so that the memory one ends it."""
    monkeypatch.setattr(jqpaths, "JQ_MEMORY", 64 << 20)
    monkeypatch.setattr(jqpaths, "JQ_TIMEOUT", 600.0)
    assert jq_paths("[range(1e8)] | .[]", {}) == "stopped: jq ran out of memory (64 MiB) or failed (SIGABRT)"


def test_suggested_paths_round_trip() -> None:
    assert jq_expression(FIELD) == ".webhooks[]?.clientConfig.caBundle"
    assert jq_expression(("data", "ca.crt")) == '.data["ca.crt"]'
    assert json_pointer(("data", "ca.crt")) == "/data/ca.crt" and json_pointer(FIELD) is None
    covered = coverage(app([{"kind": "Secret", "jsonPointers": [json_pointer(("data", "ca.crt"))]},
                            {"kind": "MutatingWebhookConfiguration", "jqPathExpressions": [jq_expression(FIELD)]}]),
                       SECRET, ("data", "ca.crt"))
    assert covered.complete


def test_respect_ignore_differences() -> None:
    assert respects_ignore_differences(app([], ["CreateNamespace=true", "RespectIgnoreDifferences=true"]))
    assert not respects_ignore_differences(app([], ["CreateNamespace=true"]))
    assert not respects_ignore_differences(app([]))


@pytest.mark.parametrize(("text", "seconds"), [("24h", 86400), ("3m0s", 180), ("1h30m", 5400), ("180s", 180),
                                                ("90", 90), ("1.5h", 5400), ("soon", None), ("", None),
                                                ("2562047h", 2562047 * 3600), ("2562048h", None),  # Go's limit
                                                ("9" * 400 + "h", None), ("9" * 400, None)])
def test_go_durations(text: str, seconds: float | None) -> None:
    assert parse_go_duration(text) == seconds


def test_helm_check_cli() -> None:
    charts = ROOT / "tests" / "helm" / "charts"
    result = CliRunner().invoke(main, ["helm-check", str(charts / "webhook-certs"), "-o", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert {u["function"] for u in doc["uses"]} == {"genCA", "genSignedCert"}
    assert any(u["field"] == ["webhooks", "[]", "clientConfig", "caBundle"] for u in doc["uses"])
    clean = CliRunner().invoke(main, ["helm-check", str(charts / "deterministic")])
    assert clean.exit_code == 0 and "no template function" in clean.stdout
