"""End to end: `argo-doctor scan` on the test bundles and the examples, through the CLI."""

from __future__ import annotations

import base64
import gc
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.cli import map as cli_map
from argo_doctor.cli import scan as cli_scan
from argo_doctor.cli import timeline as cli_timeline
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Problem
from argo_doctor.report import REPORTERS
from argo_doctor.sources import bundle as bundle_source
from argo_doctor.sources.logs import LogRecord, LogSignature, ScanStats, scan_logs
from argo_doctor.sources.redact import MIN_SECRET_LENGTH, PUBLIC_SECRET_KEYS
from tests.conftest import BUNDLES, EXAMPLES
from tests.report.contract import validate


def _scan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["scan", *args])
    return result.exit_code, result.output


def _json_scan(path: Path, *args: str) -> dict:  # type: ignore[type-arg]
    code, out = _scan(str(path), "-o", "json", "--fail-on", "never", *args)
    assert code == 0, out
    doc = json.loads(out)
    validate(doc)
    return doc  # type: ignore[no-any-return]


def _rules(doc: dict) -> set[str]:  # type: ignore[type-arg]
    """The rules of the findings above info (every scan with nodes has an info summary of their clocks)."""
    return {f["rule"] for f in doc["findings"] if f["severity"] != "info"}


def _by_rule(doc: dict, rule: str) -> list[dict]:  # type: ignore[type-arg]
    return [f for f in doc["findings"] if f["rule"] == rule]


def test_engine_basic_findings() -> None:
    doc = _json_scan(BUNDLES / "engine-basic")
    (unhealthy,) = _by_rule(doc, "app-unhealthy")
    assert unhealthy["severity"] == "high"
    assert {"kind": "Deployment", "namespace": "payments", "name": "payments-api"}.items() <= next(
        o for o in unhealthy["objects"] if o["kind"] == "Deployment"
    ).items()
    assert "payments-api-7c9d8f6b5d-jwdrt" in unhealthy["summary"] and "CrashLoopBackOff" in unhealthy["summary"]
    logs = [e for e in unhealthy["evidence"] if e["kind"] == "log"]
    assert any("PAYMENTS_STRIPE_WEBHOOK_SECRET" in e["excerpt"] for e in logs)
    assert all(e["location"].startswith("logs/payments/payments-api-7c9d8f6b5d-jwdrt/api.log:") for e in logs)
    assert any(e["kind"] == "event" and "BackOff" in e["excerpt"] for e in unhealthy["evidence"])

    (failed,) = _by_rule(doc, "sync-failed")
    assert failed["title"].startswith("Sync of metrics failed")
    assert any(o["name"] == "kube-state-metrics" for o in failed["objects"])
    assert "field is immutable" in failed["summary"] and "Replace=true" in failed["remediation"]["text"]
    controller = [e for e in failed["evidence"] if e["kind"] == "log"]
    assert controller and all("operation (phase: Failed)" in e["excerpt"] for e in controller)
    assert controller[0]["time"].startswith("2026-11-20T14:05")
    assert doc["errors"] == []
    assert doc["source"]["format"] == "bundle-v1" and doc["source"]["collectedAt"] is not None


def _secret_values(bundle: Path) -> set[str]:
    """Every Secret value in the bundle's files (raw and decoded, and each line of multi-line ones),
    except the public fields of Argo CD repository/cluster Secrets and values too short to mean anything."""
    values: set[str] = set()
    for path in (bundle / "objects").rglob("*"):
        if path.suffix not in (".yaml", ".json"):
            continue
        text = path.read_text(errors="replace")
        docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
        objs = [o for d in docs if isinstance(d, dict) for o in (d.get("items") or [d])]
        for obj in objs:
            if not isinstance(obj, dict) or obj.get("kind") != "Secret":
                continue
            for key, value in (obj.get("data") or {}).items():
                if key in PUBLIC_SECRET_KEYS:
                    continue
                decoded = base64.b64decode(value).decode(errors="replace")
                values.update(v.strip() for v in (value, decoded, *decoded.splitlines()))
    return {v for v in values if len(v) >= MIN_SECRET_LENGTH}


@pytest.mark.parametrize("bundle", [BUNDLES / "engine-basic", EXAMPLES / "argocd-basic"])
@pytest.mark.parametrize("output", ["json", "table", "markdown"])
def test_no_secret_value_in_any_output(bundle: Path, output: str) -> None:
    secrets = _secret_values(bundle)
    assert secrets, "the bundle is meant to hold Secrets"
    code, out = _scan(str(bundle), "-o", output, "--fail-on", "never")
    assert code == 0
    leaked = [s for s in secrets if s in out]
    assert leaked == []
    health = CliRunner().invoke(main, ["health", str(bundle), "-o", "json"])
    assert health.exit_code == 0 and not [s for s in secrets if s in health.output]


def test_exit_codes(tmp_path: Path) -> None:
    bundle = str(BUNDLES / "engine-basic")
    assert _scan(bundle)[0] == 1  # high findings, default --fail-on high
    assert _scan(bundle, "--fail-on", "critical")[0] == 0
    assert _scan(bundle, "--fail-on", "never")[0] == 0
    code, out = _scan(str(tmp_path / "missing"))
    assert code == 2 and out.strip().startswith("argo-doctor: error:") and "Traceback" not in out
    assert _scan(bundle, "--rule", "no-such-rule")[0] == 2
    assert _scan(bundle, "--rule", "sync-failed", "-o", "json")[0] == 1


def test_rule_selection() -> None:
    doc = _json_scan(BUNDLES / "engine-basic", "--rule", "sync-failed")
    assert {f["rule"] for f in doc["findings"]} == {"sync-failed"}
    doc = _json_scan(BUNDLES / "engine-basic", "--skip-rule", "sync-failed")
    assert _rules(doc) == {"app-unhealthy", "component-known-bug"}  # Argo CD v2.10.9 is in a known bug's range


def test_bad_input_is_reported_and_the_scan_goes_on(tmp_path: Path) -> None:
    bundle = tmp_path / "bad-input"
    shutil.copytree(BUNDLES / "bad-input", bundle)
    huge = bundle / "logs" / "argocd" / "argocd-application-controller-0" / "argocd-application-controller.log"
    huge.parent.mkdir(parents=True)
    with huge.open("wb") as out:
        out.write(b'time="2026-11-20T14:05:41Z" level=info msg="Reconciliation completed"\n')
        out.write(b"A" * (10 << 20) + b"\n")
        out.write(b'time="2026-11-20T14:05:41Z" level=info ')
        out.write(b'msg="updated \'argocd/metrics\' operation (phase: Failed)"\n')
    doc = _json_scan(bundle)
    errors = {e["location"]: e["message"] for e in doc["errors"]}
    expected = {
        "objects/broken.yaml:24": "invalid YAML",
        "objects/bomb.yaml:2": "alias bomb",
        "objects/broken.json:24": "invalid JSON",
        "objects/empty.yaml:1": "empty file",
        "objects/only-comments.yaml:1": "no Kubernetes objects",
        "objects/latin1.yaml:3": "UTF-8",
        "objects/unknown.yaml:1": "of 1 kind(s) that no check reads: Widget (example.com/v1alpha3, 1)",
        "objects/unknown.yaml:25": "not a Kubernetes object",
        "objects/unknown.yaml:29": "not a Kubernetes object",
        "objects/unknown.yaml:31": "not a Kubernetes object",
        "logs/argocd/argocd-application-controller-0/argocd-application-controller.log:2": "longer than 1 MiB",
    }
    for location, text in expected.items():
        assert text in errors.get(location, ""), (location, errors)
    # the rest of the scan is intact: both findings, and the valid neighbours of broken documents
    assert _rules(doc) == {"app-unhealthy", "sync-failed", "component-known-bug"}
    (failed,) = _by_rule(doc, "sync-failed")
    assert any(e["location"].endswith("argocd-application-controller.log:3") for e in failed["evidence"])
    health = CliRunner().invoke(main, ["health", str(bundle / "objects" / "broken.yaml"), "-o", "json"])
    names = [o["name"] for o in json.loads(health.output)["objects"]]
    assert names == ["team-a-config", "team-c-config"]


def test_bad_log_lines_are_reported(tmp_path: Path) -> None:
    """Binary junk, non-UTF-8 and another time zone in a repo-server log that a rule reads."""
    snap = bundle_source.load([BUNDLES / "bad-input"], tmp_path)
    (log_file,) = [f for f in snap.log_files if f.container == "repo-server"]
    seen: list[LogRecord] = []
    problems: list[Problem] = []
    scan_logs([(log_file, [LogSignature("any", b"level=")])], lambda s, r, m: seen.append(r), problems,
              snap.reference_time, ScanStats())
    by_line = {r.line: r for r in seen}
    assert by_line[7].time is not None and by_line[7].time.isoformat() == "2026-11-20T14:02:57+00:00"
    assert by_line[9].level == "error"
    locations = {p.location: p.message for p in problems}
    assert "binary" in locations[f"{log_file.display}:4"]
    assert "UTF-8" in locations[f"{log_file.display}:8"]
    assert run_scan(snap, select_analyzers()).findings  # and the scan still runs on the same snapshot


def test_tarball_scan_matches_directory_scan(tmp_path: Path) -> None:
    archive = tmp_path / "engine-basic.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(BUNDLES / "engine-basic", arcname="engine-basic")
    assert _json_scan(archive)["findings"] == _json_scan(BUNDLES / "engine-basic")["findings"]


def test_every_example_validates_against_the_contract() -> None:
    bundles = sorted(p.parent for p in EXAMPLES.rglob("bundle.yaml"))
    assert bundles
    for bundle in bundles:
        doc = _json_scan(bundle)
        assert doc["findings"], bundle


def test_unknown_kinds_unless_a_crd_or_a_health_script_defines_them(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    objects.mkdir()
    (objects / "custom.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n---\n"
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c, namespace: default}\n---\n"
        "apiVersion: stable.example.org/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\n"
    )
    (objects / "crd.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: gadgets.stable.example.org}\n"
        "spec: {group: stable.example.org, names: {kind: Gadget, plural: gadgets}, scope: Namespaced}\n"
    )
    (objects / "argocd-cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n"
        "  resource.customizations.health.cert-manager.io_Certificate: |\n    return {status = 'Healthy'}\n"
    )
    doc = _json_scan(objects)
    unknown = [e for e in doc["errors"] if "no check reads" in e["message"]]
    assert [(e["location"], e["kind"]) for e in unknown] == [("custom.yaml:1", "note")]
    assert unknown[0]["message"].startswith("1 object(s) of 1 kind(s) that no check reads: Widget (example.com/v1, 1);")


def test_kinds_no_check_reads_are_one_note_not_errors(tmp_path: Path) -> None:
    """A GitOps repository's monitoring objects and kustomize build files: one note, however many kinds."""
    kinds = [("monitoring.coreos.com/v1", kind) for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule")]
    kinds += [("autoscaling.k8s.io/v1", "VerticalPodAutoscaler"), ("kustomize.config.k8s.io/v1beta1", "Kustomization")]
    kinds += [(f"example{i}.com/v1", f"Thing{i}") for i in range(6)]
    (tmp_path / "repo.yaml").write_text("---\n".join(
        f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: x, namespace: monitoring}}\n" for api, kind in kinds))
    doc = _json_scan(tmp_path)
    (note,) = doc["errors"]
    assert note["kind"] == "note" and note["location"] == "repo.yaml:13"  # the first kind named, by group
    assert note["message"].startswith("11 object(s) of 11 kind(s) that no check reads: ")
    assert "Kustomization (kustomize.config.k8s.io/v1beta1, 1)" in note["message"] and "and 3 more;" in note["message"]





def test_malformed_fields_do_not_break_the_rules(tmp_path: Path) -> None:
    bundle = tmp_path / "odd"
    shutil.copytree(BUNDLES / "engine-basic", bundle)
    apps = bundle / "objects" / "odd-apps.yaml"
    apps.write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: odd, namespace: argocd}\n"
        "status:\n  health: {status: Degraded}\n  conditions: 5\n  resources: [7, {kind: Deployment}]\n"
        "  operationState: {phase: Failed, retryCount: x, syncResult: {resources: 7}, operation: 3}\n"
        "---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: stringy, namespace: argocd}\n"
        "status: oops\n"
    )
    doc = _json_scan(bundle)
    titles = {f["title"] for f in doc["findings"]}
    assert "Application odd is Degraded" in titles and any(t.startswith("Sync of odd failed") for t in titles)
    assert not [e for e in doc["errors"] if e["location"].startswith("analyzer")]


def test_an_analyzer_crash_is_reported_and_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    from argo_doctor.analyzers.sync_failed import SyncFailed

    def broken(self: SyncFailed, ctx: object) -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(SyncFailed, "analyze", broken)
    code, out = _scan(str(BUNDLES / "engine-basic"), "-o", "json")
    assert code == 3
    doc = json.loads(out[: out.rindex("}") + 1])
    assert _rules(doc) == {"app-unhealthy", "component-known-bug"}
    assert {"location": "analyzer sync-failed", "message": "internal error: RuntimeError: boom",
            "kind": "error"} in doc["errors"]


def test_unknown_kinds_in_builtin_looking_groups(tmp_path: Path) -> None:
    (tmp_path / "objs.yaml").write_text(
        "apiVersion: v1\nkind: Foo\nmetadata: {name: f}\n---\n"
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: default}\n---\n"
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, namespace: default}\n"
    )
    doc = _json_scan(tmp_path)
    (unknown,) = [e["message"] for e in doc["errors"] if "no check reads" in e["message"]]
    assert ": Foo (v1, 1);" in unknown and "HTTPRoute" not in unknown
    notes = [e["message"] for e in doc["errors"] if "lua fetch" in e["message"]]
    assert len(notes) == 1 and "HTTPRoute" in notes[0]


def _notes_and_errors(tmp_path: Path) -> Path:
    """Two collections of one Certificate (a duplicate and the note on its missing Lua script) and a file that is
    not YAML (an error)."""
    cert = ("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: web\n  namespace: shop\n"
            "  resourceVersion: \"{}\"\n")
    (tmp_path / "monday.yaml").write_text(cert.format(7))
    (tmp_path / "tuesday.yaml").write_text(cert.format(9))
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    return tmp_path


def test_notes_are_not_called_errors(tmp_path: Path) -> None:
    """The duplicate and the Lua note are notes, apart from the input error, in every format."""
    folder = _notes_and_errors(tmp_path)
    doc = _json_scan(folder)
    kinds = {e["location"]: e["kind"] for e in doc["errors"]}
    assert kinds == {"broken.yaml:2": "error", "monday.yaml:1": "note", "Lua health scripts": "note"}
    code, out = _scan(str(folder), "--fail-on", "never")
    lines = [line.strip() for line in out.splitlines()]
    assert code == 0 and "input problem" not in out
    errors, notes = lines.index("1 input error(s); the scan went on without them:"), lines.index(
        "2 note(s) on the input:")
    assert lines[errors + 1].startswith("broken.yaml:2: ") and errors < notes
    assert lines[notes + 1].startswith("monday.yaml:1: Certificate shop/web is read more than once")
    code, markdown = _scan(str(folder), "-o", "markdown", "--fail-on", "never")
    assert "## Input errors\n\n- `broken.yaml:2`" in markdown
    assert "## Notes on the input\n\n- `monday.yaml:1`: Certificate shop/web" in markdown


def test_timeline_reports_the_input_notes_and_errors(tmp_path: Path) -> None:
    """`timeline` tells of the input as `scan` does, after the entries, and says so when it has no entry."""
    folder = _notes_and_errors(tmp_path)
    result = CliRunner().invoke(main, ["timeline", str(folder)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "no timeline entry: the input holds no timestamped log line, event, audit record or object"
    assert "1 input error(s); the scan went on without them:" in lines and "2 note(s) on the input:" in lines
    assert any(line.startswith("  monday.yaml:1: Certificate shop/web is read more than once") for line in lines)
    doc = json.loads(CliRunner().invoke(main, ["timeline", str(folder), "-o", "json"]).stdout)
    assert doc["timeline"] == [] and {(e["location"], e["kind"]) for e in doc["errors"]} == {
        ("broken.yaml:2", "error"), ("monday.yaml:1", "note"), ("Lua health scripts", "note")}
    window = CliRunner().invoke(main, ["timeline", str(EXAMPLES / "argocd-basic"), "--around", "2000-01-01T00:00:00Z"])
    said, empty = window.stdout.splitlines()[:2]
    assert said.startswith("window: 1999-12-31T23:55:00Z to 2000-01-01T00:05:00Z (--around 2000-01-01T00:00:00Z, "
                           "--window 10m): 0 of ")
    assert empty.startswith("no timeline entry: none of the ")


@pytest.mark.parametrize("command", ["scan", "timeline", "map"])
def test_the_scanning_commands_make_no_cyclic_collection(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`scan`, `timeline` and `map` load, scan and report without cyclic collection, as they make few cycles, and
    leave what they made out of the collections that follow (the first would walk it all), with collection on
    again."""
    seen = []

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen.append(gc.isenabled())
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(bundle_source, "load", spy(bundle_source.load))
    monkeypatch.setattr(cli_scan, "run_scan", spy(cli_scan.run_scan))
    monkeypatch.setattr(cli_timeline, "run_scan", spy(cli_timeline.run_scan))
    monkeypatch.setattr(cli_map, "installation_map", spy(cli_map.installation_map))
    monkeypatch.setitem(REPORTERS, "json", spy(REPORTERS["json"]))
    frozen = gc.get_freeze_count()
    result = CliRunner().invoke(main, [command, str(EXAMPLES / "incidents" / "unwanted-sync"), "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    assert seen == [False] * {"scan": 3, "timeline": 2, "map": 2}[command] and gc.isenabled()
    assert gc.get_freeze_count() > frozen


def test_a_failing_scan_freezes_nothing() -> None:
    """An error's traceback may hold the whole snapshot in a cycle: frozen, it would outlive the command in a caller's
    process."""
    frozen = gc.get_freeze_count()
    code, out = _scan(str(EXAMPLES / "incidents" / "unwanted-sync"), "--option", "node-clock-skew.min-samples=abc")
    assert code == 2 and "is not a number" in out and gc.get_freeze_count() <= frozen and gc.isenabled()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_scan_leaves_garbage_collection_as_it_found_it(enabled: bool, tmp_path: Path) -> None:
    """The log and audit passes run without cyclic collection, which is switched back on after them."""
    snap = bundle_source.load([BUNDLES / "engine-basic"], tmp_path)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        run_scan(snap, select_analyzers())
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()



CLIENT_PACKAGES = ("httpx", "httpx2", "lightkube", "jwt", "psycopg", "starlette", "uvicorn", "cryptography")
"""What only `--live`, `fix`, `serve`, `audit`, `github-app` and the Lua-script download use."""


def test_a_scan_of_files_imports_no_client_package() -> None:
    """`scan` of a bundle starts without the HTTP clients, database driver and web server (a third of its start-up)."""
    script = (
        "import sys\n"
        "from argo_doctor.cli import main\n"
        "try:\n"
        f"    main(['scan', {str(EXAMPLES / 'incidents' / 'stuck-rollout')!r}, '-o', 'json'])\n"
        "finally:\n"
        f"    print(sorted({{m.partition('.')[0] for m in sys.modules}} & set({CLIENT_PACKAGES!r})), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr  # findings
    assert json.loads(done.stdout)["findings"]
    assert done.stderr.splitlines()[-1] == "[]"


def test_a_secret_value_that_is_a_name_of_the_input_does_not_hide_that_name(tmp_path: Path) -> None:
    """argo-helm's external-redis values with `externalRedis.password: argocd`: the namespace and every component
    name hold it; the scan names them, and says which Secret value it left as it is."""
    bundle = tmp_path / "external-redis"
    shutil.copytree(BUNDLES / "rbac-argocd-defaults", bundle)
    (bundle / "objects" / "redis-secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: argocd-redis\n  namespace: argocd\ntype: Opaque\n"
        "data:\n  auth: YXJnb2Nk\n")  # "argocd"
    doc = _json_scan(bundle)
    text = json.dumps(doc)
    assert "<redacted secret value>" not in text
    assert any(f["title"].startswith("ServiceAccount argocd/argocd-application-controller") for f in doc["findings"])
    (note,) = [e for e in doc["errors"] if "left as they are" in e["message"]]
    assert note == {"location": "objects/redis-secret.yaml:1", "kind": "note", "message": (
        "1 Secret value(s) are left as they are in texts, not worth hiding (key auth of Secret argocd/argocd-redis: "
        "the name of an object, a namespace or a label in the input); passwords, tokens and keys in their usual "
        "forms are masked all the same")}
