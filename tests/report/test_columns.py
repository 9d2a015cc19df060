"""report.columns: aligned columns as today without a width; with one, no line wider, the flexible columns cut first,
the identifying ones whole unless nothing else fits (then cut in the middle, keeping a generated name's suffix), a
location keeping its file name and line; fast on 10,000 rows."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence

import pytest

from argo_doctor.report.columns import (
    GAP,
    cells,
    columns,
    cut,
    cut_location,
    cut_middle,
    fit,
    terminal_width,
    text_columns,
    wrap,
)
from argo_doctor.report.table import MIN_WIDTH, PIPED_WIDTH
from argo_doctor.sources import bundle
from tests.conftest import EXAMPLES
from tests.report.fitting import WIDTHS, too_wide, whole_or_cut

HEADER = ("KIND", "NAMESPACE", "NAME", "HEALTH", "MESSAGE")
LONG = ("back-off 5m0s restarting failed container=cart pod=cart-8f6d7b9c5d-pz2tm_storefront"
        "(42a50b9e-ca05-c9f5-2454-1b2c3d4e5f60)")


def today(rows: Sequence[Sequence[str]]) -> str:
    """The columns as the command printed them before they were fitted."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


@pytest.fixture(scope="module")
def objects() -> list[tuple[str, ...]]:
    """KIND, NAMESPACE, NAME, a status and a long message for every object of an example bundle."""
    snap = bundle.load([EXAMPLES / "incidents" / "stuck-rollout"])
    return [HEADER, *((o.kind, o.namespace, o.name, "Degraded", f"{o.kind} {o.name}: {LONG}") for o in snap.all())]


def test_without_a_width_the_columns_are_as_before(objects: list[tuple[str, ...]]) -> None:
    assert columns(objects) == today(objects)
    assert columns(objects[1:], header=False) == today(objects[1:])
    assert "\n".join(text_columns(objects, None, 4)) == today(objects)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_message_is_cut_and_the_object_is_whole(objects: list[tuple[str, ...]], width: int) -> None:
    lines = columns(objects, width, flexible=(4,)).split("\n")
    assert not too_wide("\n".join(lines), width) and len(lines) == len(objects)
    assert lines[0].split() == list(HEADER)
    for line, row in zip(lines[1:], objects[1:], strict=True):
        kind, namespace, name, status, shown = line.split(None, 4)
        assert [kind, namespace, status] == [row[0], row[1], row[3]]
        assert name == row[2] if width == 200 else whole_or_cut(name, row[2])  # at 80 a 45-letter name is cut
        assert shown.endswith("…") and row[4].startswith(shown[:-1])
    assert max(cells(line) for line in lines) >= width - 3  # the room given is used


def test_only_when_nothing_else_fits_an_identifying_column_is_cut_in_its_middle() -> None:
    rows = [HEADER, ("Pod", "storefront", "recommendations-canary-5c8b7d6f9b-8pctd", "Degraded", LONG),
            ("Pod", "storefront", "recommendations-canary-5c8b7d6f9b-9t5rg", "Degraded", LONG)]
    lines = columns(rows, 70, flexible=(4,)).split("\n")
    assert not too_wide("\n".join(lines), 70) and lines[1].endswith(" back-off…")
    names = [line.split()[2] for line in lines[1:]]
    assert names[0] != names[1] and all(whole_or_cut(n, row[2]) for n, row in zip(names, rows[1:], strict=True))
    assert names[0].endswith("8pctd") and names[1].endswith("9t5rg")  # the suffix that tells them apart


def test_a_location_keeps_its_file_name_and_line() -> None:
    obj = "objects/argocd/applications.yaml:425 Application/argocd/nightly-jobs .status.operationState.startedAt"
    assert cut_location(obj, len(obj)) == obj
    assert cut_location(obj, 60) == "objects/argocd/applications.yaml:425 Application/argocd/nig…"
    assert cut_location(obj, 40) == "objects/argocd/applications.yaml:425 …"
    log = "logs/argocd/argocd-repo-server-6f9d7b5c48-k2x9q/argocd-repo-server.log:23"
    assert cut_location(log, 50) == "logs/argocd/argocd-repo…/argocd-repo-server.log:23"
    assert cut_location(log, 30) == "…/argocd-repo-server.log:23"
    assert cut_location(log, 12) == "…rver.log:23"  # too narrow for the name: its end, the line with it
    for size in range(1, len(log) + 1):
        assert cells(cut_location(log, size)) <= size


@pytest.mark.parametrize("size", range(0, 12))
def test_cut_never_passes_the_size(size: int) -> None:
    for text in ("recommendations-5c8b7d6f9b-8", "日本語のテキストと more", "a…b"):
        for shown in (cut(text, size), cut_middle(text, size), cut_location(text, size)):
            assert cells(shown) <= max(size, 0)


def test_wide_characters_count_as_two_cells() -> None:
    rows = [("NAME", "MESSAGE"), ("web", "デプロイメントの更新に失敗しました: " + LONG)]
    text = columns(rows, 40, flexible=(1,))
    assert not too_wide(text, 40) and max(cells(line) for line in text.split("\n")) <= 40


def test_fit_sums_to_the_width_whatever_the_columns() -> None:
    chance = random.Random(30)
    for _ in range(2000):
        count = chance.randint(1, 8)
        natural = [chance.randint(1, 120) for _ in range(count)]
        flexible = {i for i in range(count) if chance.random() < 0.4}
        width = chance.randint(40, 240)
        widths = fit(natural, width, flexible, [10] * count)
        assert all(1 <= w <= n for w, n in zip(widths, natural, strict=True))
        if sum(natural) + len(GAP) * (count - 1) <= width:
            assert widths == natural
        elif count * (1 + len(GAP)) <= width:
            assert sum(widths) + len(GAP) * (count - 1) <= width
            low = [i for i in range(count) if i not in flexible]
            if sum(natural[i] for i in low) + sum(min(10, natural[i]) for i in flexible) \
                    + len(GAP) * (count - 1) <= width:
                assert all(widths[i] == natural[i] for i in low)  # the flexible columns alone absorb the cut


def test_a_text_without_room_goes_on_a_line_of_its_own(objects: list[tuple[str, ...]]) -> None:
    rows = [*objects[:3], ("Deployment", "storefront", "catalog", "Healthy", "")]
    lines = text_columns(rows, 80, 4)
    assert lines[0].split() == list(HEADER[:4]) and lines[1] == "    MESSAGE"
    assert lines[2].split() == list(rows[1][:4]) and lines[3].startswith("    " + rows[1][4][:40])
    assert lines[-1].split() == list(rows[-1][:4])  # no line for an empty text
    assert not too_wide("\n".join(lines), 80)
    wide = text_columns(rows, 200, 4)
    assert len(wide) == len(rows)  # with room, one line each


def test_prose_is_wrapped_without_cutting_a_word() -> None:
    text = "for: watches Applications in --watch-namespaces '*' https://example.com/" + "x" * 90 + " and more"
    lines = wrap(text, 60, "    ", "      ")
    assert lines[0].startswith("    for:") and all(line.startswith("      ") for line in lines[1:])
    assert " ".join(" ".join(lines).split()) == text
    assert [line for line in lines if len(line) > 60] == ["      https://example.com/" + "x" * 90]
    assert wrap(text, None, "  ") == ["  " + text]


def test_ten_thousand_rows_are_fast() -> None:
    rows = [HEADER] + [("Pod", f"team-{i % 40}", f"web-{i}-6f9d7b5c48-k2x9q", "Degraded", f"{LONG} {i} → …")
                       for i in range(10_000)]
    start = time.perf_counter()
    for width in WIDTHS:
        columns(rows, width, flexible=(4,))
        text_columns(rows, width, 4)
    assert time.perf_counter() - start < 2.0


def test_the_width_is_found_as_scan_finds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback: os.terminal_size((132, 40)))
    assert terminal_width({"COLUMNS": "80"}, True) == 80
    assert terminal_width({"COLUMNS": "20"}, False) == MIN_WIDTH
    assert terminal_width({}, False) == PIPED_WIDTH  # a pipe or a file
    assert terminal_width({}, True) == 132  # the terminal's own
