"""`argo-doctor deprecations`: every row of the table, templates, live objects, exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.deprecations import DeprecatedApi, Use, Version, deprecated_apis, object_uses, parse_version
from argo_doctor.deprecations import scan_paths as scan_with_reader
from argo_doctor.helm.scan import chart_template_apis
from argo_doctor.model import Problem

K8S_ROWS = [api for api in deprecated_apis().values() if not api.component]


def scan_paths(paths: list[Path], target: Version | None) -> tuple[list[Use], list[Problem]]:
    return scan_with_reader(paths, target, chart_template_apis)


def manifest(api: DeprecatedApi) -> str:
    return f"apiVersion: {api.api_version}\nkind: {api.kind}\nmetadata:\n  name: sample\n  namespace: default\n"


def before(version: str) -> str:
    major, minor = parse_version(version)  # type: ignore[misc]
    return f"{major}.{minor - 1}"


@pytest.mark.parametrize("api", K8S_ROWS, ids=lambda a: f"{a.api_version}/{a.kind}")
def test_every_row_is_found_at_the_right_version_and_not_before(api: DeprecatedApi, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(manifest(api))
    first = api.deprecated_in or api.removed_in
    assert first is not None
    (use,) = scan_paths([path], parse_version(first))[0]
    assert use.api is api and use.status == ("removed" if first == api.removed_in else "deprecated")
    assert scan_paths([path], parse_version(before(first)))[0] == []
    if api.removed_in:
        (gone,) = scan_paths([path], parse_version(api.removed_in))[0]
        assert gone.status == "removed"


def test_add_on_rows_are_listed_without_comparing_kubernetes_versions(tmp_path: Path) -> None:
    add_ons = [api for api in deprecated_apis().values() if api.component]
    assert {api.component for api in add_ons} >= {"cert-manager", "external-snapshotter"}
    path = tmp_path / "certs.yaml"
    path.write_text("---\n".join(manifest(api) for api in add_ons))
    uses, _ = scan_paths([path], (1, 20))
    assert {u.api.kind for u in uses} == {api.kind for api in add_ons} and {u.status for u in uses} == {"listed"}


def test_csi_volume_snapshots_v1beta1_as_kubent_lists_them(tmp_path: Path) -> None:
    path = tmp_path / "snapshots.yaml"
    path.write_text("apiVersion: snapshot.storage.k8s.io/v1beta1\nkind: VolumeSnapshotClass\nmetadata:\n"
                    "  name: csi-hostpath-snapclass\ndriver: hostpath.csi.k8s.io\ndeletionPolicy: Delete\n---\n"
                    "apiVersion: snapshot.storage.k8s.io/v1beta1\nkind: VolumeSnapshot\nmetadata:\n"
                    "  name: db-snapshot\n  namespace: shop\nspec:\n  volumeSnapshotClassName: csi-hostpath-snapclass\n"
                    "  source:\n    persistentVolumeClaimName: db-data\n")
    uses, _ = scan_paths([path], (1, 31))
    assert [(u.api.kind, u.status, u.api.replacement, u.api.removed_in) for u in uses] == [
        ("VolumeSnapshotClass", "listed", "snapshot.storage.k8s.io/v1 VolumeSnapshotClass", "6.0"),
        ("VolumeSnapshot", "listed", "snapshot.storage.k8s.io/v1 VolumeSnapshot", "6.0")]
    assert all(u.api.component == "external-snapshotter" for u in uses)


def test_chart_templates_and_capabilities_conditionals(tmp_path: Path) -> None:
    templates = tmp_path / "chart" / "templates"
    templates.mkdir(parents=True)
    (templates / "ingress.yaml").write_text(
        '{{- if .Capabilities.APIVersions.Has "networking.k8s.io/v1/Ingress" }}\n'
        "apiVersion: networking.k8s.io/v1\n{{- else }}\napiVersion: extensions/v1beta1\n{{- end }}\n"
        "kind: Ingress\nmetadata:\n  name: {{ include \"x.fullname\" . }}\n---\n"
        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: {{ .Release.Name }}\n"
    )
    uses, problems = scan_paths([tmp_path / "chart"], (1, 25))
    assert [(u.api.kind, u.location, u.status, u.how) for u in uses] == [
        ("PodDisruptionBudget", "chart/templates/ingress.yaml:10", "removed", "template")
    ] and problems == []
    (old,) = scan_paths([tmp_path / "chart"], (1, 18))[0]
    assert (old.api.kind, old.location, old.status, old.maybe) == (
        "Ingress", "chart/templates/ingress.yaml:4", "deprecated", False)
    assert old.how.startswith("template, chosen by .Capabilities at Kubernetes v1.18.0: ")


def test_live_objects_through_managed_fields_and_last_applied() -> None:
    live = {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {
            "name": "web", "namespace": "shop",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                            '{"apiVersion":"extensions/v1beta1","kind":"Ingress","metadata":{"name":"web"}}'},
            "managedFields": [
                {"manager": "argocd-controller", "operation": "Apply", "apiVersion": "extensions/v1beta1",
                 "time": "2021-08-02T09:14:03Z", "fieldsType": "FieldsV1", "fieldsV1": {}},
                {"manager": "nginx-ingress-controller", "operation": "Update", "apiVersion": "networking.k8s.io/v1",
                 "time": "2021-08-02T09:14:05Z", "fieldsType": "FieldsV1", "fieldsV1": {}, "subresource": "status"},
            ],
        },
    }
    uses = list(object_uses(live, "objects/ingress.yaml:1", (1, 22)))
    hows = [u.how.split(" (")[0] for u in uses]
    assert hows == ["written by manager argocd-controller", "last kubectl apply sent it"]
    assert uses[0].location == "objects/ingress.yaml:1 .metadata.managedFields[0]" and uses[0].status == "removed"


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    path = tmp_path / "cronjob.yaml"
    path.write_text("apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: nightly}\n")
    removed = CliRunner().invoke(main, ["deprecations", str(path), "--target-version", "1.25", "-o", "json"])
    assert removed.exit_code == 1
    (use,) = json.loads(removed.stdout)["uses"]
    assert use["replacement"].startswith("batch/v1") and use["status"] == "removed"
    early = CliRunner().invoke(main, ["deprecations", str(path), "--target-version", "1.20"])
    assert early.exit_code == 0 and "no deprecated API found" in early.stdout
    bad = CliRunner().invoke(main, ["deprecations", str(path), "--target-version", "latest"])
    assert bad.exit_code == 2


def test_only_regular_files_inside_a_folder_are_read(tmp_path: Path) -> None:
    """A link leading outside the folder (which `scan` refuses), a FIFO and a dangling link: one problem each."""
    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: outside}\n")
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "cronjob.yaml").write_text("apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: nightly}\n")
    (manifests / "link.yaml").symlink_to(outside)
    (manifests / "inside.yaml").symlink_to("cronjob.yaml")
    os.mkfifo(manifests / "pipe.yaml")
    uses, problems = scan_paths([manifests], (1, 25))
    assert sorted(u.location for u in uses) == ["manifests/cronjob.yaml:1", "manifests/inside.yaml:1"]
    assert sorted((p.location, p.message) for p in problems) == [
        ("manifests/link.yaml", "a link to a file outside the input; skipped"),
        ("manifests/pipe.yaml", "not a regular file (a FIFO); skipped"),
    ]


def test_cli_a_fifo_argument_is_one_problem_and_exit_2_when_nothing_is_readable(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    path = tmp_path / "cronjob.yaml"
    path.write_text("apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: nightly}\n")
    both = CliRunner().invoke(main, ["deprecations", str(tmp_path / "pipe.yaml"), str(path), "--target-version",
                                     "1.25", "-o", "json"])
    assert both.exit_code == 1
    doc = json.loads(both.stdout)
    assert [u["location"] for u in doc["uses"]] == [f"{path}:1"]
    assert doc["errors"] == [{"location": str(tmp_path / "pipe.yaml"), "message": "not a regular file (a FIFO); "
                                                                                  "skipped"}]
    alone = CliRunner().invoke(main, ["deprecations", str(tmp_path / "pipe.yaml")])
    assert alone.exit_code == 2 and "not a regular file (a FIFO)" in alone.stderr
