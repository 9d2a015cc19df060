"""image-updater-failing: the Image Updater's log lines (v1 JSON in the example, v0.x text here) as
pkg/argocd/update.go writes them, knowledge/image_updater_errors.yaml, and v1 ImageUpdater conditions
(internal/controller/status.go)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor import knowledge
from tests.conftest import EXAMPLES, scan_json

BUNDLE = EXAMPLES / "incidents" / "image-updater-writeback"
LOG = Path("logs/argocd/argocd-image-updater-controller-5c7d9f8b6d-q4w8e/argocd-image-updater-controller.log")


def _scan(bundle: Path) -> list[dict[str, Any]]:
    return list(scan_json(bundle, "--rule", "image-updater-failing")["findings"])


def _copy(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    return bundle


def test_the_example_tells_a_refused_registry_from_a_protected_branch() -> None:
    found = {f["title"]: f for f in _scan(BUNDLE)}
    assert set(found) == {
        "Image Updater cannot read the tags of initech/shop-api for shop-api: unauthorized",
        "Image Updater cannot write the new image back for shop-web: protected branch",
        "ImageUpdater argocd/billing-updater selects no Application"}
    web = found["Image Updater cannot write the new image back for shop-web: protected branch"]
    assert web["severity"] == "high" and "3 failures in its log" in web["summary"]
    assert "GH006" in web["summary"] and "Argo CD keeps deploying the old image" in web["summary"]
    assert web["objects"][0]["name"] == "shop-web"
    assert "writeBackConfig.gitConfig.pullRequest" in web["remediation"]["text"]


def test_a_later_clean_cycle_makes_the_failures_history(tmp_path: Path) -> None:
    bundle = _copy(tmp_path)
    log = bundle / LOG
    log.write_text(log.read_text() + CYCLE.format(time="2026-12-01T09:19:40", errors=0))
    assert [f["title"] for f in _scan(bundle)] == ["ImageUpdater argocd/billing-updater selects no Application"]


CYCLE = ('{time}.5Z {{"imageUpdater_name":"shop-updater","imageUpdater_namespace":"argocd","level":"info","msg":'
         '"Processing results: applications=2 images_considered=2 images_skipped=0 images_updated=0 errors={errors}",'
         '"time":"{time}Z"}}\n')


def test_an_application_s_failure_absent_from_the_last_cycle_is_history_while_another_fails(tmp_path: Path) -> None:
    bundle = _copy(tmp_path)
    log = bundle / LOG
    shop_web = [line for line in log.read_text().splitlines() if "Could not update application spec" in line][-1]
    log.write_text(log.read_text() + shop_web.replace("09:18:43", "09:19:43") + "\n"
                   + CYCLE.format(time="2026-12-01T09:19:44", errors=1))
    titles = [f["title"] for f in _scan(bundle)]
    assert "Image Updater cannot write the new image back for shop-web: protected branch" in titles
    assert not any("shop-api" in t for t in titles)


V0 = ('2026-12-01T09:14:41.044000000Z time="2026-12-01T09:14:41Z" level=error msg="{msg}" alias=api application=shop '
      'image_name=initech/shop-api image_tag=1.4.0 registry=\n')


@pytest.mark.parametrize(("message", "title"), [
    ('Could not get tags from registry: Get \\"https://harbor.initech.example/v2/\\": tls: failed to verify '
     'certificate: x509: certificate signed by unknown authority', "cannot read the tags of initech/shop-api for shop: "
                                                                    "tls"),
    ("Could not set registry endpoint credentials: could not fetch secret 'regcred' from namespace 'argocd' (field: "
     "'.dockerconfigjson'): secrets \\\"regcred\\\" not found", "cannot read the tags of initech/shop-api for shop: "
                                                                "credentials unreadable"),
    ("Could not update application spec: could not push argocd to origin: `git push origin argocd` failed exit "
     "status 1: ! [rejected] argocd -> argocd (non-fast-forward)", "cannot write the new image back for shop: "
                                                                   "non fast forward"),
    ("Could not update application spec: failed to update application spec for shop after retries: "
     "applications.argoproj.io \\\"shop\\\" is forbidden: User "
     "\\\"system:serviceaccount:argocd:argocd-image-updater\\\" cannot update resource \\\"applications\\\" "
     "in API group \\\"argoproj.io\\\" in the namespace \\\"shop\\\"",
     "cannot write the new image back for shop: rbac"),
])
def test_v0_text_lines_get_their_cause(tmp_path: Path, message: str, title: str) -> None:
    bundle = tmp_path / "bundle"
    folder = bundle / "logs" / "argocd" / "argocd-image-updater-7b8c9d6f5c-k2m4n"
    folder.mkdir(parents=True)
    (folder / "argocd-image-updater.log").write_text(V0.format(msg=message))
    objects = yaml.safe_load((BUNDLE / "objects" / "argocd.yaml").read_text())["items"]
    deployment = objects[0]
    deployment["metadata"]["name"] = "argocd-image-updater"
    deployment["metadata"]["labels"] = {"app.kubernetes.io/name": "argocd-image-updater"}
    pod = objects[1]
    pod["metadata"].update(name="argocd-image-updater-7b8c9d6f5c-k2m4n", labels=deployment["metadata"]["labels"])
    (bundle / "objects").mkdir()
    (bundle / "objects" / "argocd.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                                    "items": objects[:2]}))
    [finding] = _scan(bundle)
    assert finding["title"] == f"Image Updater {title}"


def test_a_failed_reconciliation_is_high(tmp_path: Path) -> None:
    bundle = _copy(tmp_path)
    (bundle / LOG).unlink()
    path = bundle / "objects" / "argocd.yaml"
    doc = yaml.safe_load(path.read_text())
    billing = next(i for i in doc["items"] if i["metadata"]["name"] == "billing-updater")
    billing["status"]["conditions"][1].update(status="False", reason="ReconcileFailed", message="Reconciliation "
                                              "failed: invalid application name pattern '[billing': syntax error in "
                                              "pattern")
    path.write_text(yaml.safe_dump(doc))
    found = {f["title"]: f for f in _scan(bundle)}
    assert found["ImageUpdater argocd/billing-updater: its reconciliation fails"]["severity"] == "high"
    # without log lines, the shop updater's own Error condition speaks
    assert found["ImageUpdater argocd/shop-updater: its last check had errors"]["severity"] == "medium"


@pytest.mark.parametrize("row", knowledge.image_updater_errors(), ids=lambda r: r.id)
def test_every_row_matches_its_example_first_within_its_cause(row: knowledge.KnownError) -> None:
    first = next(r for r in knowledge.image_updater_errors() if r.cause == row.cause and r.pattern.search(row.example))
    assert first.id == row.id and row.source.startswith("https://")


@pytest.mark.parametrize(("line", "title", "why"), [
    ('{"application":"argocd/shop-web","image_alias":"web","level":"warning","msg":"no tags for image '
     'ghcr.io/initech/shop-web matched constraint \\"1.x\\"","time":"2026-12-01T09:19:42Z"}',
     "Image Updater never updates ghcr.io/initech/shop-web for shop-web",
     'No tag of ghcr.io/initech/shop-web matches the constraint "1.x"'),
    ('{"level":"warning","msg":"skipping app \'argocd/shop-docs\' of type \'Directory\' because it\'s not of '
     'supported source type","time":"2026-12-01T09:19:40Z"}',
     "Image Updater skips Application shop-docs: its source type", "its source type 'Directory' is not one it can"),
])
def test_images_that_are_never_updated(tmp_path: Path, line: str, title: str, why: str) -> None:
    bundle = _copy(tmp_path)
    log = bundle / LOG
    log.write_text(log.read_text() + f"2026-12-01T09:19:42.1Z {line}\n")
    [finding] = [f for f in _scan(bundle) if f["title"] == title]
    assert finding["severity"] == "medium" and why in finding["summary"]


def test_an_updater_whose_refs_select_an_application_of_the_input_is_not_said_to_select_nothing(tmp_path: Path
                                                                                                 ) -> None:
    bundle = _copy(tmp_path)
    path = bundle / "objects" / "argocd.yaml"
    doc = yaml.safe_load(path.read_text())
    app = next(i for i in doc["items"] if i["kind"] == "Application" and i["metadata"]["name"] == "shop-api")
    doc["items"].append({**app, "metadata": {**app["metadata"], "name": "billing-api"}})
    path.write_text(yaml.safe_dump(doc))
    assert not any("selects no Application" in f["title"] for f in _scan(bundle))


def test_a_refused_registry_names_the_pull_secret_the_updater_uses() -> None:
    [api] = [f for f in _scan(BUNDLE) if "shop-api" in f["title"]]
    assert "The image's pull secret is pullsecret:argocd/dockerhub-readonly (ImageUpdater argocd/shop-updater)" in \
        api["summary"]
    assert {o["kind"] for o in api["objects"]} == {"Application", "ImageUpdater"}
