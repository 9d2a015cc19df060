"""The JSON writer: the same text whether it is written whole or in pieces."""

from __future__ import annotations

import io
import json

import pytest

from argo_doctor.report import json as json_report


def test_dumps_escapes_del_and_the_c1_controls_only() -> None:
    doc = {"text": "a\x7fb\x80c\x9fd\xa0é…\x1b[31m"}
    text = json_report.dumps(doc)
    assert '"a\\u007fb\\u0080c\\u009fd\xa0é…\\u001b[31m"' in text
    assert json.loads(text) == doc


def test_write_in_pieces_gives_the_text_of_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_report, "_WRITE_CHUNK", 3)  # pieces that cut multi-byte characters
    doc = {"é…😀": ["\x85x", "中" * 7, None, 1.5], "b": {"c": "\u2028\x9b"}}
    out = io.StringIO()
    json_report.write(doc, out)
    assert out.getvalue() == json_report.dumps(doc)
    assert json.loads(out.getvalue()) == doc
