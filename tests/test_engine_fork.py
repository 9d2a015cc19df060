"""The rules that read the audit log run, with the audit pass, in a forked copy of the scan beside the others: the
result is the one a single process gives, in the same order, and the scan runs them itself when the copy gives
nothing."""

from __future__ import annotations

import io
import os
import shutil
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from argo_doctor import engine
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.engine import ScanResult, run_scan, select_analyzers
from argo_doctor.errors import ConfigError
from argo_doctor.model import Finding, Problem, Severity
from argo_doctor.report import REPORTERS
from argo_doctor.report.options import ReportOptions
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from argo_doctor.sources.audit import AuditEvent
from argo_doctor.sources.workers import Forked, ForkFailed
from tests.conftest import BUNDLES, EXAMPLES

INPUTS = sorted([EXAMPLES / "argocd-basic", *(EXAMPLES / "incidents").iterdir(), *BUNDLES.iterdir()])
UNWANTED_SYNC = EXAMPLES / "incidents" / "unwanted-sync"


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """How each forked copy ended, in order: `sent` (its result) or `failed` (the scan ran its rules itself)."""
    ended: list[str] = []
    real = Forked.result

    def result(self: Forked[object]) -> object:
        try:
            got = real(self)
        except ForkFailed:
            ended.append("failed")
            raise
        ended.append("sent")
        return got

    monkeypatch.setattr(Forked, "result", result)
    return ended


def _json(result: ScanResult) -> str:
    out = io.StringIO()
    REPORTERS["json"](result, out, ReportOptions("never", frozenset()))
    return out.getvalue()


def _scan(path: Path, tmp_path: Path, workers: int, analyzers: list[Analyzer] | None = None) -> ScanResult:
    snap = bundle.load([path], tmp_path / f"work-{workers}")
    return run_scan(snap, select_analyzers() if analyzers is None else analyzers, workers=workers)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_the_forked_rules_give_what_one_process_gives(path: Path, tmp_path: Path, copies: list[str]) -> None:
    alone = _scan(path, tmp_path, 1)
    assert copies == []
    split = _scan(path, tmp_path, 2)
    assert copies == ["sent"]
    assert _json(split) == _json(alone)
    assert split.crashed == alone.crashed == [] and split.cleaned == alone.cleaned


def test_the_problems_keep_their_order(tmp_path: Path, copies: list[str]) -> None:
    """A broken audit record (read in the copy) stays between the log pass's problems and the rules'."""
    shutil.copytree(UNWANTED_SYNC, tmp_path / "b")
    with (tmp_path / "b" / "audit" / "kube-apiserver-audit.log").open("a") as audit:
        audit.write("{not json\n")
    controller = tmp_path / "b" / "logs" / "argocd" / "argocd-application-controller-0"
    with next(controller.iterdir()).open("ab") as log:
        log.write(b"\x00binary\n")
    (tmp_path / "b" / "objects" / "widget.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\n"
                                                           "metadata: {name: w, namespace: shop}\n")
    alone = _scan(tmp_path / "b", tmp_path, 1, [_Complains(), *select_analyzers()])
    split = _scan(tmp_path / "b", tmp_path, 2, [_Complains(), *select_analyzers()])
    assert copies == ["sent"]
    assert split.problems == alone.problems
    messages = [f"{p.location}: {p.message}" for p in split.problems]
    places = [next(i for i, m in enumerate(messages) if text in m)
              for text in ("NUL", "not an audit event", "a rule's problem", "no check reads: Widget")]
    assert places == sorted(places)


class _Complains(Analyzer):
    """A rule that adds a problem, the first in the rules' order."""

    id = "test-complains"
    title = "test"

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        ctx.snap.problems.append(Problem("somewhere", "a rule's problem"))
        return ()


class _Reader(Analyzer):
    """An audit-reading rule that counts the records and reports on the first Pod."""

    id = "test-reader"
    title = "test"
    audit = True

    def __init__(self) -> None:
        self.records = 0

    def on_audit(self, event: AuditEvent) -> None:
        self.records += 1

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        yield Finding(self.id, Severity.INFO, f"{self.records} audit records", self.look(ctx))

    def look(self, ctx: Context) -> str:
        return ctx.snap.of_kind("Pod")[0].name


class _AsksForHealth(_Reader):
    def look(self, ctx: Context) -> str:
        health = ctx.health.assess(ctx.snap.of_kind("Pod")[0].raw)
        return str(health.status if health is not None else None)


class _ReadsScripts(_Reader):
    def look(self, ctx: Context) -> str:
        return str(len(ctx.health.scripts.problems))


class _DiesInTheCopy(_Reader):
    def __init__(self) -> None:
        super().__init__()
        self.scan = os.getpid()

    def look(self, ctx: Context) -> str:
        if os.getpid() != self.scan:
            os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
        return super().look(ctx)


class _Crashes(_Reader):
    def analyze(self, ctx: Context) -> Iterator[Finding]:
        yield from super().analyze(ctx)
        raise ValueError("half-way")


@pytest.mark.parametrize("rule", [_AsksForHealth, _ReadsScripts, _DiesInTheCopy, _Crashes])
def test_the_scan_runs_the_copy_s_rules_when_the_copy_cannot(
    rule: type[_Reader], tmp_path: Path, copies: list[str]
) -> None:
    """A rule that asks for health (the Lua worker is the scan's), or a copy that dies, and the rules run in the
    scan's process from where they were; a rule that crashes in the copy is reported as in one process, with what it
    found before."""
    rules = lambda: [rule(), *select_analyzers(("workload-degraded",))]  # noqa: E731
    alone = _scan(UNWANTED_SYNC, tmp_path, 1, rules())
    split = _scan(UNWANTED_SYNC, tmp_path, 2, rules())
    assert copies == ["sent" if rule is _Crashes else "failed"]
    assert _json(split) == _json(alone)
    reader = next(f for f in split.findings if f.rule == "test-reader")
    assert reader.title != "0 audit records" and split.crashed == alone.crashed
    assert (split.crashed, split.problems[-1].message) == (["test-reader"], "internal error: ValueError: half-way") \
        if rule is _Crashes else not split.crashed


class _BadOption(Analyzer):
    title = "test"

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        raise ConfigError(f"bad option of {self.id}")


class _BadReader(_BadOption):
    id = "test-bad-reader"
    audit = True


class _BadLocal(_BadOption):
    id = "test-bad-local"


@pytest.mark.parametrize("order", [(_BadReader, _BadLocal), (_BadLocal, _BadReader)], ids=["copy-first", "here-first"])
def test_a_config_error_is_the_first_rule_s(order: tuple[type[Analyzer], ...], tmp_path: Path,
                                           copies: list[str]) -> None:
    for workers in (1, 2):
        with pytest.raises(ConfigError, match=f"bad option of {order[0].id}"):
            _scan(UNWANTED_SYNC, tmp_path, workers, [cls() for cls in order])
    assert copies == ["sent"]


def _snapshot(tmp_path: Path) -> Snapshot:
    return bundle.load([UNWANTED_SYNC], tmp_path)


def test_by_default_the_copy_is_made_for_large_snapshots_not_too_large_with_a_cpu_to_spare(
    tmp_path: Path, copies: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    size = len(_snapshot(tmp_path))
    for cpus, least, most, forked in ((2, size, size, True), (2, size + 1, size + 1, False), (1, size, size, False),
                                      (2, size, size - 1, False)):
        monkeypatch.setattr(os, "cpu_count", lambda cpus=cpus: cpus)
        monkeypatch.setattr(engine, "SPLIT_MIN_OBJECTS", least)
        monkeypatch.setattr(engine, "SPLIT_MAX_OBJECTS", most)  # the copy's pages would cost more than it saves
        copies.clear()
        run_scan(_snapshot(tmp_path), select_analyzers())
        assert copies == (["sent"] if forked else []), (cpus, least, most)


def test_no_copy_is_made_beside_another_thread(tmp_path: Path, copies: list[str]) -> None:
    """A thread's locks would stay held in the copy: the scan then runs every rule itself."""
    done = threading.Event()
    other = threading.Thread(target=done.wait)
    other.start()
    try:
        result = run_scan(_snapshot(tmp_path), select_analyzers(), workers=2)
    finally:
        done.set()
        other.join()
    assert copies == [] and {f.rule for f in result.findings} >= {"auto-sync-without-change"}
