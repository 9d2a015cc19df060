"""Terminal control sequences in input text never reach a terminal through human-oriented output.

A copy of examples/argocd-basic gets, at the start of four texts that findings and the health table
cite, an OSC title write, an OSC 52 clipboard write, a clear screen, a C1 CSI and a carriage-return
overwrite: the message of the BackOff Event, the fatal line of the crashing container's previous log,
the message of legacy-app's ComparisonError condition and the waiting message of the crashing
container. Table and Markdown output show the text without any control
character; JSON keeps every sequence, escaped, and decodes back to it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.hostile.conftest import GOOD, Argo, Run, assert_contract

SEQUENCES = "\x1b]0;pwned-title\x07\x1b]52;c;Y2xpcGJvYXJk\x07\x1b[2J\x9b31m\rFAKE: all healthy "
PLACES = ("EVTMARK", "LOGMARK", "CONDMARK", "PODMARK")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 (but tab and newline), DEL and C1."""


def payload(marker: str) -> str:
    """The sequences, between a visible marker and its end."""
    return f"{marker}{SEQUENCES}/{marker} "


def _rewrite_yaml(path: Path, edit: Any) -> None:
    docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    for doc in docs:
        for obj in doc.get("items", [doc]) if isinstance(doc, dict) else []:
            edit(obj)
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")  # control characters written as YAML escapes


def _event(obj: dict[str, Any]) -> None:
    if obj.get("kind") == "Event" and obj.get("reason") == "BackOff" and obj.get("message"):
        obj["message"] = payload("EVTMARK") + obj["message"]


def _condition(obj: dict[str, Any]) -> None:
    if obj.get("kind") == "Application" and obj["metadata"]["name"] == "legacy-app":
        for condition in obj["status"]["conditions"]:  # in helm's own words, which the finding's title quotes
            mark = "Error: " + payload("CONDMARK")
            condition["message"] = condition["message"].replace("Error: chart", mark + "chart")


def _pod(obj: dict[str, Any]) -> None:
    if obj.get("kind") == "Pod" and obj["metadata"]["name"] == "payments-api-7c9d8f6b5d-cpbcd":
        for status in obj["status"]["containerStatuses"]:
            waiting = status.get("state", {}).get("waiting")
            if waiting and waiting.get("message"):
                waiting["message"] = payload("PODMARK") + waiting["message"]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/argocd-basic with the sequences in an Event, a cited log line, a condition and a container
    status."""
    root = tmp_path_factory.mktemp("terminal") / "argocd-basic"
    shutil.copytree(GOOD, root)
    _rewrite_yaml(root / "objects/payments/events.yaml", _event)
    _rewrite_yaml(root / "objects/argocd/applications.yaml", _condition)
    _rewrite_yaml(root / "objects/payments/workloads.yaml", _pod)
    log = root / "logs/payments/payments-api-7c9d8f6b5d-cpbcd/api.previous.log"
    text = log.read_text(encoding="utf-8")
    assert "fatal: config:" in text
    log.write_text(text.replace("fatal: config:", "fatal: " + payload("LOGMARK") + "config:"), encoding="utf-8")
    return root


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _assert_clean(run: Run, markers: tuple[str, ...]) -> None:
    """No control character in standard output or error; each marker is shown (the text was reached)."""
    for name, text in (("stdout", run.stdout), ("stderr", run.stderr)):
        found = sorted({repr(c) for c in CONTROL.findall(text)})
        assert not found, f"control characters {found} in {name} of {run.describe()}"
    missing = [m for m in markers if m not in run.stdout]
    assert not missing, f"{missing} not shown: the test no longer reaches those texts"


HUMAN = {
    "scan-brief": (("scan", "--fail-on", "never"), ("CONDMARK",)),
    "scan-table": (("scan", "--details", "--fail-on", "never"), PLACES),
    "scan-wide": (("scan", "-o", "wide", "--fail-on", "never"), ("CONDMARK",)),
    "scan-markdown": (("scan", "-o", "markdown", "--fail-on", "never"), PLACES),
    "timeline-table": (("timeline",), ("EVTMARK", "LOGMARK")),
    "health-table": (("health",), ("PODMARK",)),
}


@pytest.mark.parametrize("case", sorted(HUMAN))
def test_human_formats_carry_no_control_character(argo: Argo, bundle: Path, case: str) -> None:
    """Table and Markdown output strip every control character from input text."""
    args, markers = HUMAN[case]
    run = argo(args[0], bundle, *args[1:])
    assert_contract(run, codes=(0,))
    _assert_clean(run, markers)


@pytest.mark.parametrize(("command", "markers"), [("scan", PLACES), ("timeline", ("EVTMARK", "LOGMARK"))])
def test_json_keeps_control_characters_escaped(argo: Argo, bundle: Path, command: str,
                                               markers: tuple[str, ...]) -> None:
    """JSON carries no raw control character, and decodes back to every sequence as the input had it."""
    run = argo(command, bundle, "-o", "json", *(("--fail-on", "never") if command == "scan" else ()))
    doc = assert_contract(run, codes=(0,))
    raw = sorted({repr(c) for c in re.findall(r"[\x00-\x09\x0b-\x1f]", run.stdout)})
    assert not raw, f"raw control characters {raw} in JSON"
    texts = list(_strings(doc))
    missing = [m for m in markers if not any(payload(m).strip() in text for text in texts)]
    assert not missing, f"the sequences cited from {missing} do not decode back to the input's"
