"""The input an MCP server answers about: read once when the server starts (again on `refresh`, for a live cluster),
and what each tool derives from it, computed on first use and kept until the input is read again."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argo_doctor.engine import (
    InstallationMap,
    ScanResult,
    health_assessor,
    installation_map,
    run_scan,
    select_analyzers,
)
from argo_doctor.health import HealthAssessor
from argo_doctor.model import TimelineEntry
from argo_doctor.report.json import document
from argo_doctor.snapshot import Snapshot
from argo_doctor.timeline import full_timeline

Loader = Callable[[Path], tuple[Snapshot, tuple[Path, ...]]]
"""Reads the input into a folder it may use (tarballs extracted, a cluster collected): the Snapshot, and the files a
reader of manifests (`deprecations`) reads."""


@dataclass
class State:
    """One reading of the input and what the tools derived from it. `generation` counts the readings: a cursor of
    an earlier one is refused."""

    snap: Snapshot
    inputs: tuple[Path, ...]
    folder: Path
    generation: int
    lua_dirs: tuple[Path, ...]
    options: dict[str, str]
    _result: ScanResult | None = None
    _document: dict[str, Any] | None = None
    _timeline: list[TimelineEntry] | None = None
    _assessor: HealthAssessor | None = None
    _map: InstallationMap | None = None
    cleaned: dict[str, str] = field(default_factory=dict)
    """What redaction made of each text so far (`clean`'s cache), shared by the tools."""
    cache: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    """What a tool computed for given arguments (deprecations and upgrade checks per target)."""
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Findings other than the scan's (an upgrade check's) by id, in the JSON contract's form, for `finding`."""

    @property
    def result(self) -> ScanResult:
        """The scan of every rule (as `scan`), run once."""
        if self._result is None:
            # workers=1: the rules run in this process (a server's threads would make a forked copy unsafe)
            self._result = run_scan(self.snap, select_analyzers(), self.lua_dirs, self.options, workers=1)
        return self._result

    @property
    def document(self) -> dict[str, Any]:
        """The scan as the JSON contract has it (`scan -o json`), redacted."""
        if self._document is None:
            self._document = document(self.result)
        return self._document

    def finding(self, finding_id: str) -> dict[str, Any] | None:
        """A finding in the JSON contract's form, by id: the scan's, else an upgrade check's."""
        return next((f for f in self.document["findings"] if f["id"] == finding_id), None) or self.extra.get(
            finding_id)

    @property
    def timeline(self) -> list[TimelineEntry]:
        """Every timestamped fact, with the findings' evidence (as `timeline`), oldest first."""
        if self._timeline is None:
            self._timeline = full_timeline(self.snap, self.result.findings)
        return self._timeline

    @property
    def assessor(self) -> HealthAssessor:
        """The health assessor of the input (argocd-cm's Lua customizations, then --lua-dir's)."""
        if self._assessor is None:
            self._assessor = health_assessor(self.snap, self.lua_dirs)
        return self._assessor

    @property
    def installation(self) -> InstallationMap:
        """The installation map (as `map`)."""
        if self._map is None:
            self._map = installation_map(self.snap)
        return self._map

    def close(self) -> None:
        """Stop the Lua worker and remove the folder of this reading."""
        if self._assessor is not None:
            self._assessor.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class Session:
    """The server's input: one State at a time, used by one tool call at a time (tools run on worker threads, and a
    scan is not made to run twice at once on one Snapshot)."""

    def __init__(self, load: Loader, workdir: Path, live: bool, lua_dirs: tuple[Path, ...] = (),
                 options: dict[str, str] | None = None) -> None:
        self._load = load
        self._workdir = workdir
        self.live = live
        self._lua_dirs = lua_dirs
        self._options = options or {}
        self._lock = threading.Lock()
        self._state = self._read(1)

    def _read(self, generation: int) -> State:
        folder = self._workdir / str(generation)
        folder.mkdir(mode=0o700)
        snap, inputs = self._load(folder)
        return State(snap, inputs, folder, generation, self._lua_dirs, self._options)

    @contextmanager
    def using(self) -> Iterator[State]:
        """The current State, for the length of one tool call."""
        with self._lock:
            yield self._state

    def refresh(self) -> State:
        """Read the input again (collect the cluster again); the State before is dropped once the new one is read."""
        with self._lock:
            fresh = self._read(self._state.generation + 1)
            self._state.close()
            self._state = fresh
            return fresh

    def close(self) -> None:
        """Stop what the current State runs."""
        with self._lock:
            self._state.close()
