"""report.timeline: the `timeline` table fits 80 and 200 columns with every entry's time and component whole, gaps in
human units, and no line repeating its own timestamp (kubectl's prefix, logrus' `time=`, Go's log, klog); `wide`
prints every entry on one line with its location whole."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding, Problem, TimelineEntry
from argo_doctor.report.timeline import MAX_WHAT, human_gap, timeline_table, without_time
from argo_doctor.sources import bundle
from argo_doctor.sources.logs import LogFile, parse_line
from argo_doctor.sources.redact import clean
from argo_doctor.timeline import full_timeline
from argo_doctor.timeutil import format_time
from tests.conftest import BUNDLES, EXAMPLES
from tests.report.fitting import WIDTHS, too_wide

UNWANTED = EXAMPLES / "incidents" / "unwanted-sync"
WHEN = datetime(2026, 11, 20, 14, 24, 45, 123456, tzinfo=UTC)
GAP = re.compile(r"[+-](\d+ms|\d+(\.\d)?s|\d+m(\d+s)?|\d+h(\d+m)?|\d+d(\d+h)?)")


@pytest.fixture(scope="module")
def timeline() -> tuple[list[TimelineEntry], list[Finding], list[Problem]]:
    """What the `timeline` command gives the table for the unwanted-sync example: entries, chained findings,
    problems."""
    snap = bundle.load([UNWANTED])
    result = run_scan(snap, select_analyzers())
    entries = clean(full_timeline(snap, result.findings), snap.scrubber, human=True)
    chained = clean([f for f in result.findings if f.chain], snap.scrubber, human=True)
    return entries, chained, clean(list(dict.fromkeys(snap.problems)), snap.scrubber, human=True)


@pytest.mark.parametrize(("seconds", "shown"), [
    (276.203, "+4m36s"), (2 * 3600 + 3 * 60 + 59, "+2h3m"), (0.85, "+850ms"), (0, "+0s"), (0.0004, "+0s"),
    (0.001, "+1ms"), (1.94, "+1.9s"), (4.0, "+4s"), (9.96, "+10s"), (21.7, "+21s"), (60, "+1m"), (3600, "+1h"),
    (276203, "+3d4h"), (86400, "+1d"), (-5, "-5s"), (-0.25, "-250ms"),
])
def test_gaps_in_human_units(seconds: float, shown: str) -> None:
    assert human_gap(seconds) == shown


@pytest.mark.parametrize(("line", "kept"), [
    ("I1120 14:24:45.123456       1 reflector.go:325] Listing and watching *v1.Pod",  # klog: severity kept
     "I reflector.go:325] Listing and watching *v1.Pod"),
    ('time="2026-11-20T14:24:45Z" level=info msg="Refreshing app status"',  # logrus
     'level=info msg="Refreshing app status"'),
    ("ts=2026-11-20T14:24:45.120Z caller=main.go:12 msg=started", "caller=main.go:12 msg=started"),  # go-kit
    ("2026/11/20 14:24:45 payments-api 1.8.0 starting", "payments-api 1.8.0 starting"),  # Go's log
    ("2026-11-20T14:24:45.123Z INFO controller started", "INFO controller started"),  # RFC 3339
    ("2026-11-20T16:24:45+02:00 started", "started"),  # another zone, the same second
    ("2026-11-20T14:24:45.118497444Z time=\"2026-11-20T14:24:45Z\" level=info msg=x", "level=info msg=x"),
    ("2026-11-20T14:24:45.608426099Z 2026/11/20 14:24:45 http: TLS handshake error",
     "http: TLS handshake error"),
])
def test_a_leading_timestamp_of_the_entry_is_left_out(line: str, kept: str) -> None:
    assert without_time(line, WHEN) == kept


@pytest.mark.parametrize("line", [
    "2026/11/20 14:24:46 a second later is another time",
    "I1121 14:24:45.123456 1 reflector.go:325] another day",
    'level=info msg="started at 2026-11-20T14:24:45Z"',  # not at the start
    '{"level":"info","time":"2026-11-20T14:24:45Z","msg":"json"}',
    "2026-11-20T14:24:45Z",  # nothing else would be left
    "2026-02-30T14:24:45Z no such day",
])
def test_other_texts_are_kept_whole(line: str) -> None:
    assert without_time(line, WHEN) == line


@pytest.mark.parametrize("path", [
    BUNDLES / "engine-basic" / "logs" / "kube-system" / "kube-proxy-5jsz9" / "kube-proxy.log",  # klog
    EXAMPLES / "argocd-basic" / "logs" / "payments" / "payments-api-7c9d8f6b5d-cpbcd" / "api.log",  # Go's log
    UNWANTED / "logs" / "argocd" / "argocd-repo-server-6f9d7b5c48-k2x9q" / "argocd-repo-server.log",  # kubectl+logrus
    EXAMPLES / "incidents" / "repo-flapping" / "logs" / "argocd" / "argocd-server-tnsqrnbnwm-fkxtz"
    / "argocd-server.log",  # logrus
    UNWANTED / "logs" / "kube-system" / "aws-load-balancer-controller-7b9c6d5f48-m2xkq"
    / "aws-load-balancer-controller.log",  # kubectl's prefix and Go's log
], ids=lambda p: p.name)
def test_real_log_lines_lose_their_own_timestamps(path: Path) -> None:
    """Each line of real logs, timed as the log pass times it: the text keeps no leading timestamp of its second,
    and keeps every other word."""
    log = LogFile(path, path.name, "ns", "pod", "container")
    reference = datetime(2026, 11, 30, tzinfo=UTC)
    stripped = 0
    for number, text in enumerate(path.read_text().splitlines(), 1):
        record = parse_line(text, log, number, reference)
        if record.time is None:
            continue
        line = " ".join(text.split())
        kept = without_time(line, record.time)
        assert line.endswith(kept.removeprefix("I ").removeprefix("W ").removeprefix("E "))
        second = record.time.strftime("%H:%M:%S")
        own = rf'((time|ts)="?)?\d{{4}}[-/]\d\d[-/]\d\d[T ]{second}|[IWEF]\d{{4}} {second}'
        assert not re.match(own, kept), (line, kept)
        stripped += kept != line
    assert stripped > 0


@pytest.mark.parametrize("width", WIDTHS)
def test_the_table_fits_and_keeps_each_time_and_component(timeline: tuple[list[TimelineEntry], list[Finding],
                                                                          list[Problem]], width: int) -> None:
    entries, chained, problems = timeline
    text = timeline_table(entries, chained, problems, len(entries), width)
    assert not too_wide(text, width)
    lines = text.split("\n")
    rows = [line for line in lines if line[:4].isdigit()]
    assert len(rows) == len(entries)
    for row, entry in zip(rows, entries, strict=True):
        time, *rest = row.split()
        assert time == format_time(entry.time) and entry.component in rest[:2]
        if rest[0] != entry.component:
            assert GAP.fullmatch(rest[0])
    assert not any(re.search(r"\+\d{3,}(\s|$)", row) for row in rows)  # no raw seconds
    assert sum("Causal chain" in line for line in lines) == len(chained) > 0
    texts = [lines[lines.index(row) + 1] for row in rows] if width == 80 else [row[62:] for row in rows]
    assert sum(t.strip().startswith("level=") for t in texts) >= 10  # the log lines after their own timestamps
    assert not any(re.match(r"\s*(time=|\d{4}[-/]\d\d[-/]\d\d)", t) for t in texts)


def test_at_80_columns_each_text_goes_under_its_entry(timeline: tuple[list[TimelineEntry], list[Finding],
                                                                      list[Problem]]) -> None:
    entries, chained, problems = timeline
    lines = timeline_table(entries, chained, problems, len(entries), 80).split("\n")
    assert lines[0].split() == ["TIME", "GAP", "COMPONENT", "WHERE"] and lines[1] == "    WHAT"
    first = lines.index(next(line for line in lines if line[:4].isdigit()))
    assert lines[first + 1].startswith("    ") and "operation started" in lines[first + 1]


def test_wide_prints_each_entry_on_one_line_and_its_location_whole(
        timeline: tuple[list[TimelineEntry], list[Finding], list[Problem]]) -> None:
    entries, chained, problems = timeline
    text = timeline_table(entries, chained, problems, len(entries), 80, wide=True)
    assert text == timeline_table(entries, chained, problems, len(entries))  # the width is not known: all whole
    lines = text.split("\n")
    assert lines[0].split() == ["TIME", "GAP", "COMPONENT", "WHAT", "WHERE"]
    rows = [line for line in lines if line[:4].isdigit()]
    assert len(rows) == len(entries) and all(row.endswith(e.location) for row, e in zip(rows, entries, strict=True))
    assert max(len(line) for line in lines) > 200
    long = max(entries, key=lambda e: len(e.excerpt))
    assert len(long.excerpt) > MAX_WHAT and any(row.endswith(long.location) and "…" in row for row in rows)


def test_no_entry_and_the_problems_say_so() -> None:
    problems = [Problem("broken.yaml:2", "not YAML: " + "x " * 60), Problem("monday.yaml:1", "read twice", "note")]
    for width in (None, 80):
        lines = timeline_table([], [], problems, 0, width).split("\n")
        assert lines[0] == "no timeline entry: the input holds no timestamped log line, event, audit record or object" \
            if width is None else lines[0].startswith("no timeline entry:")
        assert "1 input error(s); the scan went on without them:" in lines and "1 note(s) on the input:" in lines
        assert any(line.startswith("  broken.yaml:2: not YAML: x x") for line in lines)
        assert not too_wide("\n".join(lines), 80 if width else 200)
    some = timeline_table([], [], [], 12, 80)
    assert some.startswith("no timeline entry: none of the 12 timestamped facts") and not too_wide(some, 80)


def test_a_chain_step_shows_its_gap_and_not_its_timestamp_again(
        timeline: tuple[list[TimelineEntry], list[Finding], list[Problem]]) -> None:
    entries, chained, _ = timeline
    finding = chained[0]
    steps = [line for line in timeline_table(entries, [finding], [], len(entries)).split("\n")
             if line.startswith("  → ")]
    assert len(steps) == len(finding.chain)
    for step, index in zip(steps, finding.chain, strict=True):
        item = finding.evidence[index]
        stamp = format_time(item.time) or ""
        assert step.startswith(f"  → {stamp}  ") and stamp[:19] not in step[len(stamp) + 4:]
    assert all(GAP.fullmatch(step.split()[2]) for step in steps[1:])
    timed = replace(finding.evidence[finding.chain[0]], excerpt="2026-11-22T15:02:55.118Z " + "word " * 60)
    other = replace(finding, evidence=[timed], chain=[0])
    line = timeline_table([], [other], [], 1, 80).split("\n")[-1]
    assert len(line) <= 80 and line.startswith("  → 2026-11-22T15:02:55.118Z  word word") and line.endswith("…")
