"""Repo flapping: the repository that flaps because one repo-server replica's node clock is off."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.facts.clock import estimate_clocks
from argo_doctor.github.jwt_window import EXPIRED_TEXT, IAT_TEXT
from argo_doctor.sources import bundle
from tests.conftest import BUNDLES, EXAMPLES
from tests.conftest import scan_json as scan

FLAPPING = EXAMPLES / "incidents" / "repo-flapping"
SKEWED = "ip-10-20-3-13.eu-west-1.compute.internal"
FAILING_POD = "argocd-repo-server-8mm5zgt64s-mgxqj"




def by_rule(doc: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["rule"] == rule]


def blamed_nodes(doc: dict[str, Any]) -> set[str]:
    """Nodes named as an affected object by any finding above info."""
    return {o["name"] for f in doc["findings"] if f["severity"] != "info" for o in f["objects"] if o["kind"] == "Node"}


def test_the_example_is_diagnosed_at_the_top() -> None:
    doc = scan(FLAPPING)
    top = doc["findings"][0]
    assert top["rule"] == "github-app-token-clock" and top["severity"] == "critical"
    assert FAILING_POD in top["title"] and SKEWED in top["title"] and "behind" in top["title"]
    assert EXPIRED_TEXT in top["summary"] and "iat = now − 30 s" in top["summary"]
    assert "connected on one refresh and failed on the next" in top["summary"]
    assert {e["kind"] for e in top["evidence"]} >= {"log", "event", "object"}
    assert all(FAILING_POD in e["location"] for e in top["evidence"] if e["kind"] == "log")
    (skew,) = [f for f in by_rule(doc, "node-clock-skew") if f["severity"] != "info"]
    assert skew["severity"] == "high" and skew["objects"] == [{"apiVersion": "v1", "kind": "Node", "namespace": "",
                                                                "name": SKEWED}]
    assert blamed_nodes(doc) == {SKEWED}
    (summary,) = [f for f in by_rule(doc, "node-clock-skew") if f["severity"] == "info"]
    assert summary["title"] == "Node clocks: 1 skewed, 2 in sync, 0 unknown"
    (divergence,) = by_rule(doc, "replica-error-divergence")
    assert FAILING_POD in divergence["title"] and "1 of 3 replicas" in divergence["title"]


def test_the_measured_offsets_hold_the_truth() -> None:
    clocks = estimate_clocks(bundle.load([FLAPPING], None))
    low, high = clocks[SKEWED].bounds()  # type: ignore[misc]
    assert low <= -187.0 <= high and high - low <= 2.5
    for node in ("ip-10-20-1-11.eu-west-1.compute.internal", "ip-10-20-2-12.eu-west-1.compute.internal"):
        low, high = clocks[node].bounds()  # type: ignore[misc]
        assert low <= 0.0 <= high


def test_a_node_ahead_with_json_logs() -> None:
    doc = scan(BUNDLES / "repo-flapping-json")
    top = doc["findings"][0]
    assert top["rule"] == "github-app-token-clock" and "node-c" in top["title"] and "ahead" in top["title"]
    assert IAT_TEXT in top["summary"]
    assert blamed_nodes(doc) == {"node-c"}
    (summary,) = [f for f in by_rule(doc, "node-clock-skew") if f["severity"] == "info"]
    assert "node-b: unknown (1 sample" in summary["summary"] and "1 unknown" in summary["title"]


def test_errors_on_every_replica_do_not_blame_the_clock() -> None:
    doc = scan(BUNDLES / "token-all-replicas")
    (token,) = by_rule(doc, "github-app-token-clock")
    assert token["title"] == "GitHub App token refresh fails on all 3 repo-server replicas"
    assert "credentials" in token["summary"] and "private key" in token["summary"]
    assert "in sync" in token["summary"] and blamed_nodes(doc) == set()
    assert by_rule(doc, "replica-error-divergence") == []
    assert [f["severity"] for f in by_rule(doc, "node-clock-skew")] == ["info"]


def test_too_few_samples_on_the_failing_node(tmp_path: Path) -> None:
    """Without the skewed node's events and heartbeats, the rule says the clock is unknown, not fine."""
    copy = tmp_path / "flapping"
    shutil.copytree(FLAPPING, copy)
    for path in (copy / "objects").rglob("*"):
        if path.is_file() and ("event" in path.name or "nodes" in path.name):
            path.unlink()
    doc = scan(copy)
    (token,) = by_rule(doc, "github-app-token-clock")
    assert token["severity"] == "high" and "unknown" in token["title"] and "too little" in token["summary"]
    assert by_rule(doc, "node-clock-skew")[0]["severity"] == "info"


def test_threshold_option_and_unknown_options() -> None:
    doc = scan(FLAPPING, "--option", "node-clock-skew.threshold=300")
    assert [f["severity"] for f in by_rule(doc, "node-clock-skew")] == ["info"]
    assert by_rule(doc, "github-app-token-clock")[0]["severity"] == "critical"  # the JWT arithmetic does not care
    bad = CliRunner().invoke(main, ["scan", str(FLAPPING), "--option", "node-clock-skew.nope=1"])
    assert bad.exit_code == 2 and "unknown option" in bad.output
    nan = CliRunner().invoke(main, ["scan", str(FLAPPING), "--option", "node-clock-skew.threshold=soon"])
    assert nan.exit_code == 2 and "is not a number" in nan.output


@pytest.mark.parametrize("path", [FLAPPING, BUNDLES / "repo-flapping-json", BUNDLES / "token-all-replicas"])
def test_the_private_key_never_leaves(path: Path) -> None:
    for output in ("json", "table", "markdown"):
        result = CliRunner().invoke(main, ["scan", str(path), "-o", output, "--fail-on", "never"])
        assert "PRIVATE KEY" not in result.output and "MII" not in result.output


def test_the_summary_fix_says_what_it_knows_about_each_node() -> None:
    """All in sync: nothing to do. Some unknown: those are named with what they lack. All unknown (argocd-basic
    asked for more samples than it holds): no word of nodes in sync, only what is missing to decide."""
    (some,) = by_rule(scan(BUNDLES / "repo-flapping-json"), "node-clock-skew")[-1:]
    assert some["title"] == "Node clocks: 1 skewed, 1 in sync, 1 unknown"
    text = some["remediation"]["text"]
    assert text.startswith("See the node-clock-skew findings of the skewed nodes. The clock offset of node-b could "
                           "not be measured") and "kube-node-lease" in text
    (none,) = by_rule(scan(EXAMPLES / "argocd-basic", "--option", "node-clock-skew.min-samples=100"),
                      "node-clock-skew")
    assert none["title"] == "Node clocks: 0 skewed, 0 in sync, 3 unknown"
    text = none["remediation"]["text"]
    assert "in sync" not in text and text.startswith("No node's clock offset could be measured")
    assert "`argo-doctor collect`" in text and "timedatectl status" in text
    (all_known,) = by_rule(scan(EXAMPLES / "incidents" / "unwanted-sync"), "node-clock-skew")
    assert all_known["remediation"]["text"] == "Nothing to do for the nodes in sync."
