"""The table output fits the terminal width (`COLUMNS`), has no escape sequence with `NO_COLOR` or when piped (unless
`FORCE_COLOR`), and breaks no word of a summary or title across lines."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.report.table import MIN_WIDTH, PIPED_WIDTH, make_console, width
from tests.conftest import EXAMPLES

BUNDLES = (EXAMPLES / "argocd-basic", EXAMPLES / "incidents" / "unwanted-sync")
ESCAPE = "\x1b["
BOX = re.compile(r"[\s│╭╮╰╯─]+")


def _scan(bundle: Path, env: Mapping[str, str | None], *args: str) -> str:
    """`scan` as a pipe sees it (CliRunner's output is no terminal), with the environment set as given (None:
    unset)."""
    base: dict[str, str | None] = {"COLUMNS": None, "NO_COLOR": None, "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
    result = CliRunner(env={**base, **env}).invoke(main, ["scan", str(bundle), "--fail-on", "never", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
@pytest.mark.parametrize("columns", [60, 100, 200])
def test_no_line_is_wider_than_columns(bundle: Path, columns: int) -> None:
    text = _scan(bundle, {"COLUMNS": str(columns)})
    assert _widest(text) <= columns
    assert _widest(text) >= columns - 2  # the panels use the width given, not a narrower default


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
    """At 60 columns every word of a finding's title and summary (short enough to fit a line) is whole."""
    doc = json.loads(_scan(bundle, {}, "-o", "json"))
    words = {word for f in doc["findings"] for word in f"{f['title']} {f['summary']}".split()
             if len(word) <= 40 and "[" not in word}
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
