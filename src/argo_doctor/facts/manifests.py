"""Manifest generation errors of an Application: its ComparisonError (or InvalidSpecError) conditions that carry the
repo-server's answer ("Failed to load target state: failed to generate manifest for source N of M: rpc error: code =
C desc = …", controller/state.go), each matched with what it means (knowledge/manifest_errors.yaml)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from argo_doctor import knowledge
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

CACHED = "Manifest generation error (cached)"
"""The repo-server's prefix for an error it serves from its cache (reposerver/repository/repository.go)."""
_GENERATION = re.compile(r"failed to generate manifest|Manifest generation error|Unable to generate manifests in |"
                         r"failed to compare revisions|^(?:Failed to load target state: )?rpc error: code = ")
CONDITIONS = ("ComparisonError", "InvalidSpecError")
"""The condition types the controller writes a generation failure under (InvalidSpecError when the spec is checked)."""
_DESC = re.compile(r"rpc error: code = (?P<code>\w+) desc = (?P<desc>.*)", re.S)
_SOURCE = re.compile(r"failed to generate manifest for source (?P<n>\d+) of (?P<m>\d+)")


@dataclass(frozen=True)
class GenerationError:
    """One ComparisonError condition that is a manifest generation failure."""

    index: int
    """The condition's index in `status.conditions`."""
    message: str
    time: datetime | None
    code: str
    """The gRPC code the repo-server (or the call to it) answered; "" when the message has none."""
    detail: str
    """The repo-server's own words: the message after `desc = `, without the cache prefix."""
    cached: bool
    source: str
    """`source N of M` for a multi-source Application, else ""."""
    row: knowledge.KnownError | None

    @property
    def cause(self) -> str:
        """load, repository, source, or unknown."""
        return self.row.cause if self.row is not None else "unknown"


def generation_errors(app: Obj) -> list[GenerationError]:
    """The Application's manifest generation errors, in condition order."""
    found = []
    for index, cond in enumerate(as_list(app.status.get("conditions"))):
        cond = mapping(cond)
        message = str(cond.get("message") or "")
        if cond.get("type") not in CONDITIONS or not _GENERATION.search(message):
            continue
        found.append(explain(message, index, parse_time(cond.get("lastTransitionTime"))))
    return found


def explain(message: str, index: int = 0, time: datetime | None = None) -> GenerationError:
    """A generation error message read: its code, the repo-server's words, whether it was cached, and its row."""
    desc = _DESC.search(message)
    detail = desc.group("desc") if desc else message
    cached = CACHED in detail
    detail = detail.split(CACHED + ": ", 1)[-1].strip()
    source = _SOURCE.search(message)
    many = source is not None and source.group("m") != "1"
    row = next((r for r in knowledge.manifest_errors() if r.pattern.search(message)), None)
    return GenerationError(index, message, time, desc.group("code") if desc else "", detail, cached,
                           f"source {source.group('n')} of {source.group('m')}" if many and source else "", row)


def is_generation_error(message: str) -> bool:
    """Whether a message (a condition's, an operation's) is a manifest generation failure."""
    return bool(_GENERATION.search(message))
