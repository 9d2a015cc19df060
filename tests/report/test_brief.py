"""`scan`'s short answer: one line per finding, most severe first, then the summary; `--details` gives the panels,
`-o wide` the object and the first evidence, `--min-severity` what is shown (never what the exit status counts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from argo_doctor.cli import main
from tests.conftest import EXAMPLES

BASIC = EXAMPLES / "argocd-basic"
BUNDLES = (BASIC, EXAMPLES / "incidents" / "unwanted-sync", EXAMPLES / "incidents" / "repo-flapping")


def _run(bundle: Path, columns: int | None, *args: str) -> Result:
    env = {"COLUMNS": str(columns) if columns else None, "NO_COLOR": None, "FORCE_COLOR": None}
    return CliRunner(env=env).invoke(main, ["scan", str(bundle), *args])


def _findings(bundle: Path, *args: str) -> list[dict[str, object]]:
    findings = json.loads(_run(bundle, None, "-o", "json", *args).stdout)["findings"]
    assert isinstance(findings, list)
    return findings


def _heading(lines: list[str]) -> list[str]:
    return next(line for line in lines if line.startswith("SEVERITY ")).split()


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
@pytest.mark.parametrize("columns", [80, 200])
def test_one_line_per_finding_fits_the_terminal(bundle: Path, columns: int) -> None:
    result = _run(bundle, columns, "--fail-on", "never")
    lines = result.stdout.splitlines()
    shown = [f for f in _findings(bundle) if f["severity"] != "info"]
    assert result.exit_code == 0 and all(len(line) <= columns for line in lines), lines
    rows = [line for line in lines if line.split(" ", 1)[0] in {"CRITICAL", "HIGH", "MEDIUM", "LOW", "INFO"}]
    assert len(rows) == len(shown) and [r.split()[:2] for r in rows] == [
        [str(f["severity"]).upper(), f["rule"]] for f in shown]
    assert _heading(lines) == (["SEVERITY", "RULE", "TITLE"] if columns < 120 else
                               ["SEVERITY", "RULE", "OBJECT", "TITLE"])
    if columns >= 120:  # the first object of each finding, whole at this width
        assert all(f"{f['objects'][0]['kind']}/" in row for f, row in zip(shown, rows, strict=True))  # type: ignore[index]


def test_the_basic_example_fits_one_screen_with_a_summary_that_says_what_it_hid() -> None:
    lines = _run(BASIC, 80, "--fail-on", "never").stdout.splitlines()
    assert len(lines) <= 40
    assert lines[-2] == "7 finding(s): 4 high, 3 low; 5 info not shown (--min-severity info)"
    assert "--details" in lines[-1] and "-o wide" in lines[-1]
    assert not any(line.startswith("╭") for line in lines)


def test_details_prints_a_panel_per_finding_and_min_severity_chooses_which() -> None:
    text = _run(BASIC, 100, "--details", "--fail-on", "never").stdout
    assert text.count("╭") == 7 and "why " in text and "evidence" in text
    text = _run(BASIC, 100, "--details", "--min-severity", "info", "--fail-on", "never").stdout
    assert text.count("╭") == 12


def test_wide_adds_the_object_and_the_first_evidence_untruncated() -> None:
    lines = _run(BASIC, 80, "-o", "wide", "--fail-on", "never").stdout.splitlines()
    assert _heading(lines) == ["SEVERITY", "RULE", "OBJECT", "TITLE", "EVIDENCE"]
    for finding in _findings(BASIC):
        if finding["severity"] == "info":
            continue
        evidence = finding["evidence"][0]  # type: ignore[index]
        row = next(line for line in lines if " ".join(str(finding["title"]).split()) in line)
        assert evidence["location"] in row  # whole, however wide the line


def test_min_severity_filters_what_is_shown_but_not_the_exit_status() -> None:
    result = _run(BASIC, 100, "--min-severity", "critical")
    assert result.exit_code == 1  # four HIGH findings still fail the scan
    assert "0 finding(s); 4 high, 3 low, 5 info not shown (--min-severity info)" in result.stdout
    assert len(_findings(BASIC)) == 12  # JSON shows every finding unless asked
    assert {f["severity"] for f in _findings(BASIC, "--min-severity", "high")} == {"high"}


def test_details_with_another_format_is_a_usage_error() -> None:
    result = _run(BASIC, None, "-o", "json", "--details")
    assert result.exit_code == 2 and "--details" in result.stderr and result.stdout == ""
