"""The depth guard every JSON reader goes through (`files.decode_json`): exact on any JSON, strings and escapes
included, and refusing deep input before the decoder recurses."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest

from argo_doctor.sources.files import MAX_JSON_DEPTH, JsonTooDeep, decode_json, json_too_deep

TRICKY = '[]{}"\\/ab\n\u00e9'
"""What strings may hold to mislead a count of brackets: brackets, quotes, backslashes, escapes."""


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _document(rng: random.Random, levels: int) -> Any:
    roll = rng.random()
    if levels <= 0 or roll < 0.2:
        return rng.choice(["".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 8))), 1, -2.5e3, None, True])
    width = rng.randint(0, 3)
    if roll < 0.6:
        return {"".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 4))): _document(rng, levels - 1)
                for _ in range(width)}
    return [_document(rng, levels - 1) for _ in range(width)]


def test_the_depth_read_from_bytes_is_the_depth_of_the_document() -> None:
    rng = random.Random(29)
    for _ in range(2000):
        doc = _document(rng, rng.randint(0, 10))
        text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
        depth = _depth(doc)
        for limit in (0, 1, 2, 4, 7):
            assert json_too_deep(text, limit) is (depth > limit), (text, depth, limit)
            assert json_too_deep(text.encode(), limit) is (depth > limit), (text, depth, limit)


@pytest.mark.parametrize("text", [
    '{"a":' * 1000 + "1" + "}" * 1000,
    "[" * 100_000 + "]" * 100_000,
    '[{"k":[' * 200 + '"x"' + "]}]" * 200,
    '{"wide":[' + ",".join(["{}"] * 50_000) + "]," + '"deep":' + "[" * 300 + "]" * 300 + "}",
], ids=["objects", "arrays", "mixed", "wide-then-deep"])
def test_deep_json_is_refused_before_it_is_decoded(text: str) -> None:
    assert json_too_deep(text)
    with pytest.raises(JsonTooDeep, match=f"JSON nested more than {MAX_JSON_DEPTH} levels deep"):
        decode_json(text.encode())
    with pytest.raises(msgspec.DecodeError):  # what every reader already catches
        decode_json(text)


def test_the_limit_itself_decodes_and_strings_that_look_deep_do_too() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert decode_json(at_limit) is not None
    looks_deep = json.dumps({"msg": "[{" * 5000, "escaped": '\\"[[[' * 500})
    assert decode_json(looks_deep)["msg"] == "[{" * 5000


def test_text_cut_short_is_refused_as_deep_when_a_decoder_would_recurse_into_it() -> None:
    """Brackets never closed are entered before the end is found: counted; a shallow cut is the decoder's to say."""
    assert json_too_deep("[" * 100_000) and json_too_deep('{"a":' * 300)
    with pytest.raises(JsonTooDeep):
        decode_json("[" * 100_000)
    assert not json_too_deep('{"a":' * 200 + "[" * 56)
    with pytest.raises(msgspec.DecodeError, match="truncated"):
        decode_json('{"a": [1, 2')
