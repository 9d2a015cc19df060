"""`argo-doctor lua fetch` and `lua list`, the cache, and the scans' automatic use of it.

A local HTTP server stands in for github.com and api.github.com; the release archives are built here in the
layout GitHub serves (`argo-cd-<n>/resource_customizations/<group>/<Kind>/health.lua`), with scripts of our own.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from argo_doctor.cli import main
from argo_doctor.health.cache import GITHUB_API_URL_ENV, GITHUB_URL_ENV, cache_root

CERTIFICATE_SCRIPT = """\
local hs = {status = "Progressing", message = "Issuing"}
for _, c in ipairs((obj.status or {}).conditions or {}) do
  if c.type == "Ready" then
    hs.status = c.status == "True" and "Healthy" or "Degraded"
    hs.message = c.message or ""
  end
end
return hs
"""

GOTO_SCRIPT = """\
local pending = 0
for _, c in ipairs((obj.status or {}).conditions or {}) do
  if c.status == "True" then
    goto continue
  end
  pending = pending + 1
  ::continue::
end
if pending == 0 then
  return {status = "Healthy", message = "all conditions met"}
end
return {status = "Progressing", message = pending .. " condition(s) pending"}
"""

WILDCARD_SCRIPT = 'return {status = "Healthy", message = "wildcard script for " .. obj.kind}'
EXACT_SCRIPT = 'return {status = "Suspended", message = "exact script for " .. obj.kind}'

RELEASE = {
    "cert-manager.io/Certificate/health.lua": CERTIFICATE_SCRIPT,
    "cert-manager.io/Certificate/health_test.yaml": "tests: []\n",
    "cert-manager.io/Certificate/actions/renew/action.lua": "return obj\n",
    "pipelines.example.dev/Stage/health.lua": GOTO_SCRIPT,
    "_.crossplane.io/_/health.lua": WILDCARD_SCRIPT,
    "s3.aws.crossplane.io/Bucket/health.lua": EXACT_SCRIPT,
}


def _archive(version: str, files: dict[str, str], top: str | None = None, extra: tuple[tarfile.TarInfo, ...] = ()
             ) -> bytes:
    """A gzipped tar as GitHub serves a tag's source: one top folder, the repository's files below."""
    top = top or f"argo-cd-{version.removeprefix('v')}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        readme = b"# Argo CD\n"
        info = tarfile.TarInfo(f"{top}/README.md")
        info.size = len(readme)
        tar.addfile(info, io.BytesIO(readme))
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/resource_customizations/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    return buffer.getvalue()


class _GitHub:
    """What the fake GitHub serves (path → status, body) and the paths it was asked for."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, bytes]] = {}
        self.content_types: dict[str, str] = {}
        self.requests: list[str] = []
        self.url = ""

    def release(self, version: str, body: bytes) -> None:
        self.routes[f"/argoproj/argo-cd/archive/refs/tags/{version}.tar.gz"] = (200, body)

    def latest(self, tag: str) -> None:
        body = json.dumps({"tag_name": tag, "name": tag, "draft": False, "prerelease": False}).encode()
        self.routes["/repos/argoproj/argo-cd/releases/latest"] = (200, body)


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_GitHub]:
    """A local server for both GitHub addresses, and a cache under tmp_path (never the real home)."""
    fake = _GitHub()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fake.requests.append(self.path)
            status, body = fake.routes.get(self.path, (404, b"Not Found"))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            if self.path in fake.content_types:
                self.send_header("Content-Type", fake.content_types[self.path])
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv(GITHUB_URL_ENV, url)
    monkeypatch.setenv(GITHUB_API_URL_ENV, url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    yield fake
    server.shutdown()
    server.server_close()


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _cached(tmp_path: Path) -> Path:
    return tmp_path / "xdg-cache" / "argo-doctor" / "lua"


def _snapshot_of_cache(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- fetch -------------------------------------------------------------------------------------------------------


def test_fetch_an_explicit_version_into_xdg_cache_home(github: _GitHub, tmp_path: Path) -> None:
    body = _archive("v3.5.1", RELEASE)
    github.release("v3.5.1", body)
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 0, result.output
    folder = _cached(tmp_path) / "v3.5.1"
    assert result.stdout.startswith(f"Fetched 4 health scripts of Argo CD v3.5.1 into {folder}\n")
    assert result.stdout.splitlines()[-5:] == [
        "GROUP                   KINDS",
        "*.crossplane.io         *",
        "cert-manager.io         Certificate",
        "pipelines.example.dev   Stage",
        "s3.aws.crossplane.io    Bucket",
    ]
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.lua")) == [
        "_.crossplane.io/_/health.lua", "cert-manager.io/Certificate/health.lua",
        "pipelines.example.dev/Stage/health.lua", "s3.aws.crossplane.io/Bucket/health.lua",
    ]  # no action.lua, no test files, no README
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["version"] == "v3.5.1"
    assert manifest["source"].endswith("/argoproj/argo-cd/archive/refs/tags/v3.5.1.tar.gz")
    assert manifest["archiveSha256"] == hashlib.sha256(body).hexdigest()
    assert manifest["fetchedAt"].endswith("Z")
    stage = manifest["scripts"]["pipelines.example.dev/Stage/health.lua"]
    assert stage == hashlib.sha256(GOTO_SCRIPT.encode()).hexdigest()
    assert not (tmp_path / "home").exists()  # XDG_CACHE_HOME, not ~/.cache
    assert [p.name for p in _cached(tmp_path).iterdir()] == ["v3.5.1"]  # no temporary folder left

    listed = _run("lua", "list", "-o", "json")
    doc = json.loads(listed.stdout)
    assert [(v["version"], v["scripts"]) for v in doc["versions"]] == [("v3.5.1", 4)]


def test_fetch_json_output(github: _GitHub) -> None:
    github.release("v3.5.0-rc2", _archive("v3.5.0-rc2", RELEASE))
    result = _run("lua", "fetch", "--argocd-version", "v3.5.0-rc2", "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["version"] == "v3.5.0-rc2" and doc["scripts"] == 4
    assert "_.crossplane.io/_" in doc["kinds"] and len(doc["archiveSha256"]) == 64


def test_without_home_or_xdg_the_cache_is_under_home() -> None:
    assert cache_root({"HOME": "/home/ops"}) == Path("/home/ops/.cache/argo-doctor/lua")
    assert cache_root({"HOME": "/home/ops", "XDG_CACHE_HOME": "relative"}) == Path("/home/ops/.cache/argo-doctor/lua")
    assert cache_root({"HOME": "/home/ops", "XDG_CACHE_HOME": "/var/cache/me"}) == Path("/var/cache/me/argo-doctor/lua")


def _controller(version: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: argocd-application-controller
  namespace: argocd
  labels: {{app.kubernetes.io/name: argocd-application-controller, app.kubernetes.io/part-of: argocd}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app.kubernetes.io/name: argocd-application-controller}}
  template:
    metadata:
      labels: {{app.kubernetes.io/name: argocd-application-controller}}
    spec:
      serviceAccountName: argocd-application-controller
      containers:
      - name: argocd-application-controller
        image: quay.io/argoproj/argocd:{version}
"""


CERTIFICATES = """\
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: storefront-tls, namespace: shop}
spec: {secretName: storefront-tls, dnsNames: [shop.example.com], issuerRef: {kind: ClusterIssuer, name: acme}}
status:
  conditions:
  - {type: Ready, status: "False", reason: Pending, message: "Issuing certificate as Secret does not exist"}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: api-tls, namespace: shop}
spec: {secretName: api-tls, dnsNames: [api.example.com], issuerRef: {kind: ClusterIssuer, name: acme}}
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready, message: "Certificate is up to date and has not expired"}
"""


def _bundle(tmp_path: Path, version: str | None, extra: str = "") -> Path:
    folder = tmp_path / "input"
    folder.mkdir()
    docs = [CERTIFICATES, *([_controller(version)] if version else []), *([extra] if extra else [])]
    (folder / "objects.yaml").write_text("---\n".join(docs))
    return folder


def test_fetch_the_version_of_the_installation_in_the_inputs(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.4.2", _archive("v3.4.2", RELEASE))
    github.latest("v3.5.1")
    result = _run("lua", "fetch", str(_bundle(tmp_path, "v3.4.2")))
    assert result.exit_code == 0, result.output
    assert "Argo CD v3.4.2 found in the inputs" in result.stderr
    assert (_cached(tmp_path) / "v3.4.2" / "manifest.json").is_file()
    assert github.requests == ["/argoproj/argo-cd/archive/refs/tags/v3.4.2.tar.gz"]  # not the latest


def test_fetch_the_latest_release_without_a_version(github: _GitHub, tmp_path: Path) -> None:
    github.latest("v3.5.9")
    github.release("v3.5.9", _archive("v3.5.9", RELEASE))
    result = _run("lua", "fetch", str(_bundle(tmp_path, None)))  # no Argo CD in the input
    assert result.exit_code == 0, result.output
    assert "fetching the latest Argo CD release, v3.5.9" in result.stderr
    assert github.requests == ["/repos/argoproj/argo-cd/releases/latest",
                               "/argoproj/argo-cd/archive/refs/tags/v3.5.9.tar.gz"]
    assert (_cached(tmp_path) / "v3.5.9" / "manifest.json").is_file()


def test_latest_release_with_a_bad_tag_is_refused(github: _GitHub, tmp_path: Path) -> None:
    github.latest("nightly")
    result = _run("lua", "fetch")
    assert result.exit_code == 2
    assert "is not a version like v3.5.1" in result.stderr and "Traceback" not in result.output


def test_missing_release_is_one_line_and_exit_2(github: _GitHub, tmp_path: Path) -> None:
    result = _run("lua", "fetch", "--argocd-version", "v9.9.9")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("argo-doctor: error: http://127.0.0.1:")
    assert "v9.9.9.tar.gz: HTTP 404" in result.stderr
    assert not _cached(tmp_path).exists() or not any(_cached(tmp_path).iterdir())


def test_unreachable_server_is_one_line_and_exit_2(github: _GitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GITHUB_URL_ENV, "http://127.0.0.1:9")  # discard port: connection refused
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2
    assert result.stderr.startswith("argo-doctor: error: http://127.0.0.1:9/argoproj/argo-cd/archive/")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_a_version_without_its_v_is_fetched_as_the_release_tag(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.5.1", _archive("v3.5.1", RELEASE))
    result = _run("lua", "fetch", "--argocd-version", "3.5.1")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Fetched 4 health scripts of Argo CD v3.5.1 into {_cached(tmp_path) / 'v3.5.1'}\n")
    assert github.requests == ["/argoproj/argo-cd/archive/refs/tags/v3.5.1.tar.gz"]
    assert json.loads((_cached(tmp_path) / "v3.5.1" / "manifest.json").read_text())["version"] == "v3.5.1"


@pytest.mark.parametrize(("body", "content_type"), [
    (b"\n<!DOCTYPE html>\n<html><head><title>Proxy authentication required</title></head></html>\n", None),
    (b"Please sign in to continue to the guest network.", "text/html; charset=utf-8"),
])
def test_an_html_page_instead_of_the_archive_names_the_url(github: _GitHub, tmp_path: Path, body: bytes,
                                                           content_type: str | None) -> None:
    github.release("v3.5.1", body)
    if content_type:
        github.content_types["/argoproj/argo-cd/archive/refs/tags/v3.5.1.tar.gz"] = content_type
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2
    url = f"{github.url}/argoproj/argo-cd/archive/refs/tags/v3.5.1.tar.gz"
    assert result.stderr == (f"argo-doctor: error: {url}: an HTML page, not a tar.gz archive (a proxy or captive "
                             "portal?); refused\n")
    assert not (_cached(tmp_path) / "v3.5.1").exists()


@pytest.mark.parametrize("version", ["v3.5", "latest", "v3.5.1/../../x", "v03.5.1", "v3.5.1 ", ""])
def test_a_bad_version_string_is_refused_before_any_request(github: _GitHub, version: str) -> None:
    result = _run("lua", "fetch", "--argocd-version", version)
    assert result.exit_code == 2
    assert "is not an Argo CD release version like v3.5.1" in result.stderr
    assert github.requests == []


def test_truncated_archive_is_refused_and_nothing_cached(github: _GitHub, tmp_path: Path) -> None:
    body = _archive("v3.5.1", RELEASE)
    github.release("v3.5.1", body[: len(body) * 2 // 3])
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2
    url = f"{github.url}/argoproj/argo-cd/archive/refs/tags/v3.5.1.tar.gz"
    assert result.stderr.startswith(f"argo-doctor: error: {url}: not a complete tar.gz archive (")
    assert "not a complete tar.gz archive" in result.stderr
    assert not (_cached(tmp_path) / "v3.5.1").exists()
    assert not any(_cached(tmp_path).iterdir())  # the temporary folder is gone


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def _file(name: str, size: int = 3) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    return info


@pytest.mark.parametrize(("entry", "reason"), [
    (_link("argo-cd-3.5.1/resource_customizations/evil.io/Kind/health.lua", "/etc/passwd"), "not a regular file"),
    (_link("argo-cd-3.5.1/resource_customizations/evil.io/Hard/health.lua",
           "argo-cd-3.5.1/README.md", tarfile.LNKTYPE), "not a regular file"),
    (_file("argo-cd-3.5.1/resource_customizations/../../escape/health.lua"), "unsafe entry name"),
    (_file("/argo-cd-3.5.1/resource_customizations/abs.io/Kind/health.lua"), "unsafe entry name"),
    (_file("other-top/resource_customizations/x.io/Kind/health.lua"), "outside its top folder"),
    (_file("argo-cd-3.5.1/resource_customizations/big.io/Kind/health.lua", (1 << 20) + 1), "over the limit"),
])
def test_unsafe_entries_refuse_the_archive(github: _GitHub, tmp_path: Path, entry: tarfile.TarInfo,
                                           reason: str) -> None:
    github.release("v3.5.1", _archive("v3.5.1", RELEASE, extra=(entry,)))
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2, result.output
    assert reason in result.stderr
    assert not (_cached(tmp_path) / "v3.5.1").exists()


def test_archive_of_another_version_is_refused(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.5.1", _archive("v3.5.1", RELEASE, top="argo-cd-3.4.0"))
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2
    assert "top folder 'argo-cd-3.4.0' is not that of Argo CD v3.5.1" in result.stderr


def test_archive_without_scripts_is_refused(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.5.1", _archive("v3.5.1", {"cert-manager.io/Certificate/actions/renew/action.lua": "x"}))
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2
    assert "no resource_customizations/**/health.lua in it" in result.stderr


def test_a_script_that_does_not_compile_refuses_the_fetch_and_keeps_the_cache(github: _GitHub,
                                                                                tmp_path: Path) -> None:
    github.release("v3.5.1", _archive("v3.5.1", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.5.1").exit_code == 0
    before = _snapshot_of_cache(_cached(tmp_path))
    broken = {**RELEASE, "cert-manager.io/Certificate/health.lua": "if obj.status then\n  return {}\n"}
    github.release("v3.5.1", _archive("v3.5.1", broken))
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2
    assert "cert-manager.io/Certificate/health.lua does not compile: cert-manager.io/Certificate:3: 'end' expected" \
        in result.stderr
    assert _snapshot_of_cache(_cached(tmp_path)) == before


def test_fetching_again_replaces_the_cached_version(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.5.1", _archive("v3.5.1", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.5.1").exit_code == 0
    fewer = {k: v for k, v in RELEASE.items() if not k.startswith("s3.")}
    github.release("v3.5.1", _archive("v3.5.1", fewer))
    assert _run("lua", "fetch", "--argocd-version", "v3.5.1").exit_code == 0
    folder = _cached(tmp_path) / "v3.5.1"
    assert not (folder / "s3.aws.crossplane.io").exists()
    assert len(json.loads((folder / "manifest.json").read_text())["scripts"]) == 3
    assert [p.name for p in _cached(tmp_path).iterdir()] == ["v3.5.1"]


def test_lua_list_with_nothing_cached(github: _GitHub) -> None:
    result = _run("lua", "list")
    assert result.exit_code == 0 and result.stdout == ""
    assert "nothing cached in" in result.stderr


# -- automatic use by the scans ------------------------------------------------------------------------------------


def _health(*args: str) -> tuple[dict[tuple[str, str], Any], list[dict[str, str]]]:
    result = _run("health", *args, "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return {(o["kind"], o["name"]): o["health"] for o in doc["objects"]}, doc["errors"]


def _scan_errors(path: Path) -> list[dict[str, str]]:
    result = _run("scan", str(path), "-o", "json", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    errors: list[dict[str, str]] = json.loads(result.stdout)["errors"]
    return errors


def test_without_cache_one_note_names_the_kinds_and_the_command(github: _GitHub, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "v3.4.2")
    errors = _scan_errors(bundle)
    assert not [e for e in errors if "no check reads" in e["message"]]
    notes = [e for e in errors if "built-in Lua script" in e["message"]]
    assert len(notes) == 1
    assert notes[0]["message"] == (
        "1 kind(s) get their health in Argo CD v3.4.2 from a built-in Lua script that is not cached here, so their "
        "health is not assessed: Certificate (cert-manager.io, 2); run `argo-doctor lua fetch --argocd-version v3.4.2`"
    )
    healths, _ = _health(str(bundle))
    assert healths[("Certificate", "api-tls")] is None


def test_with_the_cache_of_the_installed_version_the_scripts_apply(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.4.2", _archive("v3.4.2", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.4.2").exit_code == 0
    bundle = _bundle(tmp_path, "v3.4.2")
    assert not [e for e in _scan_errors(bundle) if "Lua" in e["message"] or "no check reads" in e["message"]]
    healths, errors = _health(str(bundle))
    assert healths[("Certificate", "api-tls")] == {
        "status": "Healthy", "message": "Certificate is up to date and has not expired"}
    assert healths[("Certificate", "storefront-tls")] == {
        "status": "Degraded", "message": "Issuing certificate as Secret does not exist"}
    assert errors == []


def test_the_cache_of_another_version_is_not_used(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.5.1", _archive("v3.5.1", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.5.1").exit_code == 0
    bundle = _bundle(tmp_path, "v3.4.2")
    healths, errors = _health(str(bundle))
    assert healths[("Certificate", "api-tls")] is None
    assert [e["message"] for e in errors if "lua fetch" in e["message"]] == [
        "1 kind(s) get their health in Argo CD v3.4.2 from a built-in Lua script that is not cached here, so their "
        "health is not assessed: Certificate (cert-manager.io, 2); run `argo-doctor lua fetch --argocd-version v3.4.2`"
    ]


def test_without_a_version_in_the_inputs_the_newest_cached_applies_with_a_note(github: _GitHub,
                                                                                 tmp_path: Path) -> None:
    for version in ("v3.4.2", "v3.5.1", "v3.5.1-rc1"):
        github.release(version, _archive(version, RELEASE))
        assert _run("lua", "fetch", "--argocd-version", version).exit_code == 0
    healths, errors = _health(str(_bundle(tmp_path, None)))
    assert healths[("Certificate", "api-tls")]["status"] == "Healthy"
    assert [e["message"] for e in errors] == [
        "no Argo CD version found in the inputs: health scripts of the newest cached release, v3.5.1, apply (use "
        "`argo-doctor lua fetch --argocd-version vX.Y.Z` to match the installation)"
    ]


def test_lua_dir_wins_over_the_cache(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.4.2", _archive("v3.4.2", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.4.2").exit_code == 0
    own = tmp_path / "own" / "cert-manager.io" / "Certificate"
    own.mkdir(parents=True)
    (own / "health.lua").write_text('return {status = "Suspended", message = "from --lua-dir"}\n')
    healths, errors = _health(str(_bundle(tmp_path, "v3.4.2")), "--lua-dir", str(tmp_path / "own"))
    assert healths[("Certificate", "api-tls")] == {"status": "Suspended", "message": "from --lua-dir"}
    assert errors == []


def test_argocd_cm_wins_over_the_cache(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.4.2", _archive("v3.4.2", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.4.2").exit_code == 0
    cm = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
data:
  resource.customizations.health.cert-manager.io_Certificate: |
    return {status = "Degraded", message = "from argocd-cm"}
"""
    healths, _ = _health(str(_bundle(tmp_path, "v3.4.2", cm)))
    assert healths[("Certificate", "api-tls")] == {"status": "Degraded", "message": "from argocd-cm"}


CROSSPLANE = """\
apiVersion: s3.aws.crossplane.io/v1beta1
kind: Bucket
metadata: {name: assets}
---
apiVersion: rds.aws.crossplane.io/v1alpha1
kind: DBInstance
metadata: {name: orders}
---
apiVersion: pipelines.example.dev/v1
kind: Stage
metadata: {name: canary, namespace: shop}
status:
  conditions:
  - {type: Built, status: "True"}
  - {type: Deployed, status: "False"}
  - {type: Verified, status: "Unknown"}
"""


def test_cached_wildcard_exact_and_goto_scripts(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.4.2", _archive("v3.4.2", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.4.2").exit_code == 0
    healths, errors = _health(str(_bundle(tmp_path, "v3.4.2", CROSSPLANE)))
    assert healths[("Bucket", "assets")] == {"status": "Suspended", "message": "exact script for Bucket"}
    assert healths[("DBInstance", "orders")] == {"status": "Healthy", "message": "wildcard script for DBInstance"}
    assert healths[("Stage", "canary")] == {"status": "Progressing", "message": "2 condition(s) pending"}
    assert errors == []


def test_wildcard_kinds_without_cache_are_in_the_note_not_unknown(github: _GitHub, tmp_path: Path) -> None:
    errors = _scan_errors(_bundle(tmp_path, "v3.4.2", CROSSPLANE))
    (unknown,) = [e["message"] for e in errors if "no check reads" in e["message"]]
    assert "of 1 kind(s) that no check reads: Stage (" in unknown  # no built-in script upstream for our own kind
    (note,) = [e["message"] for e in errors if "built-in Lua script" in e["message"]]
    assert "3 kind(s)" in note
    assert ("Certificate (cert-manager.io, 2), DBInstance (rds.aws.crossplane.io, 1), "
            "Bucket (s3.aws.crossplane.io, 1)") in note


def _tar_without_end_blocks() -> bytes:
    data = CERTIFICATE_SCRIPT.encode()
    info = tarfile.TarInfo("argo-cd-3.5.1/resource_customizations/cert-manager.io/Certificate/health.lua")
    info.size = len(data)
    return info.tobuf(tarfile.PAX_FORMAT) + data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


@pytest.mark.parametrize(("tar_bytes", "reason"), [
    (gzip.decompress(_archive("v3.5.1", RELEASE)).rstrip(b"\0"), "unexpected end of data"),
    (_tar_without_end_blocks(), "ends without its end-of-archive blocks"),
])
def test_a_tar_cut_short_inside_a_complete_gzip_is_refused(github: _GitHub, tmp_path: Path, tar_bytes: bytes,
                                                            reason: str) -> None:
    github.release("v3.5.1", gzip.compress(tar_bytes))
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2
    assert reason in result.stderr and "Traceback" not in result.output
    assert not (_cached(tmp_path) / "v3.5.1").exists()


def test_a_server_that_does_not_answer_in_time_is_one_line(github: _GitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from argo_doctor.health import cache

    silent = socket.socket()  # accepts connections (backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        monkeypatch.setenv(GITHUB_URL_ENV, f"http://127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.setattr(cache, "TIMEOUT_SECONDS", 0.3)
        result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    finally:
        silent.close()
    assert result.exit_code == 2
    assert result.stderr.endswith("v3.5.1.tar.gz: timed out after 0.3 s\n") and result.stderr.count("\n") == 1


def test_without_a_home_folder_the_cache_needs_xdg_cache_home(github: _GitHub,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME")

    def no_entry(uid: int) -> None:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    result = _run("lua", "fetch", "--argocd-version", "v3.5.1")
    assert result.exit_code == 2 and "set XDG_CACHE_HOME" in result.stderr
    listed = _run("lua", "list")
    assert listed.exit_code == 2 and "set XDG_CACHE_HOME" in listed.stderr and "Traceback" not in listed.output


# -- cached scripts: checked against the manifest, errors located in the file, in gopher-lua's wording ---------------


def test_a_cached_script_edited_after_the_fetch_is_not_run(github: _GitHub, tmp_path: Path) -> None:
    github.release("v3.4.2", _archive("v3.4.2", RELEASE))
    assert _run("lua", "fetch", "--argocd-version", "v3.4.2").exit_code == 0
    edited = _cached(tmp_path) / "v3.4.2" / "cert-manager.io" / "Certificate" / "health.lua"
    edited.write_text('return {status = "Healthy", message = "edited by hand"}\n')
    added = _cached(tmp_path) / "v3.4.2" / "rds.aws.crossplane.io" / "DBInstance" / "health.lua"
    added.parent.mkdir(parents=True)
    added.write_text('return {status = "Healthy", message = "added by hand"}\n')
    bundle = _bundle(tmp_path, "v3.4.2", CROSSPLANE)
    healths, errors = _health(str(bundle))
    assert healths[("Certificate", "api-tls")] is None  # not the edited script's Healthy
    assert healths[("DBInstance", "orders")] == {"status": "Healthy", "message": "wildcard script for DBInstance"}
    assert [e["message"] for e in errors if e["location"] == str(added)] == [
        "not in manifest.json, so not used; run `argo-doctor lua fetch --argocd-version v3.4.2` to fetch it again"
    ]
    assert healths[("Bucket", "assets")] == {"status": "Suspended", "message": "exact script for Bucket"}
    assert [e["message"] for e in errors if e["location"] == str(edited)] == [
        "changed since it was fetched (its sha256 differs from manifest.json's), so not used; run "
        "`argo-doctor lua fetch --argocd-version v3.4.2` to fetch it again"
    ]
    assert _run("lua", "fetch", "--argocd-version", "v3.4.2").exit_code == 0
    healths, errors = _health(str(bundle))
    assert healths[("Certificate", "api-tls")] == {
        "status": "Healthy", "message": "Certificate is up to date and has not expired"}
    assert errors == []


CRD_SCRIPT = """\
local hs = {}
if obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "CRD is terminating"}
end
if obj.status.conditions == nil or #obj.status.conditions == 0 then
  return {status = "Progressing", message = "Status conditions not found"}
end
for _, condition in pairs(obj.status.conditions) do
  if condition.type == "Established" and condition.status == "True" then
    return {status = "Healthy", message = "CRD is healthy"}
  end
end
return {status = "Degraded", message = "CRD is not established"}
"""

CRD_WITHOUT_STATUS = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.dev}
spec:
  group: example.dev
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
"""


def test_a_cached_script_error_names_the_file_in_the_wording_of_the_built_in_check(github: _GitHub,
                                                                                   tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "v3.4.2", CRD_WITHOUT_STATUS)
    native, _ = _health(str(bundle))  # no cache: argo-doctor's own reading of the built-in script
    wording = "attempt to index a non-table object(nil) with key 'conditions'"
    assert native[("CustomResourceDefinition", "widgets.example.dev")] == {"status": "Unknown", "message": wording}

    crd_script = "apiextensions.k8s.io/CustomResourceDefinition/health.lua"
    github.release("v3.4.2", _archive("v3.4.2", {**RELEASE, crd_script: CRD_SCRIPT}))
    assert _run("lua", "fetch", "--argocd-version", "v3.4.2").exit_code == 0
    cached, errors = _health(str(bundle))
    script = _cached(tmp_path) / "v3.4.2" / crd_script
    message = f"{script}:5: {wording}"
    assert cached[("CustomResourceDefinition", "widgets.example.dev")] == {"status": "Unknown", "message": message}
    assert [e["message"] for e in errors if e["location"] == str(script)] == [f"Lua health script failed: {message}"]
