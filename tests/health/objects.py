"""Loads the fixture objects under tests/health/fixtures, keyed by metadata.name."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from argo_doctor.health import HealthStatus

H, P, D, S, U = (
    HealthStatus.HEALTHY,
    HealthStatus.PROGRESSING,
    HealthStatus.DEGRADED,
    HealthStatus.SUSPENDED,
    HealthStatus.UNKNOWN,
)
"""Short names for the statuses, for tables of expected verdicts."""

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@cache
def _documents(filename: str) -> dict[str, dict[str, Any]]:
    with (FIXTURES / filename).open(encoding="utf-8") as stream:
        docs = [doc for doc in yaml.safe_load_all(stream) if doc]
    return {doc["metadata"]["name"]: doc for doc in docs}


def obj(filename: str, name: str) -> dict[str, Any]:
    """A fresh copy of the object called `name` in `filename`."""
    return copy.deepcopy(_documents(filename)[name])


def names(filename: str) -> list[str]:
    """The names of every object in `filename`."""
    return list(_documents(filename))
