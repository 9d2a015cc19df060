"""The JSON writer: the same text whether the document is formatted whole or streamed in pieces."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.report import json as json_report
from argo_doctor.sources import bundle
from tests.conftest import BUNDLES, EXAMPLES


def test_dumps_escapes_del_and_the_c1_controls_only() -> None:
    doc = {"text": "a\x7fb\x80c\x9fd\xa0é…\x1b[31m"}
    text = json_report.dumps(doc)
    assert '"a\\u007fb\\u0080c\\u009fd\xa0é…\\u001b[31m"' in text
    assert json.loads(text) == doc


@pytest.mark.parametrize("lists", [
    {"findings": [{"id": "é…😀", "evidence": [], "remediation": {}, "chain": [{"gapSeconds": None}]},
                  {"id": "b", "objects": [{"name": "\x85x\u2028\x9b"}], "n": [1.5, True, "中" * 7]}],
     "timeline": [], "errors": [{"location": "a\x7fb", "message": "\x1b[31m"}]},
    {"findings": [], "timeline": [], "errors": []},
])
def test_the_document_streamed_is_the_document_formatted_whole(lists: dict[str, list[Any]]) -> None:
    """Items formatted one at a time, their lines indented as the whole document's: the same bytes, whatever the
    items hold (nested and empty containers, multi-byte and control characters) or when the lists are empty."""
    head = {"schemaVersion": 1, "tool": {"name": "argo-doctor"}, "source": {"cluster": None, "inputs": ["x"]}}
    streamed = b"".join(json_report._streamed(head, {key: iter(items) for key, items in lists.items()}))
    assert streamed == json_report._formatted({**head, **lists})


@pytest.mark.parametrize("path", [EXAMPLES / "argocd-basic", EXAMPLES / "incidents" / "stuck-rollout",
                                  BUNDLES / "bad-input"], ids=lambda p: p.name)
def test_a_scan_rendered_in_pieces_is_dumps_of_its_document(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_scan(bundle.load([path]), select_analyzers())
    monkeypatch.setattr(json_report, "_WRITE_CHUNK", 100)  # a write every few pieces
    out = io.StringIO()
    json_report.render(result, out)
    assert out.getvalue() == json_report.dumps(json_report.document(result)) + "\n"
    assert json.loads(out.getvalue())["findings"]
