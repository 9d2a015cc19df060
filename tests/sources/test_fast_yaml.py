"""The yaml-rs fast path reads every document exactly as PyYAML does: same values, lines, List entry lines and
problems, on every YAML file of the repository, on a generated benchmark bundle and on hostile variants."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argo_doctor.model import Problem
from argo_doctor.sources import fast_yaml, objects
from argo_doctor.sources.goyaml import GoLoader

ROOT = Path(__file__).resolve().parents[2]


def _both(data: bytes) -> tuple[Any, Any]:
    """(PyYAML only, the fast path) for one file's bytes: the documents (None ones left out: PyYAML yields an
    explicit empty document, the fast path skips it, and neither holds an object) and the problems, each once."""

    def run(reader: Iterator[tuple[int, Any, list[int]]], problems: list[Problem]) -> Any:
        try:
            docs = [entry for entry in reader if entry[1] is not None]
            for _, doc, _ in docs:
                objects.expanded_size(doc)  # an alias bomb, refused here as the reader refuses it
        except Exception as exc:  # compared, not swallowed
            return ("raised", type(exc).__name__)
        return repr(docs), list(dict.fromkeys(problems))

    slow: list[Problem] = []
    fast: list[Problem] = []
    guarded = objects._may_nest_deeper(data)
    return (run(objects._pyyaml_documents(data, "f", slow, guarded), slow),
            run(objects._yaml_documents(data, "f", fast), fast))


class _Counter:
    """Counts the documents yaml-rs read and those it handed to PyYAML."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fast = self.slow = 0
        real = fast_yaml.load

        def load(chunk: bytes) -> Any:
            try:
                doc = real(chunk)
            except fast_yaml.Unsupported:
                self.slow += 1
                raise
            self.fast += 1
            return doc

        monkeypatch.setattr(fast_yaml, "load", load)


def _yaml_files(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _prepared(path: Path) -> bytes | None:
    data = path.read_bytes()
    if b"\x00" in data:
        return None
    return objects._drop_long_lines(objects._utf8(data, "f", []), "f", [])


def test_every_yaml_file_of_the_repository_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    files = _yaml_files(ROOT / "tests", ROOT / "examples")
    assert len(files) > 250
    for path in files:
        data = _prepared(path)
        if data is not None:
            slow, fast = _both(data)
            assert fast == slow, path
    assert counter.fast > 300 and counter.slow > 20  # both paths ran


@pytest.fixture(scope="module")
def bench_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "bundle"
    subprocess.run([sys.executable, str(ROOT / "bench" / "generate.py"), "--out", str(out), "--apps", "40",
                    "--pods", "400", "--log-bytes", "1M", "--jobs", "1", "-q"], check=True)
    return out


def test_the_benchmark_bundle_reads_the_same_and_takes_the_fast_path(
    bench_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _Counter(monkeypatch)
    files = _yaml_files(bench_bundle / "objects")
    assert len(files) >= 5
    for path in files:
        data = _prepared(path)
        assert data is not None
        slow, fast = _both(data)
        assert fast == slow, path
    assert counter.slow == 0 and counter.fast > 400  # kubectl's YAML never needs PyYAML


KUBECTL_DOCUMENT = b"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"a"}]}}}}
  creationTimestamp: "2026-11-20T15:00:00Z"
  labels:
    app: "yes"
  name: api
  uid: 6f1d2c1e-0000-4000-8000-000000000001
spec:
  replicas: 2
  template:
    spec:
      containers:
      - args: ["--port", "8080"]
        image: nginx:1.25
        ports:
        - containerPort: 8080
      nodeSelector: {}
status:
  podIP: 10.244.1.5
  ratio: 0.5
"""


def test_a_kubectl_document_takes_the_fast_path() -> None:
    doc = fast_yaml.load(KUBECTL_DOCUMENT)
    assert doc["metadata"]["creationTimestamp"] == "2026-11-20T15:00:00Z"
    assert doc["status"] == {"podIP": "10.244.1.5", "ratio": 0.5}
    assert doc["metadata"]["labels"] == {"app": "yes"}


@pytest.mark.parametrize("text", [
    "a: yes\n", "a: On\n", "a: NO\n", "yes: 1\n", "- off\n", "a: [on]\n",  # go-yaml's booleans
    "a: y\n", "- N\n", "y: 1\n", "a: {x: 0, y: 0}\n", "a: [n, Y]\n",
    "a: 18446744073709551616\n", "a: -99999999999999999999\n",  # past uint64 and int64: floats in go-yaml
    "a: 0755\n", "a: 08\n", "a: 0o17\n", "a: 0x1F\n",  # leading zeros
    "a: 1:20\n", "a: 190:20:30.5\n",  # sexagesimal
    "a: 1e3\n", "a: 0.1e30\n", "a: -1.5E3\n", "a: +.5\n", "a: -.5\n",  # exponents without a dot, signed .5
    "a: 2026-01-01\n", "a: 2026-01-01T10:00:00Z\n", "a: 2001-12-14 21:59:43.10 -5\n",  # timestamps
    "<<: {b: 1}\na: 2\n", "a: !!binary aGVsbG8=\n", "a: !custom x\n",  # merge, tags
    "a: &x 1\nb: *x\n", "? [1, 2]\n: x\n", ": x\n", "a: {[1]: 2}\n", "a: {{ x }}\n",  # anchors, odd keys
    "[ ]: x\n", "b:\n  {}: x\n", "a: {[1], b}\n", "a: {x, {y}}\n",  # collections as keys, with and without `:`
    'a: "\\ud83d\\ude00"\n', 'a: "\\U0000D83D"\n',  # escaped surrogates: a character in yaml-rs, refused by libyaml
    '{"a":&x{"b":1}}\n', 'k: {"a":&x{"b":&y{}}}\n', '{"a":!!int "1"}\n',  # right after a JSON-like key's colon
    "a: [>x]\n", ">\n>.5\n", "a: >\n", "a: |\n  x",  # block scalars where none may be, at the end
    "b: {a: |\n  x\n}\n", "b: {c: 1,\n  a: >\n  x}\n", "- pause: {duration: |30s}\n", "a: |30s\n",
    "a: 1\na: 2\n", "a:\tb\n", "\ufeffa: 1\n", "a: b\x85c: d\n", "a: 1\r\nb: 2\r\n",  # duplicates, odd bytes
    "%YAML 1.1\n---\na: 1\n", "a: 1\n...\n---\nb: 2\n",  # directives, document end
])
def test_what_yaml_rs_may_read_otherwise_goes_to_pyyaml(text: str) -> None:
    """PyYAML reads it, with go-yaml's scalars (GoLoader)."""
    data = text.encode()
    slow, fast = _both(data)
    assert fast == slow
    if fast_yaml.file_supported(data):
        with pytest.raises(fast_yaml.Unsupported):
            fast_yaml.load(data)


@pytest.mark.parametrize(("text", "value"), [
    ("a: =\n", "="), ("a: [=, <, ~x]\n", ["=", "<", "~x"]),  # `=` is YAML 1.1's value key only to PyYAML
    ("a: 2026-01-01\n", "2026-01-01"), ("a: 1e3\n", 1000.0), ("a: 1_000\n", 1000), ("a: 0x1F\n", 31),
    ("a: True\n", True), ("a: NULL\n", None), ("a: .5\n", 0.5),
])
def test_what_both_read_alike_as_kubernetes_does(text: str, value: Any) -> None:
    """yaml-rs (when it takes the document) and PyYAML with go-yaml's scalars give Kubernetes' value."""
    data = text.encode()
    slow, fast = _both(data)
    assert fast == slow
    assert GoLoader(data).get_single_data() == {"a": value}


def test_lines_of_documents_and_list_entries(tmp_path: Path) -> None:
    text = b"""\
# a comment before the first document
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
# the list
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: b
  # a comment inside
-
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: c}
metadata: {}
--- {apiVersion: v1, kind: ConfigMap, metadata: {name: d}}
"""
    path = tmp_path / "f.yaml"
    path.write_bytes(text)
    problems: list[Problem] = []
    found = [(obj.location, obj.data["metadata"]["name"]) for obj in objects.read_object_file(path, "f.yaml", problems)]
    assert found == [("f.yaml:2", "a"), ("f.yaml:10", "b"), ("f.yaml:16", "c"), ("f.yaml:20", "d")]
    assert problems == []
    slow, fast = _both(text)
    assert fast == slow


def test_an_error_in_one_document_leaves_the_others(tmp_path: Path) -> None:
    text = b"a: 1\nkind: [\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n"
    slow, fast = _both(text)
    assert fast == slow
    assert "invalid YAML" in repr(fast[1]) and "'ok'" in fast[0]


def test_mimalloc_reserves_no_gigabyte_of_address_space() -> None:
    code = ("import argo_doctor.sources.objects\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmSize')][0])")
    size_kib = int(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                  text=True).stdout)
    assert size_kib < 512 * 1024  # yaml-rs's mimalloc alone would reserve 1 GiB


_TOKENS = [": ", "- ", "\n", "  ", " ", "yes", "on", "No", "0755", "1e3", "0.1e30", "2026-01-01", "1:20", "&a ", "*a",
           "!!str ", "? ", "{", "}", "[", "]", ",", '"', "'", "#", "|", ">", "|-", ">+", "---\n", "...\n", "\t", "<<: ",
           "=", "~", "null", ".5", "-.5", "+1", "08", "\\", "é", "\u2028", "\x85", "\r\n", "items:\n- a: 1\n",
           "a: b: c", "key: value\n", "-\n  x: 1\n", "@", "`", "%", "1_000", "0b101", ".inf", "True", "{{ x }}",
           "[[1]]: 2"]


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(_TOKENS + [KUBECTL_DOCUMENT.decode()[i:i + 40] for i in range(0, 600, 40)]),
                min_size=1, max_size=40))
def test_random_documents_read_the_same(parts: list[str]) -> None:
    data = objects._utf8("".join(parts).encode(), "f", [])
    slow, fast = _both(data)
    assert fast == slow
