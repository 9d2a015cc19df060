"""Locations sort by their line numbers as numbers: `file:2` before `file:1671`, not as text."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.model import TimelineEntry
from argo_doctor.timeline import location_key

PSP = "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: {name}\n"


def test_location_key_compares_line_numbers_as_numbers() -> None:
    locations = ["logs/a.log:1671", "logs/a.log:2", "logs/b.log:10", "logs/a.log:10", "logs/a.log",
                 "objects/x.yaml:3 argocd/Application/web .status.operationState.startedAt"]
    assert sorted(locations, key=location_key) == [
        "logs/a.log", "logs/a.log:2", "logs/a.log:10", "logs/a.log:1671", "logs/b.log:10",
        "objects/x.yaml:3 argocd/Application/web .status.operationState.startedAt",
    ]
    assert sorted(["f:02", "f:2"], key=location_key) == ["f:02", "f:2"]  # equal numbers: the text decides


def test_a_number_too_long_to_convert_sorts_last() -> None:
    """A Workflow node id of 5,000 digits in a location: Python refuses to convert it (4,300 digits at most); it
    sorts after every number that converts, and the location breaks the tie."""
    huge, larger = "wf.yaml:" + "9" * 5000, "wf.yaml:" + "9" * 5001
    assert sorted([larger, huge, "wf.yaml:12"], key=location_key) == ["wf.yaml:12", huge, larger]


def test_timeline_entries_of_one_time_sort_by_line_number() -> None:
    when = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
    entries = [TimelineEntry(when, "repo-server", "log", f"logs/repo.log:{n}", "x") for n in (1671, 2, 30)]
    entries.sort(key=lambda e: (e.time, location_key(e.location)))
    assert [e.location for e in entries] == ["logs/repo.log:2", "logs/repo.log:30", "logs/repo.log:1671"]


def test_deprecations_list_uses_by_line_number(tmp_path: Path) -> None:
    """Two uses in one manifest file, at lines 2 and 1673: the JSON lists line 2 first."""
    filler = "".join(f"  k{i}: v\n" for i in range(1660))
    text = "# two deprecated objects around a long ConfigMap\n" + "---\n".join([
        PSP.format(name="first"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: filler\ndata:\n" + filler,
        PSP.format(name="second"),
    ])
    path = tmp_path / "manifests.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["deprecations", str(path), "-o", "json"])
    doc = json.loads(result.output)
    lines = [int(use["location"].rsplit(":", 1)[1]) for use in doc["uses"]]
    assert lines == [2, 1673], lines
