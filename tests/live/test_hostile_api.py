"""The live source against a broken or hostile API server: a body sent a byte at a time, a server that never
answers, a list that never ends, answers too large (gzip bombs included), a log that ignores `limitBytes`, a huge
/metrics and JSON nested too deeply. Each is one failed read naming the request, what was read stays, and the rest
of the collection goes on; `fix` reads through the same guards."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.engine import needs_for, run_scan, select_analyzers
from argo_doctor.remediate import kube
from argo_doctor.sources import bundle, live
from tests.live.fakeapi import FakeApiServer, load_bundle, write_kubeconfig
from tests.remediate.cluster import installation

ROOT = Path(__file__).resolve().parents[2]
REPO_FLAPPING = ROOT / "examples" / "incidents" / "repo-flapping"
SAFETY_NET = 60.0
"""Seconds a collection may take before the test gives up on it: a net for a collection that never ends, not a
measure of speed (each collection here takes a few seconds at most)."""
DEEP = '{"a":' * 1000 + "1" + "}" * 1000


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path]]:
    """The repo-flapping incident served by a fake API server, and a kubeconfig for it."""
    objects, logs = load_bundle(REPO_FLAPPING)
    with FakeApiServer(objects, logs) as api:
        yield api, write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")


def _collect(kubeconfig: Path, root: Path, **options: Any) -> live.Collected:
    """A collection of everything the rules read, in a thread the test waits on at most SAFETY_NET seconds."""
    done: list[live.Collected] = []
    failed: list[BaseException] = []

    def run() -> None:
        client = live.connect(kubeconfig, None)
        try:
            done.append(live.collect(client, root, needs_for(select_analyzers()), live.LiveOptions(**options)))
        except BaseException as exc:
            failed.append(exc)
        finally:
            client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(SAFETY_NET)
    assert not thread.is_alive(), f"the collection did not end within {SAFETY_NET:.0f} s"
    if failed:
        raise failed[0]
    return done[0]


def _reasons(result: live.Collected) -> dict[str, str]:
    return {s["request"]: s["reason"] for s in result.skipped}


def _items(root: Path, folder: str) -> list[dict[str, Any]]:
    return [item for page in sorted((root / "objects" / folder).glob("*.json"))
            for item in json.loads(page.read_text())["items"]]


def _page(items: list[dict[str, Any]], **extra: Any) -> bytes:
    return json.dumps({"kind": "DeploymentList", "apiVersion": "apps/v1", "metadata": {"resourceVersion": "1"},
                       "items": items, **extra}).encode()


def test_a_body_sent_a_byte_at_a_time_ends_at_the_request_deadline(
    served: tuple[FakeApiServer, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read timeout restarts with every byte; the deadline of the request does not."""
    api, kubeconfig = served
    monkeypatch.setattr(live, "REQUEST_DEADLINE", 2.0)
    api.fault(r"^/apis/apps/v1/deployments\?", "drip", seconds=0.05, times=-1)
    result = _collect(kubeconfig, tmp_path / "b")
    reason = _reasons(result)["GET /apis/apps/v1/deployments?limit=500"]
    assert reason == "not answered within 2 s (the deadline of a request)"
    assert _items(tmp_path / "b", "pods.core"), "the other lists were read"
    assert not _items(tmp_path / "b", "deployments.apps")


def test_a_server_that_stops_answering_ends_at_the_collection_deadline(
    served: tuple[FakeApiServer, Path], tmp_path: Path
) -> None:
    """Lists that never come: the collection ends at its deadline and says what it did not read."""
    api, kubeconfig = served
    api.fault(r"\?limit=", "hang", seconds=3600, times=-1)
    result = _collect(kubeconfig, tmp_path / "b", deadline=timedelta(seconds=3), concurrency=2)
    reasons = _reasons(result)
    started = [reason for request, reason in reasons.items() if "?limit=" in request]
    assert len(started) == 2 and set(started) == {"not answered when the collection's deadline (3s) passed"}
    assert reasons["the deadline of the collection"].startswith("3s passed with ")
    assert reasons["the deadline of the collection"].endswith(" not read yet; give more time with --timeout")
    meta = yaml.safe_load((tmp_path / "b" / "bundle.yaml").read_text())
    assert any(s["what"] == "reads not started" for s in meta["skipped"])
    snap = bundle.load([tmp_path / "b"], tmp_path)
    shown = [f"{p.location}: {p.message}" for p in run_scan(snap, select_analyzers()).problems]
    assert any(line.startswith("collection: the deadline of the collection: 3s passed") for line in shown)


@pytest.mark.parametrize(("token", "reason"), [
    ("the-same-token", "gave a continue token it had already given (page 2): the list would never end; the rest was "
                       "not read"),
    (None, "more than 5 pages; the rest was not read"),
], ids=["repeated-token", "endless-tokens"])
def test_a_list_that_never_ends_is_ended_and_its_pages_kept(
    served: tuple[FakeApiServer, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str | None,
    reason: str
) -> None:
    api, kubeconfig = served
    monkeypatch.setattr(live, "MAX_PAGES", 5)
    api.fault(r"^/api/v1/pods\?", "loop", token=token, times=-1)
    result = _collect(kubeconfig, tmp_path / "b", page_size=2)
    assert _reasons(result)["GET /api/v1/pods?limit=2"] == reason
    assert len(_items(tmp_path / "b", "pods.core")) == 2, "the page read stays"
    assert len(api.requests_matching(r"^/api/v1/pods\?")) <= 5
    assert _items(tmp_path / "b", "nodes.core"), "the other lists were read"


def test_answers_over_the_size_cap_are_refused_decompressed_too(
    served: tuple[FakeApiServer, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of 2 MiB and a gzip bomb (a few KiB that inflate to 64 MiB) against a cap of 1 MiB."""
    api, kubeconfig = served
    monkeypatch.setattr(live, "MAX_BODY_BYTES", 1 << 20)
    item = {"metadata": {"name": "big", "namespace": "shop", "annotations": {"note": "x" * (2 << 20)}}}
    api.fault(r"^/apis/apps/v1/deployments\?", "body", body=_page([item]), times=-1)
    bomb = gzip.compress(_page([], padding=" " * (64 << 20)))
    assert len(bomb) < 1 << 20
    api.fault(r"^/apis/apps/v1/statefulsets\?", "body", body=bomb, headers={"Content-Encoding": "gzip"}, times=-1)
    result = _collect(kubeconfig, tmp_path / "b")
    reasons = _reasons(result)
    assert reasons["GET /apis/apps/v1/deployments?limit=500"] == "answered more than 1,048,576 bytes"
    assert reasons["GET /apis/apps/v1/statefulsets?limit=500"] == "answered more than 1,048,576 bytes decompressed"
    assert _items(tmp_path / "b", "pods.core"), "the other lists were read"


def test_json_nested_too_deeply_in_a_list_is_one_error(served: tuple[FakeApiServer, Path], tmp_path: Path) -> None:
    api, kubeconfig = served
    body = _page([]).replace(b'"items": []', b'"items": [{"metadata": {"name": "x"}, "spec": ' + DEEP.encode() + b"}]")
    api.fault(r"^/apis/apps/v1/deployments\?", "body", body=body, times=-1)
    result = _collect(kubeconfig, tmp_path / "b")
    assert _reasons(result)["GET /apis/apps/v1/deployments?limit=500"] == \
        "invalid JSON: JSON nested more than 256 levels deep"
    assert _items(tmp_path / "b", "pods.core"), "the other lists were read"


def test_a_log_that_ignores_limit_bytes_is_cut_at_max_log_bytes(served: tuple[FakeApiServer, Path],
                                                                tmp_path: Path) -> None:
    api, kubeconfig = served
    api.fault(r"/pods/argocd-application-controller-0/log\?", "nolimit", times=-1)
    result = _collect(kubeconfig, tmp_path / "b", max_log_bytes=1000, previous=False)
    log = tmp_path / "b" / "logs" / "argocd" / "argocd-application-controller-0" / "argocd-application-controller.log"
    text = log.read_bytes()
    assert len(text) == 1001 and text.endswith(b"\n"), "the first 1,000 bytes, the cut line ended"
    cut = [s for s in result.skipped if s["what"].endswith("argocd-application-controller (cut)")]
    assert [s["reason"] for s in cut] == ["sent more than the 1,000 bytes asked for; the rest was not read"]


def test_metrics_are_read_up_to_their_cap_and_long_lines_are_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "MAX_METRICS_BYTES", 64 << 10)
    monkeypatch.setattr(live, "MAX_METRICS_LINE", 1 << 10)
    kept = 'apiserver_requested_deprecated_apis{group="batch",removed_release="1.25",resource="cronjobs",' \
           'version="v1beta1"} 1'
    metrics = "\n".join([kept, kept.replace("cronjobs", "long") + " " * (4 << 10), kept.replace("cronjobs", "jobs")]
                        + ["process_cpu_seconds_total 1.5"] * 10_000 + [kept.replace("cronjobs", "late")]) + "\n"
    with FakeApiServer([], metrics=metrics) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")
        result = _collect(kubeconfig, tmp_path / "b", metrics=True)
    prom = (tmp_path / "b" / "metrics" / "apiserver.prom").read_text()
    assert prom.splitlines() == [kept, kept.replace("cronjobs", "jobs")], "the lines read before the cap stay"
    (cut,) = [s for s in result.skipped if s["what"] == "API server metrics (cut)"]
    assert cut["reason"] == "answered more than 65,536 bytes"


def test_fix_refuses_json_nested_too_deeply_in_one_line(tmp_path: Path) -> None:
    with FakeApiServer(installation(), writable=True) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"fake": api}, "fake")
        api.fault(r"^/apis/argoproj.io/v1alpha1/namespaces/apps/rollouts$", "body", times=-1,
                  body=b'{"kind": "RolloutList", "items": [' + DEEP.encode() + b"]}")
        result = CliRunner().invoke(main, ["fix", "rollout-restart", "--kubeconfig", str(kubeconfig), "-n", "apps"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("argo-doctor: error: ")
    assert "GET /apis/argoproj.io/v1alpha1/namespaces/apps/rollouts: answered JSON nested more than 256 levels " \
           "deep" in line


def test_the_remediation_client_reads_within_a_deadline_and_a_cap(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`fix` and `serve` read through the same guards: a dripping answer ends at the deadline (retryable), a large
    one is refused."""
    monkeypatch.setattr(kube, "DEADLINE", 1.0)
    monkeypatch.setattr(kube, "MAX_BODY_BYTES", 1 << 16)
    with FakeApiServer(installation(), writable=True) as api:
        client = kube.KubeClient.connect(write_kubeconfig(tmp_path / "kubeconfig", {"fake": api}, "fake"))
        api.fault(r"^/version$", "drip", seconds=0.05, times=-1)
        with pytest.raises(kube.KubeError) as slow:
            client.get("/version")
        api.fault(r"^/apis/argoproj.io/v1alpha1/namespaces/apps/rollouts$", "body", times=-1,
                  body=_page([{"metadata": {"name": "x", "annotations": {"note": "x" * (1 << 17)}}}]))
        with pytest.raises(kube.KubeError) as large:
            client.get(kube.rollout_path("apps"))
        client.close()
    assert (slow.value.reason, slow.value.retryable) == ("not answered within 1 s", True)
    assert large.value.reason == "answered more than 65,536 bytes"
