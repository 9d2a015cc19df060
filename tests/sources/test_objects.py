"""Object files: formats kubectl writes, and every kind of bad input."""

from __future__ import annotations

from pathlib import Path

from argo_doctor.model import Problem
from argo_doctor.sources.objects import load_object_file, read_documents, read_object_file

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: argocd\ndata:\n  k: v\n"


def _read(path: Path) -> tuple[list[tuple[str, str]], list[Problem]]:
    problems: list[Problem] = []
    objs = [(o.data["metadata"]["name"], o.location) for o in read_object_file(path, path.name, problems)]
    return objs, problems


def test_multi_document_yaml_with_a_broken_document_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "cms.yaml"
    broken = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n bad: indent\n"
    path.write_text(CONFIGMAP.format(name="a") + "---\n" + broken + "---\n" + CONFIGMAP.format(name="c"))
    objs, problems = _read(path)
    assert objs == [("a", "cms.yaml:1"), ("c", "cms.yaml:15")]
    assert len(problems) == 1
    assert problems[0].location == "cms.yaml:13"
    assert "invalid YAML" in problems[0].message


def test_kubectl_list_json_items_without_kind_inherit_it(tmp_path: Path) -> None:
    path = tmp_path / "pods.json"
    path.write_text('{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "p1"}}]}')
    problems: list[Problem] = []
    (obj,) = list(read_object_file(path, "pods.json", problems))
    assert obj.data["kind"] == "Pod" and obj.data["apiVersion"] == "v1"
    assert obj.location == "pods.json:1#items[0]"
    assert problems == []


def test_kind_list_yaml(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    items = "".join(
        f"- apiVersion: v1\n  kind: Service\n  metadata:\n    name: s{i}\n" for i in range(3)
    )
    path.write_text("apiVersion: v1\nkind: List\nitems:\n" + items)
    objs, problems = _read(path)
    assert [name for name, _ in objs] == ["s0", "s1", "s2"]
    assert problems == []


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    path = tmp_path / "bomb.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  " + "\n  ".join(lines) + "\n")
    objs, problems = _read(path)
    assert objs == []
    assert problems == [Problem("bomb.yaml:1", problems[0].message)]
    assert "alias bomb" in problems[0].message


def test_harmless_anchors_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: x}\ndata:\n  copy: '*m'\n")
    objs, problems = _read(path)
    assert objs == [("x", "anchors.yaml:1")] and problems == []


def test_truncated_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  "metadata": {\n    "name": "x"\n')
    objs, problems = _read(path)
    assert objs == []
    assert problems[0].location.startswith("broken.json:")
    assert int(problems[0].location.split(":")[1]) >= 5
    assert "invalid JSON" in problems[0].message


def test_empty_and_comment_only_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    comments = tmp_path / "comments.yaml"
    comments.write_text("# nothing here\n# at all\n")
    assert _read(empty) == ([], [Problem("empty.yaml:1", "empty file: no objects")])
    objs, problems = _read(comments)
    assert objs == [] and problems == [Problem("comments.yaml:1", "no Kubernetes objects in this file")]


def test_non_utf8_is_reported_and_the_object_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(CONFIGMAP.format(name="caf\xe9").encode("latin-1"))
    objs, problems = _read(path)
    assert objs == [("caf\ufffd", "latin1.yaml:1")]
    assert problems == [Problem("latin1.yaml:4", problems[0].message)]
    assert "UTF-8" in problems[0].message


def test_documents_that_are_not_objects(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text("- just\n- a list\n---\n42\n---\n" + CONFIGMAP.format(name="ok"))
    objs, problems = _read(path)
    assert objs == [("ok", "odd.yaml:6")]
    assert [p.location for p in problems] == ["odd.yaml:1", "odd.yaml:4"]


def test_binary_file_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "blob.yaml"
    path.write_bytes(b"apiVersion: v1\n\x00\x01\x02")
    objs, problems = _read(path)
    assert objs == [] and problems[0].location == "blob.yaml:2"


def test_list_items_point_at_their_own_lines(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: a\n"
        "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: b\n"
    )
    assert _read(path) == ([("a", "list.yaml:4"), ("b", "list.yaml:8")], [])


def test_flow_style_yaml_is_not_mistaken_for_json(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("{apiVersion: v1, kind: ConfigMap, metadata: {name: flow}}\n")
    assert _read(path) == ([("flow", "flow.yaml:1")], [])


def test_resync_when_the_error_is_reported_on_the_next_separator(tmp_path: Path) -> None:
    path = tmp_path / "unterminated.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: [x, y\n---\n"
                    + CONFIGMAP.format(name="after"))
    objs, problems = _read(path)
    assert objs == [("after", "unterminated.yaml:6")]
    assert len(problems) == 1 and "invalid YAML" in problems[0].message


def test_empty_kind_and_lists_without_a_list(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text("apiVersion: v1\nkind: ''\nmetadata: {name: x}\n---\napiVersion: v1\nkind: List\nitems: nope\n")
    objs, problems = _read(path)
    assert objs == []
    assert [p.location for p in problems] == ["odd.yaml:1", "odd.yaml:5"]
    assert "items is not a list" in problems[1].message


def test_objects_that_cannot_be_indexed_are_skipped_alone(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {yes: x, null: y}\n---\n"
        + CONFIGMAP.format(name="good")
    )
    load = load_object_file((path, "keys.yaml"))
    assert [o.head[2] for o in load.objects] == ["good"]
    assert [(p.location, p.message) for p in load.problems] == [
        ("keys.yaml:4", "invalid YAML: a null mapping key, which Kubernetes' YAML reader refuses")]


def test_deep_nesting_never_crashes(tmp_path: Path) -> None:
    deep_yaml = tmp_path / "deep.yaml"
    nested = "[" * 5000 + "]" * 5000
    deep_yaml.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata:\n  x: " + nested + "\n")
    deep_json = tmp_path / "deep.json"
    deep_json.write_text('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "x": '
                         + "[" * 5000 + "]" * 5000 + "}")
    for path in (deep_yaml, deep_json):
        load = load_object_file((path, path.name))
        assert load.objects == [] and len(load.problems) == 1, load.problems


def test_an_empty_list_is_no_problem(tmp_path: Path) -> None:
    """`kubectl get cm -o yaml` in a namespace without ConfigMaps writes an empty List: nothing to report."""
    path = tmp_path / "cms.yaml"
    path.write_text('apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: ""\n')
    assert _read(path) == ([], [])


def test_a_dump_list_item_type_fills_only_what_items_leave_out(tmp_path: Path) -> None:
    path = tmp_path / "services.json"
    path.write_text('{"metadata": {}, "Items": [{"metadata": {"name": "a"}},'
                    ' {"kind": "Service", "metadata": {"name": "b"}},'
                    ' {"kind": "Endpoints", "apiVersion": "v1", "metadata": {"name": "c"}}]}')
    problems: list[Problem] = []
    found = [(o.data["apiVersion"], o.data["kind"], o.data["metadata"]["name"], o.location)
             for o in read_object_file(path, "services.json", problems, ("v1", "Service"))]
    assert found == [("v1", "Service", "a", "services.json:1#items[0]"),
                     ("v1", "Service", "b", "services.json:1#items[1]"),
                     ("v1", "Endpoints", "c", "services.json:1#items[2]")]
    assert problems == []
    assert list(read_object_file(path, "services.json", problems)) == []  # without the dump's file name: not guessed
    assert problems == [Problem("services.json:1", "not a Kubernetes object (no apiVersion and kind); skipped")]


def test_a_document_yaml_rs_refuses_reads_as_itself_and_adds_no_empty_one(tmp_path: Path) -> None:
    """The fallback to PyYAML reads the refused document with the next one's `---` (so an error there reads as in
    the whole file): the empty document that marker opens is not a document of the file."""
    path = tmp_path / "two.yaml"
    path.write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\ndata:\n  x: <redacted>\n---\n"
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n")
    problems: list[Problem] = []
    docs = [doc for _, doc in read_documents(path, "two.yaml", problems, tmp_path)]
    assert [d["metadata"]["name"] for d in docs] == ["a", "b"] and problems == []
