"""`redact_bundle`: a redacted bundle holds no secret, scans to the same findings, and redacts to itself.

Canaries (distinct, random-looking values) are planted in real formats in a copy of an example bundle: Secret data,
stringData and last-applied annotation, a typed SecretList, a ConfigMap URL, Application Helm values and
valuesObject, a container env, logs (a JWT in an Authorization header and in logrus text, a PEM private key over
several timestamped lines, Secret values quoted in messages) and an audit event (a Secret patch, a TokenRequest).
Neither a canary nor its base64 may appear in any output file or tarball.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import shutil
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.errors import ConfigError, InputError
from argo_doctor.model import Problem
from argo_doctor.sources import bundle
from argo_doctor.sources.rewrite import redact_bundle
from tests.conftest import BUNDLES, EXAMPLES

JWT = ("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJRejdqd3RDQU5BUlkiLCJpYXQiOjE3NjQ1OTc2MDB9"
       ".Qz7jwtSIGNATUREcanary0123456789abcdefghijklmnopqrstuvwxyzABCDEF")
PEM_LINES = (base64.b64encode(bytes(range(60, 108))).decode(), base64.b64encode(bytes(range(140, 152))).decode())
CANARY = {
    "secret-data": "Qz7secretDATA91x",
    "secret-stringdata": "Qz7stringDATA92x",
    "applied": "Qz7appliedOLD93x",
    "list-item": "Qz7listITEM94xx",
    "url-password": "Qz7urlPASS95xx",
    "helm-values": "Qz7helmPASS96x",
    "values-object": "Qz7valuesTOK97x",
    "env": "Qz7envPASS98xx",
    "jwt-signature": JWT.rsplit(".", 1)[1],
    "pem-line": PEM_LINES[0],
    "pem-last-line": PEM_LINES[1],
    "audit-patch": "Qz7auditPATCH99",
    "audit-token": "Qz7auditTOKEN00",
}
PLANTED_COUNTS = Counter({"secret-value": 5, "url-password": 1, "helm-value": 2, "env-value": 1, "jwt": 2,
                          "private-key": 1, "secret-copy": 2, "credential-field": 1})
"""What the plants add to the counts of the bundle they are planted in."""
TIME = "2026-11-22T15:29:00.000000000Z"


def b64(text: str) -> str:
    """Base64 of a text, as Secret data holds it."""
    return base64.b64encode(text.encode()).decode()


def leaks(data: bytes) -> list[str]:
    """The canaries (or their base64) in some output bytes."""
    text = data.decode("utf-8", "replace")
    return sorted(place for place, value in CANARY.items() if value in text or b64(value) in text)


def tree_leaks(root: Path) -> dict[str, list[str]]:
    """The canaries in each file under `root` (tarballs decompressed)."""
    found = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        places = leaks(gzip.decompress(data) if data.startswith(b"\x1f\x8b") else data)
        if places:
            found[str(path.relative_to(root))] = places
    return found


def write_yaml(path: Path, docs: list[dict[str, Any]]) -> None:
    """Multi-document YAML, as kubectl writes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def append(path: Path, *lines: str) -> None:
    """Lines added at the end of a text file."""
    with path.open("a", encoding="utf-8") as out:
        out.write("".join(line + "\n" for line in lines))


def plant(root: Path) -> None:
    """Every canary, in the bundle at `root` (an example's copy)."""
    applied = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "planted-db", "namespace": "argocd"},
               "data": {"password": b64(CANARY["applied"])}}
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": "planted-db", "namespace": "argocd", "annotations": {
                  "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied) + "\n"}},
              "data": {"password": b64(CANARY["secret-data"])}, "stringData": {"token": CANARY["secret-stringdata"]}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "planted-config", "namespace": "argocd"},
              "data": {"repo.url": f"https://deploy:{CANARY['url-password']}@git.example.com/acme/charts.git",
                       "replicas": "3"}}
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
           "metadata": {"name": "planted-app", "namespace": "argocd"},
           "spec": {"project": "default", "destination": {"server": "https://kubernetes.default.svc",
                                                          "namespace": "planted"},
                    "source": {"repoURL": "https://git.example.com/acme/charts.git", "path": "charts/db",
                               "targetRevision": "main", "helm": {
                                   "values": f"db:\n  password: {CANARY['helm-values']}  # set by hand\n  user: app\n",
                                   "valuesObject": {"auth": {"apiToken": CANARY["values-object"], "enabled": True}},
                                   "parameters": [{"name": "image.tag", "value": "1.4.2"}]}}}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "planted-db", "namespace": "planted", "labels": {"app": "planted-db"}},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "planted-db"}},
                           "template": {"metadata": {"labels": {"app": "planted-db"}}, "spec": {"containers": [{
                               "name": "db", "image": "postgres:16",
                               "env": [{"name": "POSTGRES_PASSWORD", "value": CANARY["env"]},
                                       {"name": "POSTGRES_USER", "value": "app"}]}]}}}}
    write_yaml(root / "objects" / "planted" / "objects.yaml", [secret, config, app, deployment])
    (root / "objects" / "planted" / "secrets.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "SecretList",
        "items": [{"metadata": {"name": "planted-list", "namespace": "planted"},
                   "data": {"key": b64(CANARY["list-item"])}}]}, indent=4))
    log = sorted((root / "logs").rglob("*.log"))[0]
    append(log,
           f'{TIME} time="2026-11-22T15:29:00Z" level=error msg="request failed" header="Authorization: Bearer {JWT}"',
           f'{TIME} time="2026-11-22T15:29:01Z" level=info msg="token refreshed" jwt={JWT}',
           f"{TIME} -----BEGIN RSA PRIVATE KEY-----",
           f"{TIME} {PEM_LINES[0]}",
           f"{TIME} {PEM_LINES[1]}",
           f"{TIME} -----END RSA PRIVATE KEY-----",
           f'{TIME} time="2026-11-22T15:29:02Z" level=error msg="authentication failed for {CANARY["secret-data"]}"',
           f'{TIME} time="2026-11-22T15:29:03Z" level=warning msg="retrying with {CANARY["applied"]}"')
    event = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
             "auditID": "0b6a54ce-0000-4000-8000-000000000001", "stage": "ResponseComplete",
             "requestURI": "/api/v1/namespaces/argocd/secrets/planted-db", "verb": "patch",
             "user": {"username": "admin"},
             "objectRef": {"resource": "secrets", "namespace": "argocd", "name": "planted-db", "apiVersion": "v1"},
             "responseStatus": {"metadata": {}, "code": 200},
             "requestObject": {"data": {"password": b64(CANARY["audit-patch"])}},
             "responseObject": {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                                "status": {"token": CANARY["audit-token"],
                                           "expirationTimestamp": "2026-11-22T16:29:00Z"}},
             "requestReceivedTimestamp": "2026-11-22T15:29:04.000000Z",
             "stageTimestamp": "2026-11-22T15:29:04.010000Z"}
    (root / "audit").mkdir(exist_ok=True)
    append(root / "audit" / "kube-apiserver-audit.log", json.dumps(event))


def copy(source: Path, dest: Path) -> Path:
    """A copy of a bundle to plant in."""
    shutil.copytree(source, dest)
    return dest


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """The unwanted-sync example with every canary planted."""
    root = copy(EXAMPLES / "incidents" / "unwanted-sync", tmp_path / "planted")
    plant(root)
    assert leaks(b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())) == sorted(CANARY)
    return root


def finding_ids(path: Path, workdir: Path) -> list[str]:
    """The ids of the findings of a scan of `path`."""
    snap = bundle.load([path], workdir)
    return sorted(f.id for f in run_scan(snap, select_analyzers()).findings)


def redact(source: Path, out: Path, **options: bool) -> tuple[Counter[str], list[Problem]]:
    problems: list[Problem] = []
    return redact_bundle(source, out, problems, **options), problems


def same_tree(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes."""
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    return files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()) and all(
        (a / f).read_bytes() == (b / f).read_bytes() for f in files)


def test_no_canary_survives_and_counts_are_per_kind(planted: Path, tmp_path: Path) -> None:
    base, _ = redact(EXAMPLES / "incidents" / "unwanted-sync", tmp_path / "base")
    counts, problems = redact(planted, tmp_path / "out")
    assert problems == []
    assert tree_leaks(tmp_path / "out") == {}
    assert counts - base == PLANTED_COUNTS
    assert base == Counter({"secret-value": 6})  # the example's TLS Secret: three values, and its last-applied copy


def test_redacted_places_keep_their_shape(planted: Path, tmp_path: Path) -> None:
    redact(planted, tmp_path / "out")
    out = tmp_path / "out"
    secret, config, app, deployment = yaml.safe_load_all((out / "objects" / "planted" / "objects.yaml").read_text())
    fingerprint = secret["data"]["password"]
    assert fingerprint.startswith("sha256:") and len(fingerprint) == 23 and set(secret) >= {"data", "stringData"}
    applied = json.loads(secret["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert applied["data"]["password"].startswith("sha256:") and applied["metadata"]["name"] == "planted-db"
    assert config["data"] == {"repo.url": "https://deploy:<redacted>@git.example.com/acme/charts.git", "replicas": "3"}
    helm = app["spec"]["source"]["helm"]
    assert helm["values"] == "db:\n  password: <redacted>  # set by hand\n  user: app\n"
    assert helm["valuesObject"] == {"auth": {"apiToken": "<redacted>", "enabled": True}}
    assert helm["parameters"] == [{"name": "image.tag", "value": "1.4.2"}]
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "POSTGRES_PASSWORD", "value": "<redacted>"}, {"name": "POSTGRES_USER", "value": "app"}]
    listed = json.loads((out / "objects" / "planted" / "secrets.json").read_text())
    assert "kind" not in listed["items"][0] and listed["items"][0]["data"]["key"].startswith("sha256:")
    log = sorted((out / "logs").rglob("*.log"))[0].read_text()
    assert "Authorization: Bearer <redacted jwt>" in log and "jwt=<redacted jwt>" in log
    assert log.count(f"{TIME} <redacted private key>\n") == 4
    assert "authentication failed for <redacted secret value>" in log
    event = json.loads((out / "audit" / "kube-apiserver-audit.log").read_text().splitlines()[-1])
    assert event["requestObject"]["data"]["password"].startswith("sha256:") and "kind" not in event["requestObject"]
    assert event["responseObject"]["status"]["token"] == "<redacted>"
    assert event["objectRef"]["name"] == "planted-db" and event["user"] == {"username": "admin"}


def test_untouched_lines_are_byte_identical(planted: Path, tmp_path: Path) -> None:
    redact(planted, tmp_path / "out")
    original = (planted / "audit" / "kube-apiserver-audit.log").read_bytes().splitlines()
    redacted = (tmp_path / "out" / "audit" / "kube-apiserver-audit.log").read_bytes().splitlines()
    assert redacted[:-1] == original[:-1] and redacted[-1] != original[-1]  # only the planted event changed
    for log in sorted((planted / "logs").rglob("*.log"))[1:]:
        assert (tmp_path / "out" / log.relative_to(planted)).read_bytes() == log.read_bytes()


def test_redaction_is_idempotent(planted: Path, tmp_path: Path) -> None:
    redact(planted, tmp_path / "once")
    counts, problems = redact(tmp_path / "once", tmp_path / "twice")
    assert counts == Counter() and problems == []
    assert same_tree(tmp_path / "once", tmp_path / "twice")


@pytest.mark.parametrize("source", [EXAMPLES / "incidents" / "unwanted-sync", BUNDLES / "webhook-ca-mismatch"])
def test_scan_of_the_redacted_bundle_finds_the_same(source: Path, tmp_path: Path) -> None:
    root = copy(source, tmp_path / "source")
    plant(root)
    redact(root, tmp_path / "out")
    before = finding_ids(root, tmp_path)
    assert before and finding_ids(tmp_path / "out", tmp_path) == before


def test_webhook_ca_mismatch_survives_by_fingerprint(tmp_path: Path) -> None:
    """The rule compares the fingerprint of a Secret's ca.crt with its caBundle's: the redacted bundle keeps it."""
    redact(BUNDLES / "webhook-ca-mismatch", tmp_path / "out")
    snap = bundle.load([tmp_path / "out"], tmp_path)
    assert "webhook-ca-mismatch" in {f.rule for f in run_scan(snap, select_analyzers()).findings}
    original = bundle.load([BUNDLES / "webhook-ca-mismatch"], tmp_path).get("Secret", "policy-webhook-tls", "policy",
                                                                            "")
    redacted = snap.get("Secret", "policy-webhook-tls", "policy", "")
    assert original is not None and redacted is not None and redacted.raw["data"] == original.raw["data"]


def test_tarball_in_and_out(planted: Path, tmp_path: Path) -> None:
    source = tmp_path / "planted.tgz"
    with tarfile.open(source, "w:gz") as tar:
        tar.add(planted, arcname="planted")
    out = tmp_path / "shared" / "redacted.tar.gz"
    counts, problems = redact(source, out)
    assert problems == [] and counts["secret-value"] == 11
    data = gzip.decompress(out.read_bytes())
    assert leaks(data) == []
    with tarfile.open(out) as tar:
        members = tar.getmembers()
    assert members and all(m.isreg() and m.mode == 0o644 and m.uname == m.gname == "" and m.uid == 0 and
                           m.mtime == 0 and m.name.startswith("redacted/") for m in members)
    assert finding_ids(out, tmp_path) == finding_ids(planted, tmp_path)
    again, _ = redact(out, tmp_path / "again" / "redacted.tar.gz")
    assert again == Counter() and (tmp_path / "again" / "redacted.tar.gz").read_bytes() == out.read_bytes()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no working folder left


def test_truncated_tarball_is_a_problem(planted: Path, tmp_path: Path) -> None:
    """Cut after the objects (whose Secret values the text redaction needs): what came before is redacted."""
    whole = io.BytesIO()
    with tarfile.open(fileobj=whole, mode="w") as tar:
        for name in ("objects", "bundle.yaml", "audit", "logs", "repo"):
            tar.add(planted / name, arcname=f"planted/{name}")
    source = tmp_path / "cut.tar"
    source.write_bytes(whole.getvalue()[: len(whole.getvalue()) * 2 // 3])
    counts, problems = redact(source, tmp_path / "out")
    assert any("truncated" in p.message for p in problems)
    assert tree_leaks(tmp_path / "out") == {} and (tmp_path / "out" / "objects").is_dir()
    assert counts["secret-value"] > 0


def test_unsafe_entries_are_problems(tmp_path: Path) -> None:
    source = tmp_path / "hostile.tar.gz"
    with tarfile.open(source, "w:gz") as tar:
        for name, data in (("bundle/objects/cm.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
                           ("../escape.yaml", b"x: 1\n"), ("/etc/absolute.yaml", b"x: 1\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("bundle/logs/ns/pod/c.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    counts, problems = redact(source, tmp_path / "out")
    reasons = " ".join(p.message for p in problems)
    assert "goes up with '..'" in reasons and "absolute" in reasons and "/etc/passwd" in reasons
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file()) \
        == ["objects/cm.yaml"]
    assert not (tmp_path / "escape.yaml").exists() and counts == Counter()


def test_unparsable_object_files_and_binary_junk_go_through_the_text_redaction(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    (root / "objects").mkdir(parents=True)
    (root / "objects" / "broken.yaml").write_text(
        f"apiVersion: v1\nkind: Secret\ndata:\n  password: {b64(CANARY['secret-data'])}\n  bad: [\n")
    junk = b"\xff\xfe\x00binary junk\n" + f"password={CANARY['env']} \xe9t\xe9\n".encode("latin-1")
    (root / "logs" / "ns" / "pod").mkdir(parents=True)
    (root / "logs" / "ns" / "pod" / "c.log").write_bytes(junk)
    counts, problems = redact(root, tmp_path / "out")
    assert [p.location for p in problems] == ["objects/broken.yaml:6"]
    assert "copied line by line through the text redaction" in problems[0].message
    assert tree_leaks(tmp_path / "out") == {} and counts["password"] == 2
    assert (tmp_path / "out" / "logs" / "ns" / "pod" / "c.log").read_bytes() == (
        b"\xff\xfe\x00binary junk\npassword=<redacted> \xe9t\xe9\n")


def test_gzip_audit_is_redacted_inside(planted: Path, tmp_path: Path) -> None:
    log = planted / "audit" / "kube-apiserver-audit.log"
    (planted / "audit" / "kube-apiserver-audit.log.gz").write_bytes(gzip.compress(log.read_bytes()))
    log.unlink()
    redact(planted, tmp_path / "out")
    data = (tmp_path / "out" / "audit" / "kube-apiserver-audit.log.gz").read_bytes()
    assert data.startswith(b"\x1f\x8b") and leaks(gzip.decompress(data)) == []


def test_a_gzip_bomb_is_copied_only_up_to_the_audit_readers_bound(planted: Path, tmp_path: Path) -> None:
    line = b'{"kind":"Event","apiVersion":"audit.k8s.io/v1"}\n'  # 64 MiB of it compresses about 1,000:1
    (planted / "audit" / "bomb.log.gz").write_bytes(gzip.compress(line * ((64 << 20) // len(line)), 9))
    _, problems = redact(planted, tmp_path / "out")
    (bomb,) = [p for p in problems if p.location.endswith("bomb.log.gz")]
    assert bomb.message.startswith("gzip expands more than 200 times") and bomb.message.endswith("not copied")
    copied = gzip.decompress((tmp_path / "out" / "audit" / "bomb.log.gz").read_bytes())
    assert 0 < len(copied) < 32 << 20 and copied.startswith(line)  # stopped well before its 64 MiB


def test_output_is_checked_before_anything_is_written(planted: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="outside the bundle"):
        redact(planted, planted / "redacted")
    with pytest.raises(ConfigError, match="outside the bundle"):
        redact(planted, planted)
    with pytest.raises(ConfigError, match="outside the bundle"):
        redact(planted, tmp_path)  # the output would hold the source
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine\n")
    with pytest.raises(ConfigError, match="not empty"):
        redact(planted, tmp_path / "busy")
    redact(planted, tmp_path / "busy", force=True)
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine\n" and (tmp_path / "busy" / "objects").is_dir()
    (tmp_path / "old.tar.gz").write_bytes(b"")
    with pytest.raises(ConfigError, match="exists"):
        redact(planted, tmp_path / "old.tar.gz")
    with pytest.raises(InputError, match="not a bundle"):
        redact(planted / "objects" / "argocd", tmp_path / "none")


API_KEY = "qz7onlylowercaseapikey"
SLACK_PATH = "T0ACME01/B0ACME02/Qz7slackHOOKpath0123"


@pytest.fixture
def notified(tmp_path: Path) -> Path:
    """The argocd-basic example with an application ConfigMap holding a password and argocd-notifications-cm (a
    webhook with an API key header, a Slack webhook), one document after the other as kubectl writes several objects."""
    root = copy(EXAMPLES / "argocd-basic", tmp_path / "notified")
    notifications = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "argocd-notifications-cm", "namespace": "argocd"},
                     "data": {"service.webhook.opsgenie": "url: https://api.opsgenie.com/v2/alerts\nheaders:\n"
                                                          "- name: Content-Type\n  value: application/json\n"
                                                          f"- name: X-Api-Key\n  value: {API_KEY}\n",
                              "service.webhook.slack": f"url: https://hooks.slack.com/services/{SLACK_PATH}\n"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ledger-config", "namespace": "payments"},
              "data": {"DB_HOST": "ledger-db", "DB_PASSWORD": "Qz7ledgerPW"}}
    write_yaml(root / "objects" / "argocd" / "notifications.yaml", [config, notifications])
    return root


def test_a_redacted_bundle_redacts_to_the_same_bytes(notified: Path, tmp_path: Path) -> None:
    """A document whose last line became `<redacted>` is followed by another: a second pass adds no `null`
    document."""
    redact(notified, tmp_path / "once")
    counts, problems = redact(tmp_path / "once", tmp_path / "twice")
    assert counts == Counter() and problems == []
    assert same_tree(tmp_path / "once", tmp_path / "twice")
    docs = list(yaml.safe_load_all((tmp_path / "twice" / "objects" / "argocd" / "notifications.yaml").read_text()))
    assert [d["metadata"]["name"] for d in docs] == ["ledger-config", "argocd-notifications-cm"]


def test_notification_service_headers_and_webhook_paths_never_reach_a_redacted_bundle(notified: Path,
                                                                                       tmp_path: Path) -> None:
    counts, _ = redact(notified, tmp_path / "out")
    text = (tmp_path / "out" / "objects" / "argocd" / "notifications.yaml").read_text()
    assert API_KEY not in text and "Qz7slack" not in text
    _, notifications = yaml.safe_load_all(text)
    assert notifications["data"] == {
        "service.webhook.opsgenie": "url: https://api.opsgenie.com/v2/alerts\nheaders:\n"
                                    "- name: Content-Type\n  value: application/json\n"
                                    "- name: X-Api-Key\n  value: <redacted>\n",
        "service.webhook.slack": "url: https://hooks.slack.com/services/<redacted>\n"}
    assert counts["header-value"] == 1 and counts["webhook-url"] == 1
