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
