"""The note about Argo CD health scripts that are not cached names only what the installed release ships."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EXAMPLES, scan_json


def _lua_notes(doc: dict[str, object]) -> list[str]:
    errors = doc["errors"]
    assert isinstance(errors, list)
    return [e["message"] for e in errors if "lua fetch" in e["message"]]


def test_no_note_for_a_kind_the_installed_release_has_no_script_for() -> None:
    """unwanted-sync runs Argo CD v2.9.6 and deploys a CronJob, whose health.lua arrived in v3.2.0."""
    doc = scan_json(EXAMPLES / "incidents" / "unwanted-sync")
    assert _lua_notes(doc) == []


def test_the_note_names_a_kind_once_the_release_ships_its_script(tmp_path: Path) -> None:
    (tmp_path / "objects.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: argocd-server, namespace: argocd}\n"
        "spec:\n  template:\n    spec:\n      containers:\n      - name: argocd-server\n"
        "        image: quay.io/argoproj/argocd:v3.2.0\n"
        "---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: jobs}\n"
        "spec: {schedule: '0 3 * * *'}\n"
    )
    notes = _lua_notes(scan_json(tmp_path))
    assert len(notes) == 1 and "CronJob (batch, 1)" in notes[0] and "--argocd-version v3.2.0" in notes[0]
