"""`argo-doctor serve` as a process: refuses to start without authentication, logs JSON lines, and on SIGTERM
finishes the request in flight and exits 0. `argo-doctor audit` then reads the trail it left."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner

from argo_doctor.cli import main
from tests import children
from tests.live.fakeapi import FakeApiServer, write_kubeconfig
from tests.remediate import cluster
from tests.remediate.cluster import installation
from tests.remediate.test_service import POLICY, TOKEN


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[FakeApiServer, list[str]]]:
    with FakeApiServer(installation(), writable=True) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"fake": api}, "fake")
        policy = tmp_path / "policy.yaml"
        policy.write_text(yaml.safe_dump(POLICY))
        token = tmp_path / "token"
        token.write_text(TOKEN + "\n")
        args = ["--policy", str(policy), "--audit-db", f"sqlite:///{tmp_path / 'audit.db'}",
                "--kubeconfig", str(kubeconfig)]
        yield api, [*args, "--token-file", str(token)]


def start(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = children.popen([str(Path(sys.executable).parent / "argo-doctor"), "serve", "--listen", f"127.0.0.1:{port}",
                           *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
        if proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"serve did not start: {proc.communicate()[1]}")


def test_refuses_to_start_without_authentication(setup: tuple[FakeApiServer, list[str]]) -> None:
    _, args = setup
    result = CliRunner().invoke(main, ["serve", "--listen", "127.0.0.1:1", *args[:-2]])
    assert result.exit_code == 2
    assert "refusing to serve without authentication" in result.output


def test_sigterm_finishes_the_request_in_flight_and_exits_0(setup: tuple[FakeApiServer, list[str]],
                                                           tmp_path: Path) -> None:
    api, args = setup
    api.fault(r"applications/shop$", "hang", seconds=1.5)
    proc, url = start(args)
    answer: dict[str, Any] = {}

    def post() -> None:
        response = httpx.post(f"{url}/v1/notifications/argocd", json=cluster.notification(), timeout=30,
                              headers={"Authorization": f"Bearer {TOKEN}"})
        answer["status"], answer["body"] = response.status_code, response.json()

    thread = threading.Thread(target=post)
    thread.start()
    deadline = time.monotonic() + 10
    while not api.requests_matching("applications/shop") and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGTERM)
    thread.join(30)
    assert proc.wait(30) == 0
    stderr = proc.stderr.read() if proc.stderr else ""
    assert answer["status"] == 200
    assert {d["rollout"]: d["action"] for d in answer["body"]["decisions"]}["apps/checkout"] == "restarted"
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    assert [line["msg"] for line in lines if line["msg"] in ("listening", "notification", "stopped")] == [
        "listening", "notification", "stopped"]
    logged = next(line for line in lines if line["msg"] == "notification")
    assert logged["status"] == 200 and logged["app"] == "argocd/shop"
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/healthz", timeout=1)
    audit = CliRunner().invoke(main, ["audit", "--audit-db", args[3], "-o", "json"])
    assert audit.exit_code == 0, audit.output
    rows = json.loads(audit.output)
    entries = rows["entries"] if isinstance(rows, dict) else rows
    assert any(e["rollout"] == "apps/checkout" and e["action"] == "restarted" for e in entries)


def test_a_port_in_use_is_one_line(setup: tuple[FakeApiServer, list[str]]) -> None:
    _, args = setup
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--listen", f"127.0.0.1:{port}", *args])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.output


@pytest.mark.parametrize("text", ["REPLACE-WITH-THE-TOKEN-OF-ARGO-DOCTOR-SERVE", "short"])
def test_a_placeholder_or_short_token_is_refused(setup: tuple[FakeApiServer, list[str]], tmp_path: Path,
                                                 text: str) -> None:
    _, args = setup
    token = tmp_path / "placeholder"
    token.write_text(text)
    result = CliRunner().invoke(main, ["serve", *args[:-1], str(token)])
    assert result.exit_code == 2 and "at least 16 bytes, not a placeholder" in result.output


def test_secrets_in_a_notification_never_reach_the_audit_output(tmp_path: Path) -> None:
    """The trail keeps what was received; `audit` prints it redacted, in both formats."""
    from argo_doctor.remediate.kube import KubeClient
    from argo_doctor.remediate.policy import parse_policy
    from argo_doctor.remediate.restarter import Notification, Restarter
    from argo_doctor.remediate.store import open_store

    token = "ghp_" + "Zq3" * 12
    with FakeApiServer(installation(), writable=True) as api:
        kube = KubeClient.connect(write_kubeconfig(tmp_path / "kubeconfig", {"fake": api}, "fake"))
        db = f"sqlite:///{tmp_path / 'audit.db'}"
        store = open_store(db)
        restarter = Restarter(kube, parse_policy(POLICY, "p"), store, source="serve", instance="i")
        raw = {**cluster.notification(), "revision": f"https://x-access-token:{token}@github.com/org/repo"}
        restarter.notify(Notification("shop", "argocd", raw=raw))
        store.close()
        kube.close()
    for output in ("table", "json"):
        result = CliRunner().invoke(main, ["audit", "--audit-db", db, "-o", output])
        assert result.exit_code == 0 and "apps/checkout" in result.output
        assert token not in result.output
