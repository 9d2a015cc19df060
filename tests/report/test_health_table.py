"""report.health: the `health` table fits 80 and 200 columns with each object's kind, namespace and name, `wide` is
the table as `health` printed it before, and `worst_first` ranks statuses as Argo CD does."""

from __future__ import annotations

from pathlib import Path

import pytest

from argo_doctor.engine import health_assessor
from argo_doctor.health import Health, HealthStatus
from argo_doctor.report.columns import columns
from argo_doctor.report.health import Row, health_table, worst_first
from argo_doctor.snapshot import Obj
from argo_doctor.sources import bundle
from argo_doctor.sources.redact import SecretScrubber, clean
from tests.conftest import BUNDLES, EXAMPLES
from tests.report.fitting import WIDTHS, too_wide, whole_or_cut

STUCK = EXAMPLES / "incidents" / "stuck-rollout"
DUPLICATES = BUNDLES / "duplicate-objects"


def assessed(path: Path) -> tuple[list[Row], bool, SecretScrubber]:
    """The rows `health` makes of a bundle (every copy of an object read twice), whether it has copies, and its
    scrubber."""
    snap = bundle.load([path])
    assessor = health_assessor(snap, ())
    copies = [*snap.all(), *(d.dropped for d in snap.duplicates)]
    rows = [(o, assessor.assess(o.raw))
            for o in sorted(copies, key=lambda o: (o.location.split(":")[0], o.kind, o.namespace, o.name))]
    return rows, bool(snap.duplicates), snap.scrubber


def before(rows: list[Row], locations: bool, scrubber: SecretScrubber) -> str:
    """The table as the `health` command printed it before it was fitted."""
    lines: list[tuple[str, ...]] = [("KIND", "NAMESPACE", "NAME", "HEALTH", "MESSAGE")]
    lines += clean([(o.kind, o.namespace, o.name, h.status.value if h else "-",
                     " ".join(h.message.split()) if h else "") for o, h in rows], scrubber, human=True)
    if locations:
        where = clean([o.location for o, _ in rows], scrubber, human=True)
        lines = [(at, *line) for at, line in zip(["LOCATION", *where], lines, strict=True)]
    return columns(lines)


@pytest.mark.parametrize("path", [STUCK, DUPLICATES, EXAMPLES / "argocd-basic"], ids=lambda p: p.name)
def test_wide_is_the_table_as_before(path: Path) -> None:
    rows, locations, scrubber = assessed(path)
    assert health_table(rows, locations, scrubber, 80, wide=True) == before(rows, locations, scrubber)
    assert health_table(rows, locations, scrubber) == before(rows, locations, scrubber)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", [STUCK, EXAMPLES / "argocd-basic"], ids=lambda p: p.name)
def test_each_object_on_its_line_within_the_width(path: Path, width: int) -> None:
    rows, locations, scrubber = assessed(path)
    text = health_table(worst_first(rows), locations, scrubber, width)
    assert not too_wide(text, width)
    lines = text.split("\n")
    heads = [line for line in lines if not line.startswith(" ")]
    assert heads[0].split() == ["KIND", "NAMESPACE", "NAME", "HEALTH", *(["MESSAGE"] if width == 200 else [])]
    room = heads[0].index("HEALTH") - heads[0].index(" NAME ") - 4
    for line, (obj, health) in zip(heads[1:], worst_first(rows), strict=True):
        kind, *rest = line.split()
        namespace, name = (rest[0], rest[1]) if obj.namespace else ("", rest[0])
        assert whole_or_cut(kind, obj.kind) and namespace == obj.namespace and whole_or_cut(name, obj.name)
        assert name == obj.name if len(obj.name) <= room else len(name) == room  # only what has no room is cut
        assert kind == obj.kind or width == 80
        assert (health.status.value if health else "-") in line
    if width == 80:  # each message on a line of its own under its object, cut to the width
        messages = [line for line in lines[2:] if line.startswith("    ")]
        assert len(messages) == sum(1 for _, h in rows if h and h.message) > 0


def test_the_location_of_each_copy_stays_readable_at_80_columns() -> None:
    rows, locations, scrubber = assessed(DUPLICATES)
    lines = health_table(rows, locations, scrubber, 80).split("\n")
    assert locations and not too_wide("\n".join(lines), 80)
    heads = [line for line in lines[2:] if not line.startswith(" ")]
    for line, (obj, _) in zip(heads, rows, strict=True):
        shown = line.split()[0]
        file = obj.location.rsplit("/", 1)[-1]
        assert shown == obj.location or (shown.startswith("…") and file.endswith(shown[1:]))  # file and line kept
    assert len({line.split()[0] for line in heads}) == len(rows)


def _row(status: HealthStatus | None, name: str) -> Row:
    obj = Obj.from_raw({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"}}, "x:1")
    return obj, None if status is None else Health(status, "")


def test_worst_first_as_argo_cd_ranks_health() -> None:
    rows = [_row(HealthStatus.HEALTHY, "a"), _row(None, "b"), _row(HealthStatus.PROGRESSING, "c"),
            _row(HealthStatus.DEGRADED, "d"), _row(HealthStatus.SUSPENDED, "e"), _row(HealthStatus.UNKNOWN, "f"),
            _row(HealthStatus.MISSING, "g"), _row(HealthStatus.DEGRADED, "h"), _row(HealthStatus.HEALTHY, "i")]
    ordered = [(h.status.value if h else None, o.name) for o, h in worst_first(rows)]
    assert ordered == [("Unknown", "f"), ("Degraded", "d"), ("Degraded", "h"), ("Missing", "g"),
                       ("Progressing", "c"), ("Suspended", "e"), ("Healthy", "a"), ("Healthy", "i"), (None, "b")]


def test_worst_first_on_a_bundle_puts_every_unhealthy_object_before_the_healthy() -> None:
    rows, _, _ = assessed(STUCK)
    statuses = [h.status if h else None for _, h in worst_first(rows)]
    healthy = statuses.index(HealthStatus.HEALTHY)
    assert statuses[:healthy] and HealthStatus.HEALTHY not in statuses[:healthy] and None not in statuses[:healthy]
    assert set(statuses[healthy:]) <= {HealthStatus.HEALTHY, None}
