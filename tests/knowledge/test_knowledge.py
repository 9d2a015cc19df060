"""The knowledge files: every row names its source, and every log signature finds its example."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from argo_doctor import knowledge

FILES = sorted(p.name for p in resources.files(knowledge).iterdir() if p.name.endswith(".yaml"))


@pytest.mark.parametrize("name", FILES)
def test_every_row_names_a_source(name: str) -> None:
    rows = knowledge.load_rows(name)
    assert rows and all(str(row["source"]).strip() for row in rows)


@pytest.mark.parametrize("sig_id", sorted(knowledge.log_signatures()))
def test_log_signatures_find_their_examples(sig_id: str) -> None:
    row = next(r for r in knowledge.load_rows("log_signatures.yaml") if r["id"] == sig_id)
    sig = knowledge.log_signatures()[sig_id]
    example = row["example"]
    assert sig.needle in example.encode()
    assert sig.pattern is None or sig.pattern.search(example)


def test_a_row_without_source_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml, "load", lambda *a, **k: [{"id": "x"}])
    with pytest.raises(ValueError, match="has no source"):
        knowledge.load_rows("kinds.yaml")


def test_sync_error_advice_matches_real_messages() -> None:
    messages = {
        "api-not-served": 'the server could not find the requested resource',
        "immutable-field": 'Deployment.apps "kube-state-metrics" is invalid: spec.selector: Invalid value: '
        '{"matchLabels":{"app":"ksm"}}: field is immutable',
        "annotation-too-long": 'CustomResourceDefinition.apiextensions.k8s.io "prometheuses.monitoring.coreos.com" '
        'is invalid: metadata.annotations: Too long: must have at most 262144 bytes',
    }
    advice = {a.id: a for a in knowledge.sync_error_advice()}
    for advice_id, message in messages.items():
        assert advice[advice_id].pattern.search(message)


def test_ingress_nginx_duplicate_host_path_gets_its_own_advice_only() -> None:
    """The message ingress-nginx's checkOverlap returns (kubernetes/ingress-nginx#8216), as Argo CD reports it."""
    message = ('error when creating "/dev/shm/2831749562": admission webhook "validate.nginx.ingress.kubernetes.io" '
               'denied the request: host "grafana.prod.acme.example" and path "/" is already defined in ingress '
               'monitoring/grafana-legacy')
    matched = [a for a in knowledge.sync_error_advice() if a.pattern.search(message)]
    assert [a.id for a in matched] == ["ingress-nginx-duplicate-host-path"]
    assert "Delete the conflicting Ingress named in the message" in matched[0].remediation
    assert "change the host or path" in matched[0].remediation
    other = 'admission webhook "validation.gatekeeper.sh" denied the request: [required-labels] missing team'
    assert [a.id for a in knowledge.sync_error_advice() if a.pattern.search(other)] == ["webhook-denied"]


def test_builtin_lua_kinds_name_the_release_that_first_ships_them() -> None:
    for group, kind, since in knowledge.lua_kinds():
        assert knowledge.parse_version(since) is not None, (group, kind, since)
    rows = knowledge.load_rows("lua_kinds.yaml")
    assert all(f"/tree/{row['since']}/resource_customizations/" in row["source"] for row in rows)


@pytest.mark.parametrize(
    ("group", "kind", "version", "expected"),
    [
        ("batch", "CronJob", "v2.9.6", False),  # its health.lua arrived in v3.2.0
        ("batch", "CronJob", "v3.2.0", True),
        ("batch", "CronJob", None, True),  # no version known: some release has it
        ("cert-manager.io", "Certificate", "v1.8.7", True),
        ("ec2.aws.crossplane.io", "VPC", "v3.1.0", True),  # the _.crossplane.io wildcard folder
        ("ec2.aws.crossplane.io", "VPC", "v3.0.0", False),
        ("apps", "Deployment", "v3.5.1", False),
    ],
)
def test_builtin_lua_at_a_release(group: str, kind: str, version: str | None, expected: bool) -> None:
    assert knowledge.has_builtin_lua(group, kind, version) is expected


def test_every_finding_id_survives_redaction() -> None:
    """A finding id is `<rule>:<hex>`: a rule named like a credential key (`…-credentials:`, `…auth:`) would have its
    ids redacted in the timeline and the HTML report."""
    from argo_doctor.analyzers import all_analyzers
    from argo_doctor.sources.redact import redact_text

    for analyzer in all_analyzers():
        assert redact_text(f"{analyzer.id}:0a1b2c3d4e5f") == f"{analyzer.id}:0a1b2c3d4e5f", analyzer.id
