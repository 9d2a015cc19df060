"""`metrics/*.prom`: the Prometheus text format as the API server writes it, bad values and special files."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from argo_doctor.model import Problem
from argo_doctor.sources import bundle, metrics
from argo_doctor.sources.metrics import MetricsFile, Sample, format_value, parse_value, read_metrics_file

EXPOSITION = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",verb="LIST",version="v1"} 118
apiserver_request_total{code="200",group="extensions",resource="ingresses",verb="WATCH",version="v1beta1",} 117 \
1627834811000
  apiserver_request_total { code = "429" , resource="leases" } 3.5e2
# HELP apiserver_requested_deprecated_apis [ALPHA] Gauge of deprecated APIs that have been requested.
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="extensions",removed_release="1.22",resource="ingresses",version="v1beta1"} 1
process_start_time_seconds 1627834811.00
rest_client_exec_plugin_ttl_seconds +Inf
rest_client_exec_plugin_certificate_rotation_age_bucket{le="-Inf"} NaN
apiserver_storage_objects{resource="configmaps",note="a \\"quoted\\" \\\\ value\\nwith a newline"} 9322
"""


def _read(path: Path, names: set[str] | None = None, root: Path | None = None) -> tuple[list[Sample], list[Problem]]:
    problems: list[Problem] = []
    found = list(read_metrics_file(MetricsFile(path, f"metrics/{path.name}", root), problems, names))
    return found, problems


def test_the_text_format(tmp_path: Path) -> None:
    path = tmp_path / "apiserver.prom"
    path.write_text(EXPOSITION)
    samples, problems = _read(path)
    assert problems == []
    line = {int(s.location.rsplit(":", 1)[1]): s for s in samples}
    assert sorted(line) == [3, 4, 5, 8, 9, 10, 11, 12]
    assert line[3].name == "apiserver_request_total" and line[3].labels["verb"] == "LIST" and line[3].value == 118
    assert line[4].labels["group"] == "extensions"  # a trailing comma, then a timestamp
    assert line[5].labels == {"code": "429", "resource": "leases"} and line[5].value == 350.0
    assert line[9].labels == {} and line[9].value == 1627834811
    assert line[10].value == math.inf and math.isnan(line[11].value)
    assert line[12].labels["note"] == 'a "quoted" \\ value\nwith a newline'
    only = {"apiserver_requested_deprecated_apis"}
    assert [s.location for s in _read(path, only)[0]] == ["metrics/apiserver.prom:8"]


@pytest.mark.parametrize(
    ("text", "value"),
    [("42", 42.0), ("-0.25", -0.25), (".5", 0.5), ("5.", 5.0), ("1E3", 1000.0), ("+Inf", math.inf),
     ("-inf", -math.inf), ("Infinity", math.inf), ("1e999", math.inf), ("-1e999", -math.inf), ("1e-999", 0.0)],
)
def test_values_as_prometheus_reads_them(text: str, value: float) -> None:
    assert parse_value(text) == value


@pytest.mark.parametrize("text", ["e", "1e", "0x1p3", "1_000", "١٢", "+NaN", "--1", "", "inf1", "1.2.3"])
def test_values_prometheus_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a number"):
        parse_value(text)
    assert math.isnan(parse_value("nan")) and math.isnan(parse_value("NaN"))


def test_format_value() -> None:
    assert [format_value(v) for v in (9322.0, 0.25, math.nan, math.inf, -math.inf, 1e20)] == [
        "9322", "0.25", "NaN", "+Inf", "-Inf", "1e+20"]


def test_bad_lines_are_one_problem_each_kind_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "apiserver.prom"
    series = 'apiserver_requested_deprecated_apis{group="policy",resource="podsecuritypolicies",version="v1beta1"}'
    path.write_text("\n".join([
        "# TYPE apiserver_requested_deprecated_apis gauge",
        f"{series} e",
        f"{series} 1e999",
        f'{series[:-1]} 1',  # the label set is not closed
        f"{series} 1 2 3",
        f"{series} -1e999 1627834811000",
        "garbage line",
        f"{series} 1",
    ]))  # no final newline
    samples, problems = _read(path)
    assert [(s.location.rsplit(":", 1)[1], s.value) for s in samples] == [("3", math.inf), ("6", -math.inf), ("8", 1)]
    assert problems == [
        Problem("metrics/apiserver.prom:2", "not a Prometheus sample ('e' is not a number); skipped; 4 lines skipped "
                                            "in all"),
        Problem("metrics/apiserver.prom:3", "value 1e999 is beyond the range of a float; read as +Inf; 2 values read "
                                            "as ±Inf in all"),
    ]


def test_a_long_line_and_the_total_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "MAX_METRICS_LINE", 100)
    path = tmp_path / "apiserver.prom"
    path.write_text(f'up{{job="{"x" * 1000}"}} 1\nup 1\n' + "up 2\n" * 1000)
    samples, problems = _read(path)
    assert len(samples) == 1001 and problems == [
        Problem("metrics/apiserver.prom:1", "not a Prometheus sample (line longer than 100 bytes); skipped")]
    monkeypatch.setattr(metrics, "MAX_METRICS_BYTES", 2000)
    samples, problems = _read(path)
    assert len(samples) == 1 + (2000 - 1018) // 5  # line 1 is 1,013 bytes, then 5 each
    assert problems[0] == Problem(f"metrics/apiserver.prom:{len(samples) + 2}",
                                  "the file has 6,018 bytes, over the 2,000 read of a metrics file; the rest of it "
                                  "is skipped")


def test_a_fifo_and_a_link_to_dev_zero_are_refused(tmp_path: Path) -> None:
    """In a child process, so that a hang or a runaway read fails the test instead of the suite."""
    root = tmp_path / "bundle"
    (root / "metrics").mkdir(parents=True)
    (root / "bundle.yaml").write_text("cluster: {version: v1.21.14}\n")
    os.mkfifo(root / "metrics" / "a-fifo.prom")
    (root / "metrics" / "b-zero.prom").symlink_to("/dev/zero")
    (root / "metrics" / "c-good.prom").write_text(EXPOSITION)
    code = (
        "import sys; from argo_doctor.sources import bundle\n"
        "snap = bundle.load([sys.argv[1]], None)\n"
        "print(len(list(snap.metrics())))\n"
        "print('\\n'.join(f'{p.location}: {p.message}' for p in snap.problems))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    count, *errors = done.stdout.splitlines()
    assert count == "8"
    assert errors == ["metrics/a-fifo.prom: cannot read: not a regular file (a FIFO); skipped",
                      "metrics/b-zero.prom: cannot read: a link to a file outside the input; skipped"]


def test_the_bundle_registers_metrics_files(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    (root / "metrics" / "nested").mkdir(parents=True)
    (root / "bundle.yaml").write_text("cluster: {version: v1.21.14}\n")
    (root / "metrics" / "apiserver.prom").write_text(EXPOSITION)
    (root / "metrics" / "notes.txt").write_text("not metrics\n")
    (root / "metrics" / "nested" / "other.prom").write_text("up 1\n")
    snap = bundle.load([root], None)
    assert [f.display for f in snap.metrics_files] == ["metrics/apiserver.prom"]
    assert [s.location for s in snap.metrics({"process_start_time_seconds"})] == ["metrics/apiserver.prom:9"]
