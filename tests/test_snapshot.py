"""The Snapshot's indexes and helpers, on the example installation."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Ref
from argo_doctor.snapshot import (
    DECODED_KEPT,
    DICTIONARY_MIN_OBJECTS,
    Obj,
    Snapshot,
    image_version,
    pack,
    pack_file,
    unpacker,
)
from argo_doctor.sources import bundle
from argo_doctor.sources.objects import LoadedObject, RawObject, object_head
from tests.conftest import BUNDLES, EXAMPLES

DUPLICATES = BUNDLES / "duplicate-objects"


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return bundle.load([EXAMPLES / "argocd-basic"], None)


def test_components_and_versions(snap: Snapshot) -> None:
    found = {c.name: c for c in snap.components}
    assert {"application-controller", "repo-server", "server", "applicationset-controller",
            "notifications-controller", "dex-server", "redis"} <= set(found)
    repo = found["repo-server"]
    assert repo.version == "v2.10.9" and repo.workload is not None and repo.workload.kind == "Deployment"
    assert len(repo.pods) == 2 and len({snap.node_of(p).name for p in repo.pods}) == 2  # type: ignore[union-attr]
    controller = found["application-controller"]
    assert controller.workload is not None and controller.workload.kind == "StatefulSet"
    assert [p.name for p in controller.pods] == ["argocd-application-controller-0"]
    assert found["redis"].version == "7.0.15-alpine"
    assert snap.component_of_pod("argocd", "argocd-application-controller-0") == "application-controller"


def test_ownership_chain(snap: Snapshot) -> None:
    deployment = snap.get("Deployment", "payments-api", "payments", "apps")
    assert deployment is not None
    pods = snap.pods_of(deployment)
    assert "payments-api-7c9d8f6b5d-cpbcd" in {p.name for p in pods} and len(pods) == 4
    pod = next(p for p in pods if p.name == "payments-api-7c9d8f6b5d-cpbcd")
    assert snap.owner(pod).kind == "ReplicaSet"  # type: ignore[union-attr]
    assert snap.workload_of(pod) is deployment
    assert snap.node_of(pod).name == "worker-2"  # type: ignore[union-attr]
    job = snap.get("Job", "ledger-export-20261120", "batch", "batch")
    assert job is not None and [p.name for p in snap.pods_of(job)] == ["ledger-export-20261120-dlkw7"]


def test_application_resources_and_tracking(snap: Snapshot) -> None:
    app = snap.get("Application", "guestbook", "argocd", "argoproj.io")
    assert app is not None
    listed = {(entry["kind"], entry["name"]): live for entry, live in snap.app_resources(app)}
    assert set(listed) == {("Deployment", "guestbook-ui"), ("Service", "guestbook-ui")}
    assert all(live is not None for live in listed.values())
    tracked = {(o.kind, o.name) for o in snap.tracked_by(app)}
    assert {("Deployment", "guestbook-ui"), ("Service", "guestbook-ui")} <= tracked


def test_settings(snap: Snapshot) -> None:
    settings = snap.settings
    assert settings.namespace == "argocd" and settings.cm["timeout.reconciliation"] == "180s"
    assert "p, role:" in settings.rbac.get("policy.csv", "")
    assert any(k.startswith("trigger.") for k in settings.notifications)
    assert settings.instance_label_key == "app.kubernetes.io/instance"


def test_events_from_both_apis_in_utc_order(snap: Snapshot) -> None:
    events = snap.events
    times = [e.time for e in events if e.time is not None]
    assert times == sorted(times) and all(t.tzinfo is UTC for t in times)
    modern = [e for e in events if e.obj.api_version == "events.k8s.io/v1"]
    assert modern and modern[0].involved is not None and modern[0].involved.kind == "Pod"
    assert modern[0].message.startswith("Successfully assigned")
    backoff = [e for e in events if e.reason == "BackOff"]
    assert backoff and backoff[0].count > 1 and backoff[0].source_host


def test_audit_is_streamed(snap: Snapshot) -> None:
    stream = snap.audit()
    first = next(stream)
    assert first.verb == "patch" and first.user_agent and first.location.endswith("kube-apiserver-audit.log:1")
    assert first.received is not None and first.received.tzinfo is UTC
    assert 1 + sum(1 for _ in stream) == 13


def test_secrets_are_redacted_in_the_index(snap: Snapshot) -> None:
    secret = snap.get("Secret", "argocd-secret", "argocd", "")
    assert secret is not None
    assert all(str(v).startswith("<redacted sha256:") for v in secret.raw["data"].values())


def test_reference_time_and_objects_added_in_process(tmp_path: Path) -> None:
    snap = Snapshot("test", {"collectedAt": "2026-11-20T16:30:00+02:00"})
    assert snap.reference_time == datetime(2026, 11, 20, 14, 30, tzinfo=UTC)
    snap.add(RawObject({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                        "stringData": {"token": "abcdefgh-1234"}}, "x.yaml:1"))
    assert snap.scrubber.scrub("the token is abcdefgh-1234") == "the token is <redacted secret value>"


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("quay.io/argoproj/argocd:v2.10.9", "v2.10.9"),
        ("registry:5000/argoproj/argocd", None),
        ("quay.io/argoproj/argocd:v3.0.1@sha256:abc", "v3.0.1"),
        ("redis", None),
    ],
)
def test_image_version(image: str, version: str | None) -> None:
    assert image_version(image) == version


def test_two_kubectl_collections_keep_the_newer_copy_of_each_object() -> None:
    """`argocd-namespace.yaml` is read first but is the later collection: its copies win, each duplicate is noted
    at the copy left out, naming the copy kept, and the indexes hold one object per key."""
    snap = bundle.load([DUPLICATES], None)
    kept = {(o.kind, o.name): o.location for o in snap.all()}
    assert kept == {
        ("Deployment", "argocd-repo-server"): "objects/argocd-namespace.yaml:3",
        ("Pod", "argocd-application-controller-0"): "objects/argocd-namespace.yaml:50",
        ("Application", "guestbook"): "objects/argocd-namespace.yaml:92",
        ("Application", "billing"): "objects/whole-cluster.yaml:135",
    }
    assert len(snap) == 4 and len(snap.of_kind("Application")) == 2 and len(snap.of_kind("Pod")) == 1
    assert [o.location for o in snap.of_kind("Deployment", "apps")] == ["objects/argocd-namespace.yaml:3"]
    assert snap.get("Pod", "argocd-application-controller-0", "argocd", "").uid.startswith("c3e9a7d2")  # type: ignore[union-attr]
    (note,) = snap.problems
    assert [d.note for d in snap.duplicates] == [note] * 3 and note.kind == "note"
    assert [(d.dropped.location, d.identical) for d in snap.duplicates] == [
        ("objects/whole-cluster.yaml:3", False), ("objects/whole-cluster.yaml:50", False),
        ("objects/whole-cluster.yaml:99", False)]
    assert (note.location, note.message) == ("objects/whole-cluster.yaml", (
        "3 objects of objects/argocd-namespace.yaml are also in objects/whole-cluster.yaml: the newer copy of each is "
        "used (in objects/argocd-namespace.yaml for all 3); e.g. Deployment argocd/argocd-repo-server "
        "(objects/argocd-namespace.yaml:3 holds a newer version of it (resourceVersion 48790, this one 41203)); "
        "Pod argocd/argocd-application-controller-0 (objects/argocd-namespace.yaml:50 holds another incarnation of it "
        "(uid c3e9a7d2-5f41-4d08-8b6e-7a2f19d0e4b6, created later, at 2026-11-20T13:02:41Z): the object was deleted "
        "and created again); Application argocd/guestbook (objects/argocd-namespace.yaml:92 holds a newer version of "
        "it (resourceVersion 48811, this one 41250))"))


def _collection(path: Path, versions: Sequence[int], names: range) -> None:
    """A `kubectl get configmaps -o yaml` List of ConfigMaps `cm-N`, each at resourceVersion `versions[N]`."""
    items = "".join(f"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-{n}\n    namespace: shop\n"
                    f"    resourceVersion: \"{versions[n]}\"\n  data:\n    key: v{versions[n]}\n" for n in names)
    path.write_text(f"apiVersion: v1\nkind: List\nitems:\n{items}")


def test_two_collections_of_300_objects_are_one_note_per_pair_of_inputs(tmp_path: Path) -> None:
    """Two `kubectl get -o yaml` collections of 300 ConfigMaps: one note for the pair, counting which copy is used
    and the identical ones, with a few examples; health still finds every copy in `duplicates`."""
    _collection(tmp_path / "monday.yaml", range(1000, 1300), range(300))
    later = [1000 + n if n < 200 else 2000 + n for n in range(300)]  # 200 unchanged, 97 newer, 3 older
    later[297:] = [1, 2, 3]
    _collection(tmp_path / "tuesday.yaml", later, range(300))
    monday, tuesday = tmp_path / "monday.yaml", tmp_path / "tuesday.yaml"
    snap = bundle.load([monday, tuesday], None)
    assert len(snap) == 300 and len(snap.duplicates) == 300
    (note,) = snap.problems
    assert note.location == str(tuesday) and note.kind == "note"
    assert note.message.startswith(
        f"300 objects of {monday} are also in {tuesday} (200 of them identical): the newer copy of each is used (in "
        f"{tuesday} for 297, in {monday} for 3); e.g. ConfigMap shop/cm-200 ({tuesday}:")
    assert note.message.count("ConfigMap shop/") == 3 and "holds a newer version of it (resourceVersion 2200, this " \
        "one 1200)" in note.message


def test_copies_packed_against_two_dictionaries_are_compared_by_their_json(tmp_path: Path) -> None:
    """Each file's bodies are compressed against its own first body: an identical copy in another file (another
    dictionary) is still told identical, a changed one changed."""
    count = DICTIONARY_MIN_OBJECTS + 36
    _collection(tmp_path / "a.yaml", range(100, 100 + count), range(count))
    later = list(range(100, 100 + count))
    later[0], later[5] = 7000, 7005  # the first object (the dictionary) and one more differ
    _collection(tmp_path / "b.yaml", later, range(count))
    snap = bundle.load([tmp_path / "a.yaml", tmp_path / "b.yaml"], None)
    unpackers = {o._unpack for o in snap.all()} | {d.dropped._unpack for d in snap.duplicates}
    assert len(unpackers) == 2 and unpacker(b"") not in unpackers  # one per file, neither the plain one
    assert sorted(d.dropped.name for d in snap.duplicates if not d.identical) == ["cm-0", "cm-5"]
    assert sum(d.identical for d in snap.duplicates) == count - 2


def test_a_file_of_many_objects_is_packed_against_its_first() -> None:
    """Pods of one list compress to a fraction of their size alone against the first one's JSON, and read back
    the same; a file of few objects is packed alone."""
    raws = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{i}", "namespace": "shop", "uid": f"u-{i}",
                                                              "labels": {"app": "web"}},
             "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                                      "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}],
                      "nodeName": f"node-{i % 3}"},
             "status": {"phase": "Running", "podIP": f"10.0.0.{i}"}} for i in range(DICTIONARY_MIN_OBJECTS)]
    loaded = [LoadedObject(f"pods.yaml:{i}", object_head(r), msgspec.json.encode(r)) for i, r in enumerate(raws)]
    packed, dictionary = pack_file(loaded)
    assert dictionary == loaded[0].body
    assert sum(len(p.body) for p in packed) * 3 < sum(len(pack(x).body) for x in loaded)
    snap = Snapshot("test")
    unpack = unpacker(dictionary)
    for p in packed:
        snap.add_loaded(p, unpack)
    assert [o.raw for o in snap.all()] == raws and snap.all().__iter__().__next__().at("status", "phase") == "Running"
    assert pack_file(loaded[:-1])[1] == b""


def test_a_scan_of_two_collections_judges_the_newer_one(tmp_path: Path) -> None:
    """The older collection alone shows guestbook Degraded; with the newer one beside it, guestbook is Healthy and
    the Argo CD version found is the newer one's."""
    older = tmp_path / "older"
    (older / "objects").mkdir(parents=True)
    (older / "objects" / "whole-cluster.yaml").write_bytes((DUPLICATES / "objects" / "whole-cluster.yaml").read_bytes())
    alone = run_scan(bundle.load([older], None), select_analyzers())
    assert "app-unhealthy" in {f.rule for f in alone.findings}
    both = run_scan(bundle.load([DUPLICATES], None), select_analyzers())
    assert "app-unhealthy" not in {f.rule for f in both.findings}
    bugs = [f for f in both.findings if f.rule == "component-known-bug"]
    assert bugs and all("v2.13.3" in f.title for f in bugs)


def _copy(name: str, location: str, uid: str = "", **meta: object) -> RawObject:
    return RawObject({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": name, "namespace": "argocd", **({"uid": uid} if uid else {}), **meta}},
                     location)


def _kept(*copies: RawObject) -> tuple[str, str]:
    """The location of the copy indexed, and the note about the other."""
    snap = Snapshot("test")
    for copy in copies:
        snap.add(copy)
    (duplicate,) = snap.duplicates
    assert snap.problems == [duplicate.note] and len(snap.of_kind("ConfigMap")) == 1
    assert snap.get("ConfigMap", "cm", "argocd", "") is duplicate.kept
    return duplicate.kept.location, duplicate.note.message


def test_a_resource_version_that_is_not_an_integer_falls_back_to_the_newest_time() -> None:
    older = _copy("cm", "a.yaml:1", resourceVersion="41203",
                  managedFields=[{"manager": "kubectl", "time": "2026-11-20T09:00:00Z"}])
    newer = _copy("cm", "b.yaml:1", resourceVersion="opaque-7f",
                  managedFields=[{"manager": "kubectl", "time": "2026-11-20T08:00:00Z"},
                                 {"manager": "argocd-controller", "time": "2026-11-20T12:30:00Z"}])
    location, note = _kept(newer, older)
    assert location == "b.yaml:1"
    assert note.endswith("b.yaml:1 holds a newer version of it (last changed at 2026-11-20T12:30:00Z); that copy is "
                         "used, this one ignored")


def test_integer_resource_versions_win_over_times() -> None:
    high = _copy("cm", "a.yaml:1", resourceVersion="100", creationTimestamp="2026-11-20T08:00:00Z")
    low = _copy("cm", "b.yaml:1", resourceVersion="99", managedFields=[{"time": "2026-11-21T00:00:00Z"}])
    assert _kept(high, low)[0] == "a.yaml:1"


def test_status_condition_times_count() -> None:
    stale = RawObject({**_copy("cm", "a.yaml:1").data, "status": {"conditions": [
        {"type": "Ready", "lastTransitionTime": "2026-11-20T09:00:00Z"}]}}, "a.yaml:1")
    fresh = RawObject({**_copy("cm", "b.yaml:1").data, "status": {"conditions": [
        {"type": "Ready", "lastTransitionTime": "2026-11-20T10:00:00Z"}]}}, "b.yaml:1")
    assert _kept(fresh, stale)[0] == "b.yaml:1"


def test_without_anything_to_compare_the_copy_read_last_wins() -> None:
    location, note = _kept(_copy("cm", "a.yaml:1"), _copy("cm", "b.yaml:1"))
    assert location == "b.yaml:1" and "neither copy says which version is newer" in note
    location, note = _kept(_copy("cm", "a.yaml:1", resourceVersion="7"), _copy("cm", "b.yaml:1", resourceVersion="7"))
    assert location == "b.yaml:1" and "the same version of it (resourceVersion 7)" in note


def test_another_uid_is_another_incarnation_kept_by_creation_time() -> None:
    recreated = _copy("cm", "a.yaml:1", uid="u-2", resourceVersion="5", creationTimestamp="2026-11-20T10:00:00Z")
    deleted = _copy("cm", "b.yaml:1", uid="u-1", resourceVersion="900", creationTimestamp="2026-11-01T10:00:00Z")
    location, note = _kept(recreated, deleted)
    assert location == "a.yaml:1", "resourceVersions of two incarnations say nothing about which is newer"
    assert "another incarnation of it (uid u-2, created later, at 2026-11-20T10:00:00Z)" in note
    location, note = _kept(_copy("cm", "a.yaml:1", uid="u-1"), _copy("cm", "b.yaml:1", uid="u-2"))
    assert location == "b.yaml:1" and "neither copy says which was created last" in note


def test_the_same_object_twice_in_one_file_is_one_object(tmp_path: Path) -> None:
    doc = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: argocd\n  resourceVersion: \"{rv}\"\n"
           "data:\n  key: {value}\n")
    (tmp_path / "cms.yaml").write_text(doc.format(rv=12, value="new") + "---\n" + doc.format(rv=11, value="old"))
    snap = bundle.load([tmp_path / "cms.yaml"], None)
    (cm,) = snap.of_kind("ConfigMap")
    assert cm.raw["data"] == {"key": "new"}
    assert [(p.location, p.message.split(":")[0]) for p in snap.problems] == [
        (f"{tmp_path / 'cms.yaml'}:10", "ConfigMap argocd/cm is read more than once")]


def test_objects_without_a_name_are_not_called_copies() -> None:
    snap = Snapshot("test")
    for location in ("repo/job-a.yaml:1", "repo/job-b.yaml:1"):
        snap.add(RawObject({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"namespace": "shop"}}, location))
    assert [(p.location, p.message) for p in snap.problems] == [(
        "repo/job-a.yaml:1", "a Job without metadata.name in namespace shop, as is repo/job-b.yaml:1: objects are told "
                             "apart by name, so only that one is used")]


def test_objects_with_only_generate_name_are_each_an_object() -> None:
    """As argo-workflows' examples are submitted (`kubectl create`): the API server names each one."""
    snap = Snapshot("test")
    for location in ("examples/hello-world.yaml:1", "examples/steps.yaml:1", "examples/dag.yaml:1"):
        snap.add(RawObject({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                            "metadata": {"generateName": "hello-world-", "namespace": "argo"}}, location))
    assert snap.problems == []
    assert [(w.name, w.location) for w in snap.of_kind("Workflow", "argoproj.io")] == [
        ("hello-world-", "examples/hello-world.yaml:1"), ("hello-world-", "examples/steps.yaml:1"),
        ("hello-world-", "examples/dag.yaml:1")]
    snap.add(RawObject({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                        "metadata": {"generateName": "hello-world-", "namespace": "argo"}}, "examples/steps.yaml:1"))
    assert len(snap.of_kind("Workflow", "argoproj.io")) == 3  # one place read twice: the same manifest
    assert [p.message.split(":")[0] for p in snap.problems] == ["Workflow argo/hello-world- is read more than once"]


def test_a_resource_version_too_long_for_an_integer_is_not_compared() -> None:
    huge = _copy("cm", "a.yaml:1", resourceVersion="9" * 5000, creationTimestamp="2026-11-20T10:00:00Z")
    other = _copy("cm", "b.yaml:1", resourceVersion="12", creationTimestamp="2026-11-20T09:00:00Z")
    assert _kept(huge, other)[0] == "a.yaml:1"  # by time, as when either is not an integer


def test_a_packed_object_reads_the_same_and_shares_its_strings() -> None:
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"},
                                                          "ownerReferences": [{"kind": "ReplicaSet", "name": "r",
                                                                               "controller": True}]}}
    loaded = LoadedObject("pods.yaml:1", object_head(raw), msgspec.json.encode(raw))
    packed = pack(loaded)
    assert packed.head == loaded.head and zstandard.ZstdDecompressor().decompress(packed.body) == loaded.body
    assert packed.head[1] is sys.intern("Pod") and packed.head[6][0]["kind"] is sys.intern("ReplicaSet")
    snap = Snapshot("test")
    snap.add_loaded(packed)
    obj = snap.get("Pod", "p", "ns", "")
    assert obj is not None and obj.raw == raw and obj.labels == {"app": "x"}


def test_pods_of_one_replicaset_share_their_labels_and_owners() -> None:
    """What pods of one ReplicaSet hold alike is kept once; an owner whose `controller` is 1, not true, keeps its
    own (they compare equal in Python)."""
    def pod(name: str, controller: object) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "shop", "labels": {"app": "web", "pod-template-hash": "5d4f"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4f",
                                 "controller": controller}]}}

    heads = [pack(LoadedObject(f"pods.yaml:{i}", object_head(raw), msgspec.json.encode(raw))).head
             for i, raw in enumerate([pod("a", True), pod("b", True), pod("c", 1)])]
    assert heads[0][5] is heads[1][5] is heads[2][5] and heads[0][6] is heads[1][6]
    assert heads[2][6] is not heads[0][6] and heads[2][6][0]["controller"] is not True


def _packed(raw: dict[str, Any]) -> Obj:
    loaded = pack(LoadedObject("x.yaml:1", object_head(raw), msgspec.json.encode(raw)))
    return Obj(loaded.head, loaded.location, body=loaded.body)


_KEY_NAMES = st.sampled_from(["a", "b", "c", "class", "app.kubernetes.io/name", "", "__module__", "__post_init__"])
"""Keys of any kind: a keyword, a label key, empty, dunder names (no struct field can be named after the last ones)."""


def _walked(raw: Any, path: Sequence[str]) -> Any:
    for name in path:
        raw = (raw if isinstance(raw, dict) else {}).get(name)
    return raw


_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                       lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_KEY_NAMES, inner, max_size=3),
                       max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEY_NAMES, _VALUES, max_size=3), st.lists(_KEY_NAMES, min_size=1, max_size=3))
def test_a_value_at_a_path_reads_as_through_raw(fields: dict[str, Any], path: list[str]) -> None:
    """`at` gives what gets through `mapping` from `raw` give, whatever is (not) on the way, without keeping the
    decoded body unless a key cannot name a struct field; from `raw` when it is decoded."""
    raw = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, **fields}
    obj = _packed(raw)
    assert obj.at(*path) == _walked(raw, path)
    assert (obj._raw is None) == all(name.isidentifier() and not name.startswith("__") for name in path)
    assert obj.raw == raw and obj.at(*path) == _walked(raw, path)


def test_a_value_at_a_path_reads_only_that_value(monkeypatch: pytest.MonkeyPatch) -> None:
    obj = _packed({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "a"},
                   "spec": {"source": {"path": "charts/a"}}, "status": {"health": {"status": "Degraded"},
                                                                        "history": [{"id": 1}], "sync": "x"}})
    monkeypatch.setattr(msgspec.json, "decode", None)  # the whole body is never decoded
    assert obj.at("status", "health", "status") == "Degraded"
    assert obj.at("status", "sync", "status") is None and obj.at("status", "sync") == "x"
    assert obj.at("spec") == {"source": {"path": "charts/a"}} and obj.at("nothing", "here") is None


def test_only_the_last_objects_decoded_stay_decoded() -> None:
    snap = Snapshot("test")
    for i in range(DECODED_KEPT + 1):
        raw = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}
        snap.add_loaded(pack(LoadedObject(f"cms.yaml:{i}", object_head(raw), msgspec.json.encode(raw))))
    objs = list(snap.all())
    assert [o.raw["data"]["i"] for o in objs] == [str(i) for i in range(DECODED_KEPT + 1)]
    assert objs[0]._raw is None and objs[-1]._raw is not None  # the first was dropped when the last was decoded
    assert objs[0].raw["data"] == {"i": "0"}  # and decodes again


def test_a_component_is_found_by_its_template_labels_whatever_their_values(snap: Snapshot) -> None:
    def workload(labels: dict[str, Any], name: str = "web") -> Obj:
        return Obj.from_raw({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                             "spec": {"template": {"metadata": {"labels": labels}}}}, "d.yaml:1")

    assert snap.component_name(workload({"app.kubernetes.io/name": "argocd-repo-server"})) == "repo-server"
    assert snap.component_name(workload({"app": ["argocd-repo-server"], "controller": {"x": 1}})) is None
    assert snap.component_name(workload({}, "argocd-repo-server-5d9")) == "repo-server"
    assert snap.component_of_pod("elsewhere", "argocd-repo-server-5d9-abc") == "repo-server"
    assert snap.component_of_pod("elsewhere", "web-1") is None


def _event(name: str, kind: str, about: str, namespace: str, when: str, kind_of_event: str = "Warning") -> RawObject:
    return RawObject({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
                      "type": kind_of_event, "reason": "R", "message": name, "lastTimestamp": when,
                      "involvedObject": {"kind": kind, "name": about, "namespace": namespace}}, f"events.yaml#{name}")


def test_events_about_an_object_in_any_namespace_oldest_first() -> None:
    snap = Snapshot("test")
    for raw in (_event("late", "Rollout", "api", "a", "2026-11-20T10:05:00Z"),
                _event("other-ns", "Rollout", "api", "b", "2026-11-20T10:03:00Z"),
                _event("early", "Rollout", "api", "a", "2026-11-20T10:01:00Z", "Normal"),
                _event("other-kind", "Deployment", "api", "a", "2026-11-20T10:02:00Z"),
                _event("other-name", "Rollout", "web", "a", "2026-11-20T10:04:00Z")):
        snap.add(raw)
    assert [e.message for e in snap.events_about("Rollout", "api")] == ["early", "other-ns", "late"]
    assert snap.events_about("Application", "api") == []


def test_warnings_about_objects_are_those_of_their_kind_namespace_and_name_oldest_first() -> None:
    snap = Snapshot("test")
    for raw in (_event("late", "Rollout", "api", "a", "2026-11-20T10:05:00Z"),
                _event("pod", "Pod", "api-1", "a", "2026-11-20T10:00:30Z"),
                _event("other-ns", "Rollout", "api", "b", "2026-11-20T10:03:00Z"),
                _event("normal", "Rollout", "api", "a", "2026-11-20T10:01:00Z", "Normal"),
                _event("other-kind", "Deployment", "api", "a", "2026-11-20T10:02:00Z"),
                _event("other-name", "Rollout", "web", "a", "2026-11-20T10:04:00Z"),
                _event("between", "Pod", "api-1", "a", "2026-11-20T10:04:30Z")):
        snap.add(raw)
    rollout, pod = Ref("argoproj.io/v1alpha1", "Rollout", "a", "api"), Ref("v1", "Pod", "a", "api-1")
    assert [e.message for e in snap.warnings_about([rollout, pod, rollout])] == ["pod", "between", "late"]
    assert [e.message for e in snap.warnings_about([Ref("v1", "Rollout", "b", "api")])] == ["other-ns"]
    assert snap.warnings_about([Ref("v1", "Rollout", "c", "api")]) == snap.warnings_about([]) == []
