"""Hostile audit logs: a small gzip of nothing but newlines, and a flood of controller patch events.

Both are generated compactly, as one gzip stream whose compressed chunk is repeated (256 KB of gzip →
256 MiB of newlines; 10,000 events compressed once, repeated 8 times → 80,000 events at the compression
ratio of real audit logs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import Argo, Baseline, assert_reader, gzip_stream, write_tree

EVENT = (
    '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%08d-7a1c-4e2b-9f3d-%012d",'
    '"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/hostile/configmaps/cm-%d","verb":"patch",'
    '"user":{"username":"system:serviceaccount:argocd:argocd-application-controller"},'
    '"userAgent":"argocd-application-controller/v2.10.9","objectRef":{"resource":"configmaps",'
    '"namespace":"hostile","name":"cm-%d","apiVersion":"v1"},"responseStatus":{"code":200},'
    '"requestReceivedTimestamp":"2026-11-20T%02d:%02d:%02d.%06dZ"}\n'
)
EVENTS_PER_CHUNK, REPEATS = 10_000, 8
FLOOD_GROWTH = 40 << 20
"""How much more the flood may make the scan's peak RSS than examples/argocd-basic alone: 80,000 audit
events kept whole take about 90 MiB."""


def flood() -> bytes:
    """80,000 completed patches by the application controller, as a gzip."""
    lines = "".join(
        EVENT % (i, i * 7919, i % 100, i % 100, i // 3600 % 24, i // 60 % 60, i % 60, i)
        for i in range(EVENTS_PER_CHUNK)
    )
    return gzip_stream([(lines.encode(), REPEATS)])


@pytest.mark.parametrize("command", ["scan", "timeline"])
def test_gzip_of_newlines(argo: Argo, good: Baseline, tmp_path: Path, command: str) -> None:
    """256 MiB of empty lines in 256 KB of gzip: named in `errors`, not read for minutes."""
    hostile = write_tree(tmp_path / "hostile", {"audit/newlines.log.gz": gzip_stream([(b"\n" * (16 << 20), 16)])})
    assert_reader(argo, command, hostile, "audit/newlines.log.gz", "", good)


@pytest.mark.parametrize("command", ["scan", "timeline"])
def test_flood_of_controller_patches(argo: Argo, good: Baseline, tmp_path: Path, command: str) -> None:
    """80,000 patch events: each rule keeps bounded state, so the peak RSS grows by less than `FLOOD_GROWTH`."""
    hostile = write_tree(tmp_path / "hostile", {"audit/flood.log.gz": flood()})
    run = assert_reader(argo, command, hostile, None, "", good)
    assert run.peak_rss is not None
    growth = run.peak_rss - good.rss
    assert growth < FLOOD_GROWTH, f"peak RSS {growth >> 20} MiB above examples/argocd-basic alone"
