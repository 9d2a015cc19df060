"""Hostile YAML and object files, generated at run time: absurd nesting, alias bombs measured in bytes,
huge, sparse and binary files, huge lines, and a worker process that dies. Each is one problem naming the
file (and line), everything else still loads, and this process survives."""

from __future__ import annotations

import faulthandler
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argo_doctor.facts.clock import probe_samples
from argo_doctor.helm.scan import scan_chart
from argo_doctor.model import Problem
from argo_doctor.sources import bundle, objects
from argo_doctor.sources.objects import MAX_YAML_DEPTH, FileLoad, load_object_file, load_yaml_file, read_object_file
from tests.conftest import EXAMPLES

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: argocd\ndata:\n  k: v\n"
FLOW_30K = "[" * 30_000 + "]" * 30_000
BLOCK_30K = "- " * 30_000 + "x"


def _read(path: Path) -> tuple[list[tuple[str, str]], list[Problem]]:
    problems: list[Problem] = []
    objs = [(o.data["metadata"]["name"], o.location) for o in read_object_file(path, path.name, problems)]
    return objs, problems


def _objects_dir(tmp_path: Path, hostile: dict[str, str | bytes]) -> Path:
    """A folder of object files: a good one, then the hostile ones."""
    root = tmp_path / "in"
    root.mkdir()
    (root / "good.yaml").write_text(CONFIGMAP.format(name="good"))
    for name, content in hostile.items():
        (root / name).write_bytes(content.encode() if isinstance(content, str) else content)
    return root


@pytest.mark.parametrize("nested", [FLOW_30K, BLOCK_30K], ids=["flow", "block"])
def test_deep_nesting_is_one_problem_and_the_other_documents_load(tmp_path: Path, nested: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(CONFIGMAP.format(name="before") + "---\n# a comment\n" + nested + "\n---\n"
                    + CONFIGMAP.format(name="after"))
    objs, problems = _read(path)
    assert objs == [("before", "deep.yaml:1"), ("after", "deep.yaml:12")]
    assert problems == [Problem("deep.yaml:10", f"YAML nested more than {MAX_YAML_DEPTH} levels deep (line 10); "
                                                "document skipped")]


@pytest.mark.parametrize("depth", [300, 2_000], ids=["below-libyaml-limit", "past-libyaml-limit"])
def test_deep_flow_nesting_is_told_at_its_document_and_line(tmp_path: Path, depth: int) -> None:
    """Past 1,000 levels on one line, libyaml 0.2.6 (PyYAML 6.0.4) refuses while scanning ahead, before the composer
    meets level 257: the problem is the same, at the document's first line and the line of the nesting."""
    path = tmp_path / "deep.yaml"
    path.write_text(CONFIGMAP.format(name="before") + "---\nkind: ConfigMap\ndata:\n  x: " + "[" * depth
                    + "]" * depth + "\n---\n" + CONFIGMAP.format(name="after"))
    objs, problems = _read(path)
    assert objs == [("before", "deep.yaml:1"), ("after", "deep.yaml:13")]
    assert problems == [Problem("deep.yaml:9", f"YAML nested more than {MAX_YAML_DEPTH} levels deep (line 11); "
                                               "document skipped")]
    values = tmp_path / "values.yaml"
    values.write_text("kind: x\ndata:\n  x: " + "[" * depth + "]" * depth + "\n")
    settings_problems: list[Problem] = []
    assert load_yaml_file(values, "values.yaml", settings_problems) is None
    assert settings_problems == [
        Problem("values.yaml:3", f"YAML nested more than {MAX_YAML_DEPTH} levels deep; skipped")]


def test_the_depth_limit_is_exact(tmp_path: Path) -> None:
    """A ConfigMap is two levels (itself, data): 254 flow levels below it make 256, which loads; 255 do not."""
    for extra, loads in ((254, True), (255, False)):
        path = tmp_path / f"cm{extra}.yaml"
        path.write_text(CONFIGMAP.format(name="cm") + "  x: " + "[" * extra + "]" * extra + "\n")
        objs, problems = _read(path)
        assert (objs == [("cm", path.name + ":1")]) is loads
        assert [p.location for p in problems] == ([] if loads else [f"{path.name}:1"])


@pytest.mark.parametrize("text", [
    "[a: " * 200 + "b" + "]" * 200,  # each `[` holds an implicit single-pair mapping: 400 levels
    "".join(" " * (2 * i) + "- k:\n" for i in range(150)),  # a sequence as a key's value, in the key's column
    "".join(" " * i + "k:\r" for i in range(300)),  # \r ends a line for libyaml too
    "? " * 300 + "x",
    "\ufeff" + "- " * 300 + "x",
    "---\n" + "a: 1\n---\n" * 3 + "{a: " * 300 + "1" + "}" * 300 + "\n---\nb: 2\n",
])
def test_the_byte_level_bound_never_misses_a_deep_document(text: str) -> None:
    """The precheck must say "may be deep" for every document libyaml composes deeper than the limit (a few
    hundred levels are still safe for libyaml's composer, which measures them here)."""
    data = text.encode()
    depth = 0
    for node in yaml.compose_all(data, Loader=yaml.CSafeLoader):
        depth = max(depth, _depth(node))
    assert depth > MAX_YAML_DEPTH
    assert objects._may_nest_deeper(data)


@pytest.mark.parametrize(("sequences", "mappings", "deep"), [
    (63, 1, False), (63, 2, True), (64, 0, True), (0, 127, False), (0, 128, True), (10, 107, False), (10, 108, True),
])
def test_the_flow_bound_counts_to_its_budget_exactly(sequences: int, mappings: int, deep: bool) -> None:
    """Flow nesting is bounded by 2 × `[` + `{` against what the line prefixes leave of the limit (127): counted
    up to the budget and no further, in one document, and per document when the file's count is over."""
    one = "a: " + "[" * sequences + "{" * mappings + "\n"
    assert objects._may_nest_deeper(one.encode()) is deep
    split = "a: " + "[" * sequences + "\n---\nb: " + "{" * mappings + "\n"
    assert objects._may_nest_deeper(split.encode()) is (2 * sequences > 127 or mappings > 127)


EVENT = """\
- apiVersion: v1
  count: 3
  involvedObject:
    fieldPath: spec.containers{{app}}
    kind: Pod
    name: api-{i}
    namespace: shop
  kind: Event
  message: Back-off restarting failed container app in pod api-{i}_shop(0932{i:04d})
  metadata:
    name: api-{i}.18a{i:04d}
    namespace: shop
  reason: BackOff
  type: Warning
"""


def test_braces_inside_scalars_leave_a_list_of_events_to_the_fast_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kubectl get events -o yaml`: every Event about a container names it `spec.containers{app}`, hundreds of
    braces that open nothing; the file is read by yaml-rs, as PyYAML reads it, not by the guarded composer."""
    data = ("apiVersion: v1\nitems:\n" + "".join(EVENT.format(i=i) for i in range(300))
            + "kind: List\nmetadata:\n  resourceVersion: \"\"\n").encode()
    assert not objects._may_nest_deeper(data)

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("read by PyYAML")

    monkeypatch.setattr(objects, "_pyyaml_documents", refused)
    (tmp_path / "events.yaml").write_bytes(data)
    problems: list[Problem] = []
    read = [(raw.data, raw.location) for raw in read_object_file(tmp_path / "events.yaml", "events.yaml", problems)]
    monkeypatch.undo()
    assert problems == [] and len(read) == 300
    assert [doc for doc, _ in read] == yaml.load(data, Loader=yaml.CSafeLoader)["items"]
    assert read[1][1] == "events.yaml:17" and read[0][0]["involvedObject"]["fieldPath"] == "spec.containers{app}"


@pytest.mark.parametrize("text", [
    "k: [" + "a[" * 400 + "]" * 401 + "\n",
    "k: {" + "a{" * 400 + "}" * 401 + "\n",
    "- [x, " + "b.[" * 400 + "]" * 401 + "\n",
])
def test_a_bracket_after_a_scalar_opens_nothing_deep(text: str, tmp_path: Path) -> None:
    """A `[` or `{` right after a scalar's byte in a flow collection is not counted: libyaml stops at the first one
    with an error, before anything deeper is composed, and the file is one problem with its line."""
    data = text.encode()
    assert not objects._may_nest_deeper(data)
    assert _parsed_depth(data) <= 3
    (tmp_path / "f.yaml").write_bytes(data)
    objs, problems = _read(tmp_path / "f.yaml")
    assert objs == [] and len(problems) == 1 and problems[0].message.startswith("invalid YAML")
    assert problems[0].location == "f.yaml:1"


def _parsed_depth(data: bytes, flow_only: bool = False) -> int:
    """How deep libyaml's parser nests collections (only flow ones with `flow_only`) before the end or its first
    error."""
    stack: list[bool] = []
    deepest = 0
    try:
        for event in yaml.parse(data, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                stack.append(bool(event.flow_style) or not flow_only)
                deepest = max(deepest, sum(stack))
            elif isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
    except yaml.YAMLError:
        pass
    return deepest


def _flow_bound(data: bytes) -> int:
    """2 × the `[` and the `{` of `data` that may open a collection: the bound _may_nest_deeper relies on."""
    end = len(data)
    return 2 * objects._openings(data, b"[", end, 0, end, True) + objects._openings(data, b"{", end, 0, end, True)


@pytest.mark.parametrize("text", [
    "[a,[b,[c,[d]]]]",  # after a comma
    '{"a":{"b":{"c":{}}}}',  # after a JSON-like key's colon
    "[?[?[?[a]]]]",  # after a key indicator, which needs no blank in a flow collection
    "[\n[\n[\n[a]]]]", "[\t[\t[\t[a]]]]", "[\r[\r[\r[a]]]]", "[ [ [ [a]]]]",  # after a line break or a blank
    "\ufeff[\u0085[\u2028[\u2029[a]]]]",  # after a BOM, NEL, LS, PS (line breaks in YAML 1.1)
])
def test_the_flow_bound_counts_every_kind_of_opening(text: str) -> None:
    data = text.encode()
    assert 4 <= _parsed_depth(data, flow_only=True) <= _flow_bound(data)


@settings(max_examples=3000, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet="ab[]{},:? -\"'!&*|>#.=\\@\n\t", max_size=30), st.booleans())
def test_the_flow_bound_holds_on_any_text(text: str, in_mapping: bool) -> None:
    """libyaml's flow nesting never exceeds 2 × the `[` and the `{` that may open a collection, on any text: the
    bound _may_nest_deeper relies on."""
    data = (("k: " if in_mapping else "") + text).encode()
    assert _parsed_depth(data, flow_only=True) <= _flow_bound(data)


def _depth(node: yaml.Node) -> int:
    stack = [(node, 1)]
    deepest = 0
    while stack:
        current, level = stack.pop()
        if isinstance(current, yaml.SequenceNode):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in current.value)
        elif isinstance(current, yaml.MappingNode):
            deepest = max(deepest, level)
            stack.extend((part, level + 1) for pair in current.value for part in pair)
    return deepest


def test_guarded_composer_reads_real_files_as_libyaml_does() -> None:
    """The iterative composer and libyaml's give the same documents, lines and List item lines, and the
    byte-level bound leaves real object files to libyaml."""
    files = sorted(p for p in EXAMPLES.rglob("*.yaml") if "objects" in p.parts)
    assert len(files) > 50
    for path in files:
        data = path.read_bytes()
        if not path.name.startswith("crds"):  # a kind: List of CRDs with their last-applied JSON is left to the guard
            assert not objects._may_nest_deeper(data), path
        assert _documents(data, objects._GuardedLoader) == _documents(data, yaml.CSafeLoader), path


def _documents(data: bytes, loader_class: type[yaml.CSafeLoader]) -> list[object]:
    loader = loader_class(data)
    out: list[object] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            assert node is not None
            out.append((node.start_mark.line, loader.construct_document(node), objects._item_lines(node, 0)))
    except yaml.YAMLError as exc:
        out.append(str(exc))
    finally:
        loader.dispose()
    return out


def test_alias_bomb_counted_in_bytes(tmp_path: Path) -> None:
    """One 1 MiB scalar referenced 3,000 times: 3,002 nodes, but 3 GiB once expanded."""
    path = tmp_path / "bomb.yaml"
    path.write_text(CONFIGMAP.format(name="before") + "---\n" + CONFIGMAP.format(name="bomb")
                    + f"  big: &big \"{'x' * (1 << 20)}\"\n  copies: [" + ", ".join(["*big"] * 3000) + "]\n")
    objs, problems = _read(path)
    assert objs == [("before", "bomb.yaml:1")]
    assert problems == [Problem("bomb.yaml:9", problems[0].message)]
    assert "more than 67,108,864 bytes (alias bomb)" in problems[0].message


def test_a_sparse_2g_file_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sparse.yaml"
    with path.open("wb") as handle:
        handle.truncate(2 << 30)
    monkeypatch.setattr(objects, "read_input", _never_read)
    assert _read(path) == ([], [Problem("sparse.yaml", "2,147,483,648 bytes, over the limit of 1,073,741,824 "
                                                       "for one file; skipped")])


def _never_read(*args: object) -> bytes:
    raise AssertionError("read a file that should have been refused before")


def test_a_file_over_the_cap_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(CONFIGMAP.format(name="big") + "  pad: " + "y" * 20_000 + "\n")
    monkeypatch.setattr(objects, "MAX_OBJECT_FILE_BYTES", 10_000)
    monkeypatch.setattr(objects, "read_input", _never_read)
    objs, problems = _read(path)
    assert objs == [] and problems == [Problem("big.yaml", "20,094 bytes, over the limit of 10,000 for one file; "
                                                           "skipped")]


def test_a_nul_in_the_first_block_stops_the_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "blob.yaml"
    path.write_bytes(b"apiVersion: v1\nkind: ConfigMap\n\x00" + b"z" * 100_000)
    monkeypatch.setattr(objects, "read_input", _never_read)
    assert _read(path) == ([], [Problem("blob.yaml:3", "binary data (NUL byte), not YAML or JSON; skipped")])


def test_a_nul_after_the_first_block(tmp_path: Path) -> None:
    path = tmp_path / "late.json"
    path.write_bytes(b'{"a": "' + b"z" * 10_000 + b'\n\x00"}')
    assert _read(path) == ([], [Problem("late.json:2", "binary data (NUL byte), not YAML or JSON; skipped")])


def test_a_huge_line_skips_its_document_unparsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "MAX_YAML_LINE_BYTES", 4096)
    path = tmp_path / "long.yaml"
    path.write_text(CONFIGMAP.format(name="before") + "---\n" + CONFIGMAP.format(name="long")
                    + '  huge: "' + "y" * 10_000 + '"\n---\n' + CONFIGMAP.format(name="after"))
    objs, problems = _read(path)
    assert objs == [("before", "long.yaml:1"), ("after", "long.yaml:18")]
    assert problems == [Problem("long.yaml:16", "a line of 10,010 bytes, over the limit of 4,096 for one YAML line; "
                                                "document skipped")]


def test_hostile_files_leave_the_others_indexed(tmp_path: Path) -> None:
    root = _objects_dir(tmp_path, {"flow.yaml": FLOW_30K, "block.yaml": BLOCK_30K, "nul.yaml": b"kind: x\n\x00"})
    with (root / "sparse.yaml").open("wb") as handle:
        handle.truncate(2 << 30)
    snap = bundle.load([root], tmp_path)
    assert [o.name for o in snap.of_kind("ConfigMap")] == ["good"]
    assert sorted(p.location for p in snap.problems) == ["block.yaml:1", "flow.yaml:1", "nul.yaml:2", "sparse.yaml"]


def _crash_on_bad(job: tuple[Path, str]) -> FileLoad:
    """load_object_file, except that the worker dies of SIGSEGV on `bad.yaml`."""
    if job[0].name == "bad.yaml":
        faulthandler.disable()  # pytest's would print the stack of the crash on purpose
        os.kill(os.getpid(), signal.SIGSEGV)
    return load_object_file(job)


def test_a_worker_that_dies_is_one_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "in"
    root.mkdir()
    names = [f"cm{i:02}" for i in range(12)]
    for name in names:
        (root / f"{name}.yaml").write_text(CONFIGMAP.format(name=name))
    (root / "bad.yaml").write_text(CONFIGMAP.format(name="bad"))
    monkeypatch.setattr(bundle, "PARALLEL_OBJECT_BYTES", 0)
    monkeypatch.setattr(bundle.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(bundle, "load_object_file", _crash_on_bad)
    snap = bundle.load([root], tmp_path)
    assert sorted(o.name for o in snap.of_kind("ConfigMap")) == names
    assert snap.problems == [Problem("bad.yaml", "the process parsing this file died (killed by a signal, or out of "
                                                 "memory); skipped")]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize("parallel", [False, True], ids=["in-process", "workers"])
def test_cli_survives_deep_nesting(tmp_path: Path, parallel: bool) -> None:
    """`argo-doctor scan DIR -o json` in a child with 4 GiB of address space: exit 0 or 1, each deep file
    one input error, the good object read (a large JSON file pushes the load onto the worker pool). 500,000
    levels would take libyaml's scanner hours (it costs depth × tokens) if the document were read to its end."""
    hostile: dict[str, str | bytes] = {"flow.yaml": FLOW_30K, "block.yaml": BLOCK_30K,
                                       "wide.yaml": "[" * 500_000 + "]" * 500_000}
    if parallel:
        pad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pad"}, "data": {"pad": "p" * (16 << 20)}}
        hostile["pad.json"] = json.dumps(pad)
    root = _objects_dir(tmp_path, hostile)
    argo = Path(sys.executable).parent / "argo-doctor"
    run = subprocess.run([str(argo), "scan", str(root), "-o", "json"], capture_output=True, text=True, timeout=300,
                         preexec_fn=_limit_memory, check=False)
    assert run.returncode in (0, 1), run.stderr
    doc = json.loads(run.stdout)
    errors = {e["location"]: e["message"] for e in doc["errors"]}
    assert sorted(errors) == ["block.yaml:1", "flow.yaml:1", "wide.yaml:1"]
    assert all("nested more than 256 levels deep" in m for m in errors.values())
    assert doc["source"]["objects"] == (2 if parallel else 1)


def test_settings_files_get_the_same_guards(tmp_path: Path) -> None:
    cases: dict[str, str | bytes] = {
        "deep.yaml": "a: " + FLOW_30K,
        "bomb.yaml": f"big: &big \"{'x' * (1 << 20)}\"\ncopies: [" + ", ".join(["*big"] * 3000) + "]\n",
        "binary.yaml": b"a: 1\n\x00",
        "two.yaml": "a: 1\n---\nb: 2\n",
        "empty.yaml": "",
        "fine.yaml": "cluster: {name: prod}\n",
    }
    found = {}
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        problems: list[Problem] = []
        found[name] = (load_yaml_file(path, name, problems, tmp_path), [p.location for p in problems])
    assert found == {
        "deep.yaml": (None, ["deep.yaml:1"]),
        "bomb.yaml": (None, ["bomb.yaml"]),
        "binary.yaml": (None, ["binary.yaml:2"]),
        "two.yaml": (None, ["two.yaml:2"]),
        "empty.yaml": (None, []),
        "fine.yaml": ({"cluster": {"name": "prod"}}, []),
    }
    outside = tmp_path / "inside" / "link.yaml"
    outside.parent.mkdir()
    outside.symlink_to(tmp_path / "fine.yaml")
    problems = []
    assert load_yaml_file(outside, "link.yaml", problems, outside.parent) is None
    assert problems == [Problem("link.yaml", "a link to a file outside the input; skipped")]


def test_bundle_clock_and_chart_files_are_guarded(tmp_path: Path) -> None:
    root = tmp_path / "b"
    (root / "objects").mkdir(parents=True)
    (root / "objects" / "cm.yaml").write_text(CONFIGMAP.format(name="cm"))
    (root / "bundle.yaml").write_text("cluster: " + FLOW_30K + "\n")
    (root / "clock.yaml").write_text("- " * 30_000 + "x\n")
    snap = bundle.load([root], tmp_path)
    assert [o.name for o in snap.of_kind("ConfigMap")] == ["cm"]
    assert [p.location for p in snap.problems] == ["bundle.yaml:1"] and "cluster" not in snap.meta
    assert probe_samples(snap) == []
    assert [p.location for p in snap.problems[1:]] == ["clock.yaml:1", "clock.yaml"]

    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text("image:\n  tag: " + FLOW_30K + "\n")
    report = scan_chart(chart)
    assert report.name == "demo"
    assert [where for where, _ in report.problems] == ["values.yaml:2"]
