"""`metrics/*.prom` that a rule reads: values that are not numbers, a FIFO, a link to /dev/zero.

examples/incidents/deprecated-callers is given beside the hostile bundle: its findings come from the
rule that reads the metrics, and must all survive.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import DEPRECATED, Argo, Baseline, assert_contract, findings_of

SERIES = 'apiserver_requested_deprecated_apis{group="extensions",removed_release="1.22",resource="ingresses",' \
         'subresource="",version="v1beta1"}'


def value(text: str) -> Callable[[Path], None]:
    """A metrics file whose deprecated-API series has the value `text`."""
    def make(path: Path) -> None:
        path.write_text(f"# TYPE apiserver_requested_deprecated_apis gauge\n{SERIES} {text}\n")
    return make


def fifo(path: Path) -> None:
    """A named pipe nobody writes to: opening it for reading blocks forever."""
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    """A link to /dev/zero: reading it never ends."""
    os.symlink("/dev/zero", path)


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "value-e": (value("e"), ""),
    "value-1e999": (value("1e999"), ""),
    "fifo": (fifo, "regular file|FIFO"),
    "dev-zero-link": (dev_zero, "outside the input|regular file|device"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_metrics_file(argo: Argo, good: Baseline, tmp_path: Path, case: str) -> None:
    """The rule does not crash (exit 3) or hang; the file is named in `errors`; the rule's findings on the
    good input all survive."""
    make, phrase = HOSTILE[case]
    hostile = tmp_path / "hostile"
    (hostile / "metrics").mkdir(parents=True)
    (hostile / "bundle.yaml").write_text("cluster: {name: hostile, version: v1.29.4}\n")
    make(hostile / "metrics" / "apiserver.prom")
    run = argo("scan", DEPRECATED, hostile, "-o", "json", "--fail-on", "never")
    doc = assert_contract(run, "metrics/apiserver.prom", phrase=phrase, codes=(0,))
    lost = good.deprecated - findings_of(doc)
    assert not lost, f"findings of {DEPRECATED.name} lost: {sorted(lost)}"
