"""The table output fits the terminal width (`COLUMNS`), has no escape sequence with `NO_COLOR` or when piped (unless
`FORCE_COLOR`), and breaks no word across lines: a URL or a file location longer than its room gets a line of its own,
wider than `COLUMNS` only when it alone is."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.report.table import MAX_LINES, MIN_WIDTH, PIPED_WIDTH, make_console, width
from tests.conftest import EXAMPLES

BUNDLES = (EXAMPLES / "argocd-basic", EXAMPLES / "incidents" / "unwanted-sync")
ESCAPE = "\x1b["
BOX = re.compile(r"[\s│╭╮╰╯─]+")


def _scan(bundle: Path, env: Mapping[str, str | None], *args: str) -> str:
    """`scan --details` (the panels, every finding) as a pipe sees it (CliRunner's output is no terminal), with the
    environment set as given (None: unset)."""
    base: dict[str, str | None] = {"COLUMNS": None, "NO_COLOR": None, "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
    details = () if "-o" in args else ("--details", "--min-severity", "info")
    result = CliRunner(env={**base, **env}).invoke(main, ["scan", str(bundle), *details, "--fail-on", "never", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _widest(text: str) -> int:
    """The widest line but those that are one word too long for any line."""
    return max(len(line) for line in text.splitlines() if not _overlong(line, len(line) - 1))


def _overlong(line: str, columns: int) -> bool:
    """Whether `line` is a single word, alone at its start, wider than `columns`."""
    return len(line) > columns and line == line.strip() and len(line.split()) == 1


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
@pytest.mark.parametrize("columns", [60, 100, 200])
def test_no_line_is_wider_than_columns(bundle: Path, columns: int) -> None:
    text = _scan(bundle, {"COLUMNS": str(columns)})
    wide = [line for line in text.splitlines() if len(line) > columns]
    assert all(_overlong(line, columns) for line in wide), [line for line in wide if not _overlong(line, columns)]
    assert _widest(text) >= columns - 2  # the panels use the width given, not a narrower default


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
@pytest.mark.parametrize("columns", [60, 70, 100])
def test_urls_and_locations_are_never_cut(bundle: Path, columns: int) -> None:
    """Every docs URL and every word of an evidence location (`file:line`, `Kind/ns/name`, `.path`) appears whole on
    one line, so that it can be clicked and copied."""
    doc = json.loads(_scan(bundle, {}, "-o", "json"))
    tokens = {url for f in doc["findings"] for url in f["remediation"]["docs"]}
    tokens |= {word for f in doc["findings"] for item in f["evidence"] for word in item["location"].split()}
    assert any(len(token) > columns for token in tokens) or columns > 60  # the case that matters is there
    lines = _scan(bundle, {"COLUMNS": str(columns)}).splitlines()
    cut = sorted(token for token in tokens if not any(token in line for line in lines))
    assert not cut, cut[:5]


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_piped_output_without_columns_is_readable_wide_and_plain(bundle: Path) -> None:
    text = _scan(bundle, {})
    assert _widest(text) == PIPED_WIDTH
    assert ESCAPE not in text
    lines = text.splitlines()
    panels = [line for line in lines if line.startswith("╭")]
    assert panels and len(panels) == len([line for line in lines if line.startswith("╰")])
    inside = [line for line in lines if line.startswith("│")]
    assert all(line.endswith("│") and len(line) == PIPED_WIDTH for line in inside)  # every box closed on its line


def test_force_color_colours_a_pipe_and_no_color_wins() -> None:
    bundle = BUNDLES[0]
    assert ESCAPE in _scan(bundle, {"FORCE_COLOR": "1"})  # styles reach the output at all
    for env in ({"NO_COLOR": "1"}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}):
        assert ESCAPE not in _scan(bundle, env)
    assert ESCAPE in _scan(bundle, {"NO_COLOR": "", "FORCE_COLOR": "1"})  # an empty NO_COLOR is unset


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_narrow_output_breaks_no_word_of_a_title_or_summary(bundle: Path) -> None:
    """At 60 columns every word of a finding's title and summary is whole, however long."""
    doc = json.loads(_scan(bundle, {}, "-o", "json"))
    words = {word for f in doc["findings"] for word in f"{f['title']} {f['summary']}".split() if "[" not in word}
    shown = set(BOX.split(_scan(bundle, {"COLUMNS": "60"})))
    assert words and not words - shown, sorted(words - shown)[:10]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_colours_unless_no_color() -> None:
    for environ, coloured in (({}, True), ({"NO_COLOR": "1"}, False), ({"NO_COLOR": ""}, True)):
        out = _Terminal()
        make_console(out, {**environ, "COLUMNS": "70", "TERM": "xterm-256color"}).print("[red]alert[/red]")
        assert (ESCAPE in out.getvalue()) is coloured, environ
    assert ESCAPE not in _scan(BUNDLES[0], {"TERM": "xterm-256color"})


def test_the_width_rules() -> None:
    assert width({"COLUMNS": "73"}, tty=False) == 73
    assert width({"COLUMNS": "73"}, tty=True) == 73
    assert width({"COLUMNS": "10"}, tty=False) == MIN_WIDTH
    assert width({}, tty=True) is None  # rich asks the terminal
    for junk in ("", "wide", "-5", "0"):
        assert width({"COLUMNS": junk}, tty=False) == PIPED_WIDTH


def test_input_text_cannot_pass_for_a_word_slot() -> None:
    """The private-use characters that mark a long word's slot, when an input text has them, print as U+FFFD; the
    long word next to them still comes out whole on its own line."""
    from rich.text import Text

    from argo_doctor.report.table import _print, _Words

    out = io.StringIO()
    console = make_console(out, {"COLUMNS": "40"})
    slots: list[str] = []
    url = "https://git.example.org/platform/tenants/-/blob/main/values.yaml"
    _print(console, _Words(Text(f"forged \ue0000\ue001 see {url} now"), slots), slots)
    assert out.getvalue().splitlines() == ["forged \ufffd0\ufffd see", url, "now"]


def test_a_message_of_a_hundred_thousand_lines_is_cut_in_the_table_only(tmp_path: Path) -> None:
    """A failed sync whose message holds a whole log: the table shows its first MAX_LINES lines and how many more
    there are (rich splits a text into lines in time that grows with the square of their number); JSON has all."""
    bundle = tmp_path / "noisy"
    (bundle / "objects").mkdir(parents=True)
    message = "step\n" * 100_000
    (bundle / "objects" / "app.json").write_text(json.dumps({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "noisy", "namespace": "argocd"},
        "spec": {"destination": {"namespace": "noisy", "server": "https://kubernetes.default.svc"}},
        "status": {"sync": {"status": "OutOfSync"}, "operationState": {
            "phase": "Failed", "message": message, "startedAt": "2026-01-01T00:00:00Z",
            "finishedAt": "2026-01-01T00:00:01Z"}}}))
    text = _scan(bundle, {"COLUMNS": "100"})
    rows = [line.strip(" │") for line in text.splitlines()]
    assert MAX_LINES - 2 <= rows.count("step") <= MAX_LINES
    assert re.search(r"… \d{5} more lines \(-o json has them all\)", text)
    doc = json.loads(_scan(bundle, {}, "-o", "json"))
    assert any(message.strip() in f["summary"] for f in doc["findings"])
