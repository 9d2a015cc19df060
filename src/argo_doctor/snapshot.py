"""The Snapshot: the one thing analyzers see. Indexed objects, ownership, Argo CD settings,
components, events, and lazily streamed logs, audit records and metrics. Times are aware UTC."""

from __future__ import annotations

import gc
import re
import sys
from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, cached_property
from pathlib import Path
from typing import Any, cast

import msgspec
import zstandard

from argo_doctor.knowledge.components import (
    Recognised,
    by_containers,
    by_labels,
    by_name,
    is_hook,
    releases,
    serves,
)
from argo_doctor.model import Problem, Ref
from argo_doctor.sources.audit import AuditEvent, AuditFile, read_audit_file
from argo_doctor.sources.charts import ChartFiles, find_charts, read_chart
from argo_doctor.sources.files import open_input
from argo_doctor.sources.logs import LogFile, LogRecord, parse_line
from argo_doctor.sources.metrics import MetricsFile, Sample, read_metrics_file
from argo_doctor.sources.objects import (
    Container,
    LoadedObject,
    ObjectHead,
    RawObject,
    as_int,
    as_list,
    load_yaml_file,
    mapping,
    object_head,
    split_api_version,
)
from argo_doctor.sources.redact import SecretScrubber, redact_object, secret_values
from argo_doctor.timeutil import format_time, parse_time

ARGOCD_GROUP = "argoproj.io"
TAIL_BYTES = 64 << 10


@contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """No cyclic garbage collection inside, the setting restored after: for work that allocates objects by the
    hundred thousand, none of them in a cycle (a snapshot's objects, the records of the log and audit passes, pages
    of a live listing), where every full collection would walk all that lives again for nothing. `freeze`: what
    lives when the block ends without an exception is left out of later collections (`gc.freeze`), for a command
    about to end, where the first collection would otherwise walk all that the block made (0.1 s after a scan of the
    bench bundle); not after an exception, whose traceback may hold it all in a cycle that only a collection frees
    (a caller in the same process, such as the tests, would keep it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()


DECODED_KEPT = 32
"""How many objects keep their decoded body (`Obj.raw`) at once: an analyzer reads an object several times in a
row, then moves on; 2,000 Applications kept decoded would hold ~50 MB. Few, as a body dropped soon after it was
decoded is freed while still in the CPU cache: with 256 a pass over the benchmark's 2,000 Applications (six
rules make one each) took twice as long, and the scan held 15 MB more."""
_DECODED: deque[Obj] = deque(maxlen=DECODED_KEPT)
"""The objects whose body is decoded, the oldest first: decoding one more drops the oldest's."""


class Obj:
    """A Kubernetes object with the place it was read from.

    The fields the indexes need are kept as attributes; the whole object is kept as compact
    JSON, zstd-compressed (`pack`; against its file's first body in a file of many, `pack_file`), and decoded on
    access to `raw`, the last `DECODED_KEPT` objects decoded kept so, so that a snapshot of a large cluster stays
    small.
    """

    __slots__ = (
        "_body", "_created", "_raw", "_unpack", "api_version", "containers", "group", "kind", "labels", "location",
        "name", "namespace", "node_name", "owners", "tracking_id", "uid",
    )

    def __init__(self, head: ObjectHead, location: str, body: bytes | None = None,
                 raw: dict[str, Any] | None = None, unpack: zstandard.ZstdDecompressor | None = None) -> None:
        self.location = location
        self._body = body
        self._raw = raw
        self._unpack = unpack or _DECOMPRESSOR
        (self.api_version, self.kind, self.name, self.namespace, self.uid, self.labels, self.owners,
         self.node_name, self.tracking_id, self._created, self.containers) = head
        self.group = split_api_version(self.api_version)[0]

    @classmethod
    def from_raw(cls, raw: dict[str, Any], location: str) -> Obj:
        """An Obj over a (redacted) object dict."""
        return cls(object_head(raw), location, raw=raw)

    @property
    def raw(self) -> dict[str, Any]:
        """The whole object (decoded on use; read it, do not change it: it may be decoded again later)."""
        if self._raw is None:
            self._raw = msgspec.json.decode(self._unpack.decompress(self._body) if self._body else b"{}")
            if len(_DECODED) == _DECODED.maxlen:
                _DECODED[0]._raw = None
            _DECODED.append(self)
        return self._raw

    def at(self, *path: str) -> Any:
        """The value at `path`, a field then keys inside it, as gets through `mapping` from `raw` give it (None where a
        step is missing or not a mapping): `app.at("status", "health")` is `app.status.get("health")`. When the body
        is not decoded, only that value is, and not kept: for a pass over many objects that reads one thing of each
        (the benchmark's 2,000 Applications decode in 50–63 ms whole, their `status.health` alone in 16 ms)."""
        decoder = _path_decoder(path) if self._raw is None and self._body else None
        if decoder is not None:
            try:
                found: Any = decoder.decode(self._unpack.decompress(self._body or b""))
            except msgspec.ValidationError:  # a step on the way is not a mapping (or is null)
                return None
            for name in path:
                if found is None:
                    return None
                found = getattr(found, name)
            return found
        found = self.raw
        for name in path:
            found = mapping(found).get(name)
        return found

    def same_body(self, other: Obj) -> bool:
        """Whether two objects hold exactly the same JSON: their compressed bodies compared when packed alike."""
        if self._body is None or other._body is None:
            return self.raw == other.raw
        if self._unpack is other._unpack:
            return self._body == other._body
        return self._unpack.decompress(self._body) == other._unpack.decompress(other._body)

    @property
    def meta(self) -> dict[str, Any]:
        """`metadata`, always a dict."""
        return mapping(self.raw.get("metadata"))

    @property
    def spec(self) -> dict[str, Any]:
        """`spec`, always a dict."""
        return mapping(self.raw.get("spec"))

    @property
    def status(self) -> dict[str, Any]:
        """`status`, always a dict."""
        return mapping(self.raw.get("status"))

    @property
    def annotations(self) -> dict[str, str]:
        """`metadata.annotations`, always a dict."""
        return mapping(self.meta.get("annotations"))

    @property
    def created(self) -> datetime | None:
        """`metadata.creationTimestamp`."""
        return parse_time(self._created)

    @property
    def ref(self) -> Ref:
        """A Ref to this object."""
        return Ref(self.api_version, self.kind, self.namespace, self.name)

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(group, kind, namespace, name): the index key."""
        return (self.group, self.kind, self.namespace, self.name)

    def owner_references(self) -> list[dict[str, Any]]:
        """`metadata.ownerReferences`, only well-formed entries."""
        return list(self.owners)

    def __repr__(self) -> str:
        return f"Obj({self.ref}, {self.location})"


@dataclass(frozen=True)
class Component:
    """A component of an Argo installation, as found in the cluster."""

    name: str
    product: str
    workload: Obj | None
    pods: tuple[Obj, ...]
    image: str | None
    version: str | None

    @property
    def namespace(self) -> str:
        """The namespace it runs in."""
        return self.workload.namespace if self.workload is not None else self.pods[0].namespace if self.pods else ""

    @property
    def labels(self) -> dict[str, str]:
        """Its workload's labels, else its first pod's."""
        return self.workload.labels if self.workload is not None else self.pods[0].labels if self.pods else {}


@dataclass(frozen=True)
class KEvent:
    """A Kubernetes Event (core/v1 or events.k8s.io/v1), normalised."""

    obj: Obj
    type: str
    reason: str
    message: str
    involved: Ref | None
    first: datetime | None
    last: datetime | None
    count: int
    created: datetime | None
    source_host: str | None
    reporter: str | None

    @property
    def time(self) -> datetime | None:
        """The best time for the event: last seen, else first, else creation."""
        return self.last or self.first or self.created


@dataclass
class ArgoSettings:
    """The Argo CD settings ConfigMaps, as plain string maps (empty when absent)."""

    cm: dict[str, str] = field(default_factory=dict)
    cmd_params: dict[str, str] = field(default_factory=dict)
    rbac: dict[str, str] = field(default_factory=dict)
    notifications: dict[str, str] = field(default_factory=dict)
    namespace: str | None = None

    @property
    def instance_label_key(self) -> str:
        """The label Argo CD tracks resources with (`application.instanceLabelKey`)."""
        return self.cm.get("application.instanceLabelKey") or "app.kubernetes.io/instance"


@dataclass(frozen=True)
class Duplicate:
    """An object read more than once (same group, kind, namespace and name): the copy the indexes hold, the copy
    left out, what the copy kept is next to the other (`newer_copy`), and the copies of the same two inputs it is
    summarised with in one note."""

    kept: Obj
    dropped: Obj
    why: str
    identical: bool
    """Whether both copies hold exactly the same object."""
    copies: Copies = field(compare=False, repr=False)

    @property
    def note(self) -> Problem:
        """The note among the snapshot's problems that tells of this duplicate (with the others of its inputs)."""
        return self.copies.note


PACK_LEVEL = 1
"""zstd level of the bodies kept: compact JSON of Kubernetes objects shrinks about 2.9 times at level 1 (as with zlib's
level 1), compressed twice and decompressed 1.5 times as fast as zlib does (lz4 is faster still but keeps 35% more)."""
_COMPRESSOR = zstandard.ZstdCompressor(level=PACK_LEVEL)
_DECOMPRESSOR = zstandard.ZstdDecompressor()
DICTIONARY_MIN_OBJECTS = 64
"""From this many objects, a file's bodies are compressed against its first (the objects of a list are alike: the
bench bundle's pods keep 0.5 KB instead of 1.8 KB each). Fewer would not pay for the dictionary's decompressor
(about 60 KB each)."""
DICTIONARY_BYTES = 32 << 10
"""At most this much of the first body is the dictionary."""


def pack_file(objects: list[LoadedObject]) -> tuple[list[LoadedObject], bytes]:
    """The objects of one file `pack`ed, and the dictionary their bodies are compressed against (b"" for none)."""
    if len(objects) < DICTIONARY_MIN_OBJECTS:
        return [pack(loaded) for loaded in objects], b""
    dictionary = objects[0].body[:DICTIONARY_BYTES]
    compressor = zstandard.ZstdCompressor(level=PACK_LEVEL, dict_data=_dictionary(dictionary))
    return [pack(loaded, compressor) for loaded in objects], dictionary


def unpacker(dictionary: bytes) -> zstandard.ZstdDecompressor:
    """The decompressor of the bodies `pack_file` compressed against `dictionary`."""
    return zstandard.ZstdDecompressor(dict_data=_dictionary(dictionary)) if dictionary else _DECOMPRESSOR


def _dictionary(content: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(content, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def pack(loaded: LoadedObject, compressor: zstandard.ZstdCompressor = _COMPRESSOR) -> LoadedObject:
    """`loaded` as `Snapshot.add_loaded` keeps it: the body zstd-compressed, the head's strings interned, and its
    labels, owners and containers one copy for all the objects that have the same (the pods of a ReplicaSet).
    Run where the object was parsed (a worker): what is shared is pickled once per file, and so shared by the
    objects of a file in this process too."""
    (api_version, kind, name, namespace, uid, labels, owners, node_name, tracking_id, created, containers) = loaded.head
    intern = sys.intern
    head: ObjectHead = (
        intern(api_version), intern(kind), name, intern(namespace), uid,
        _shared_labels(labels), _shared_owners(owners),
        intern(node_name), tracking_id, intern(created),
        _shared_containers(containers),
    )
    return LoadedObject(loaded.location, head, compressor.compress(loaded.body))


_SHARED: dict[tuple[Any, ...], Any] = {}
"""One copy of each distinct `containers`, labels and owners of a head, by what it holds (and pickled once per file);
at most SHARED_KEPT, then forgotten at once."""
SHARED_KEPT = 65536


def _shared(key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    shared = _SHARED.get(key)
    if shared is None:
        if len(_SHARED) >= SHARED_KEPT:
            _SHARED.clear()
        shared = _SHARED[key] = make()
    return shared


def _shared_containers(containers: tuple[Container, ...]) -> tuple[Container, ...]:
    if not containers:
        return ()
    intern = sys.intern
    return cast(tuple[Container, ...], _shared(("containers", containers), lambda: tuple(
        (intern(image), tuple(intern(p) for p in programs)) for image, programs in containers)))


def _shared_labels(labels: dict[str, str]) -> dict[str, str]:
    """The labels' one copy (read only, as every head is)."""
    intern = sys.intern
    return cast(dict[str, str], _shared(("labels", *labels.items()), lambda: {
        intern(k): intern(v) for k, v in labels.items()}))


def _shared_owners(owners: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """The ownerReferences' one copy; their own copy when a value is not hashable (not as the API writes them)."""
    if not owners:
        return ()

    def make() -> tuple[dict[str, Any], ...]:
        return tuple({_interned(k): _interned(v) for k, v in owner.items()} for owner in owners)

    try:
        key = ("owners", *(tuple((k, type(v), v) for k, v in owner.items()) for owner in owners))  # True is not 1
        hash(key)
    except TypeError:
        return make()
    return cast(tuple[dict[str, Any], ...], _shared(key, make))


@cache
def _path_decoder(path: tuple[str, ...]) -> msgspec.json.Decoder[Any] | None:
    """A decoder of an object's JSON body into nested structs holding only the value at `path` (Any), None where a
    step is missing; a step on the way that is not a JSON object fails it (msgspec.ValidationError). None for a path
    with a step no struct field can be named after (a label key, a dunder name): `Obj.at` reads `raw` then."""
    if not all(name.isidentifier() and not name.startswith("__") for name in path):
        return None
    step: Any = Any
    for depth in range(len(path), 0, -1):
        step = msgspec.defstruct(f"_At{depth}", [(path[depth - 1], step, None)])
    return msgspec.json.Decoder(step)


def _interned(value: Any) -> Any:
    return sys.intern(value) if type(value) is str else value


def _generated(obj: Obj) -> bool:
    """Whether an object has no `metadata.name` but a `generateName`: the API server names each one it creates."""
    meta = obj.meta
    return not meta.get("name") and bool(meta.get("generateName"))


def _object_name(obj: Obj) -> str:
    return f"{obj.kind} {obj.namespace}/{obj.name}" if obj.namespace else f"{obj.kind} {obj.name}"


class Copies:
    """The duplicates met between two inputs (or two files of one input, or inside one file), told in one note.

    `first` is where the copies indexed earlier were read, `second` where the copies met later were; `named` is
    False for objects without metadata.name (two objects that cannot be told apart, not copies)."""

    EXAMPLES = 3

    def __init__(self, first: str, second: str, named: bool) -> None:
        self.first, self.second, self.named = first, second, named
        self.duplicates: list[Duplicate] = []
        self.examples: tuple[list[Duplicate], list[Duplicate]] = ([], [])
        """A few duplicates whose copies differ, and a few identical ones."""
        self.kept_second = self.identical = 0
        self.note = Problem(second, "", "note")
        self.index = -1
        """Where the note is among the snapshot's problems."""

    def add(self, duplicate: Duplicate, second: bool) -> None:
        """Count `duplicate` (its copy met later is the one kept when `second`) and write the note again."""
        self.duplicates.append(duplicate)
        examples = self.examples[duplicate.identical]
        if len(examples) < self.EXAMPLES:
            examples.append(duplicate)
        self.kept_second += second
        self.identical += duplicate.identical
        self.note = self._note()

    def _note(self) -> Problem:
        first, *_ = self.duplicates
        if len(self.duplicates) == 1:  # one object: said as it is, where the copy left out is
            if not self.named:
                where = f" in namespace {first.dropped.namespace}" if first.dropped.namespace else ""
                return Problem(first.dropped.location, f"a {first.dropped.kind} without metadata.name{where}, as is "
                               f"{first.kept.location}: objects are told apart by name, so only that one is used",
                               "note")
            return Problem(first.dropped.location, f"{_object_name(first.dropped)} is read more than once: "
                           f"{first.kept.location} holds {first.why}; that copy is used, this one ignored", "note")
        count = len(self.duplicates)
        if not self.named:
            inputs = self.first if self.first == self.second else f"{self.first} and {self.second}"
            return Problem(self.second, f"{count} objects without metadata.name in {inputs}: objects are told apart "
                           "by name, so only one of each kind and namespace is used; e.g. " + "; ".join(
                               f"a {d.kept.kind} ({d.kept.location} is used)"
                               for d in self.duplicates[:self.EXAMPLES]), "note")
        if self.first == self.second:
            head = f"{count} objects are read more than once in {self.first}"
        else:
            head = f"{count} objects of {self.first} are also in {self.second}"
        if self.identical == count:
            return Problem(self.second, f"{head}, all identical: one copy of each is used", "note")
        used = [(where, n) for where, n in ((self.second, self.kept_second), (self.first, count - self.kept_second))
                if n]
        if self.first == self.second:
            which = ""
        elif len(used) == 1:
            which = f" (in {used[0][0]} for all {count})"
        else:
            which = " (" + ", ".join(f"in {where} for {n}" for where, n in used) + ")"
        same = f" ({self.identical} of them identical)" if self.identical else ""
        shown = [*self.examples[False], *self.examples[True]][:self.EXAMPLES]  # copies that differ first
        examples = "; ".join(f"{_object_name(d.kept)} ({d.kept.location} holds {d.why})" for d in shown)
        return Problem(self.second, f"{head}{same}: the newer copy of each is used{which}; e.g. {examples}", "note")


_LINE = re.compile(r"^(.*):\d+(#items\[\d+\])?$")


def location_file(location: str) -> str:
    """The file part of an object's location (`objects/cms.yaml:12` → `objects/cms.yaml`)."""
    match = _LINE.match(location)
    return match.group(1) if match else location


CONDITION_TIMES = ("lastTransitionTime", "lastUpdateTime", "lastHeartbeatTime", "lastProbeTime")


def last_change(obj: Obj) -> datetime | None:
    """The newest time an object states: its managedFields' times, its status conditions' times, its creation."""
    times = [obj.created]
    times += [parse_time(mapping(entry).get("time")) for entry in as_list(obj.meta.get("managedFields"))]
    for condition in as_list(obj.status.get("conditions")):
        times += [parse_time(mapping(condition).get(name)) for name in CONDITION_TIMES]
    return max((t for t in times if t is not None), default=None)


def _resource_version(obj: Obj) -> int | None:
    """`metadata.resourceVersion` when it is a decimal integer (of at most 40 digits: etcd's are 64-bit), else
    None."""
    value = obj.meta.get("resourceVersion")
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 40 else None


def newer_copy(earlier: Obj, later: Obj) -> tuple[Obj, str]:
    """Of two copies of one object (`later` read last), the one to keep, and what it is next to the other.

    Copies with different uids are two incarnations (the object was deleted and created again): the one created
    last is kept. Otherwise they are versions of one object: the higher resourceVersion when both are integers
    (Kubernetes documents resourceVersion as opaque, so comparing them is a heuristic that holds for the etcd
    revisions the API server hands out), else the newest time either states (`last_change`), else the copy read
    last."""
    if earlier.uid and later.uid and earlier.uid != later.uid:
        first, last = earlier.created, later.created
        if first is not None and last is not None and first != last:
            kept, created = (earlier, first) if first > last else (later, last)
            return kept, (f"another incarnation of it (uid {kept.uid}, created later, at {format_time(created)}): "
                          "the object was deleted and created again")
        return later, (f"another incarnation of it (uid {later.uid}), read later; neither copy says which was "
                       "created last")
    old, new = _resource_version(earlier), _resource_version(later)
    if old is not None and new is not None:
        if old != new:
            kept = earlier if old > new else later
            return kept, f"a newer version of it (resourceVersion {max(old, new)}, this one {min(old, new)})"
        return later, f"the same version of it (resourceVersion {old})"
    times = last_change(earlier), last_change(later)
    if times[0] is not None and times[1] is not None and times[0] != times[1]:
        kept, newest = (earlier, times[0]) if times[0] > times[1] else (later, times[1])
        return kept, f"a newer version of it (last changed at {format_time(newest)})"
    return later, "another copy of it, read later; neither copy says which version is newer"


SETTINGS_NAMES = {
    "argocd-cm": "cm",
    "argocd-cmd-params-cm": "cmd_params",
    "argocd-rbac-cm": "rbac",
    "argocd-notifications-cm": "notifications",
}


class Snapshot:
    """Everything known about one installation, indexed for the analyzers."""

    def __init__(self, source: str, meta: Mapping[str, Any] | None = None) -> None:
        self.source = source
        self.meta: dict[str, Any] = dict(meta or {})
        self.problems: list[Problem] = []
        self.log_files: list[LogFile] = []
        self.audit_files: list[AuditFile] = []
        self.metrics_files: list[MetricsFile] = []
        self.roots: list[Path] = []
        self.formats: list[str] = []
        self.unread: list[dict[str, str]] = []
        """What a live collection could not read (`bundle.yaml` `skipped`): what, request, reason, need, status.
        `need` is `kind:<Kind or group/Kind>`, `logs`, `events`, `metrics`, `node-proxy`, `version` or
        `group:<group>`."""
        self.scrubber = SecretScrubber()
        self.files_read: set[tuple[int, int]] = set()
        """(device, inode) of each file read (objects, logs, audit logs, metrics), so that a link to one, or a file
        given twice, is read once."""
        self.duplicates: list[Duplicate] = []
        """Objects read more than once, in the order met; the indexes hold only the copy kept."""
        self.input_of: dict[str, str] = {}
        """The input (the path given) each object file was read from, by the file's display name: duplicates
        between two inputs are told in one note per pair of inputs."""
        self._copies: dict[tuple[str, str, bool], Copies] = {}
        self._objects: dict[tuple[str, str, str, str], Obj] = {}
        self._by_kind: dict[tuple[str, str], dict[tuple[str, str, str, str], Obj]] = defaultdict(dict)
        """Objects by (group, kind), each bucket in reading order (a newer copy takes the place of the one it
        replaces)."""

    # -- building -------------------------------------------------------------------------
    def add(self, raw: RawObject) -> None:
        """Index one object read in this process (Secrets are redacted first)."""
        self.scrubber.add_values(secret_values(raw.data))
        self._index(Obj.from_raw(redact_object(raw.data), raw.location))

    def add_loaded(self, loaded: LoadedObject, unpack: zstandard.ZstdDecompressor | None = None) -> None:
        """Index one object loaded (and redacted) by `sources.objects.load_object_file`, then `pack`ed (`unpack`:
        its file's `unpacker`, when `pack_file` compressed it against a dictionary)."""
        self._index(Obj(loaded.head, loaded.location, body=loaded.body, unpack=unpack))

    def settle_secrets(self) -> None:
        """Once every object is read: the scrubber learns the names of the input (which a Secret value equal to one
        does not hide), and a note says which Secret values are left in texts (never the values)."""
        names: set[str] = set()
        for obj in self.all():
            names.add(obj.name)
            names.add(obj.namespace)
            names.update(obj.labels)
            names.update(obj.labels.values())
        names.discard("")
        self.scrubber.add_names(names)
        note = self.scrubber.note()
        if note is not None:
            namespace, _, name = self.scrubber.not_hidden()[0][0].rpartition("/")
            secret = self.get("Secret", name, namespace, "")
            self.problems.append(Problem(secret.location if secret is not None else "Secrets", note, "note"))

    def add_metrics_file(self, path: Path, display: str, root: Path | None = None) -> None:
        """Register a Prometheus text file (`metrics/*.prom`) of the input inside `root`; `metrics()` reads it."""
        self.metrics_files.append(MetricsFile(path, display, root))

    def _index(self, obj: Obj) -> None:
        """Index `obj`; an object already indexed under its key is a duplicate: the newer copy stays (`newer_copy`),
        and one note among `problems` tells of all the duplicates of the same two inputs (`Copies`)."""
        key = obj.key
        previous = self._objects.get(key)
        if previous is not None and previous.location != obj.location and _generated(obj):
            key = (*key[:3], f"{obj.name}\0{obj.location}")  # kubectl create makes each manifest an object of its own
            previous = self._objects.get(key)
        if previous is not None:
            kept, why = newer_copy(previous, obj)
            identical = previous.same_body(obj)
            copies = self._copies_of(previous, obj)
            replaced = copies.note
            copies.add(duplicate := Duplicate(kept, previous if kept is obj else obj, why, identical, copies),
                       kept is obj)
            self.duplicates.append(duplicate)
            if 0 <= copies.index < len(self.problems) and self.problems[copies.index] is replaced:
                self.problems[copies.index] = copies.note
            else:  # the problems were rearranged since
                copies.index = len(self.problems)
                self.problems.append(copies.note)
            if kept is previous:
                return
        self._objects[key] = self._by_kind[(obj.group, obj.kind)][key] = obj

    def _copies_of(self, earlier: Obj, later: Obj) -> Copies:
        """The Copies of the inputs two copies were read from: the inputs given when they differ (`input_of`),
        else the files."""
        first, second = location_file(earlier.location), location_file(later.location)
        inputs = self.input_of.get(first), self.input_of.get(second)
        if inputs[0] is not None and inputs[1] is not None and inputs[0] != inputs[1]:
            first, second = inputs[0], inputs[1]
        named = bool(later.name)
        copies = self._copies.get((first, second, named))
        if copies is None:
            copies = self._copies[(first, second, named)] = Copies(first, second, named)
            copies.index = len(self.problems)
            self.problems.append(copies.note)
        return copies

    # -- lookup ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._objects)

    def all(self) -> Iterable[Obj]:
        """Every object."""
        return self._objects.values()

    def get(self, kind: str, name: str, namespace: str = "", group: str | None = None) -> Obj | None:
        """One object by kind and name; `group` None matches any group."""
        if group is not None:
            return self._objects.get((group, kind, namespace, name))
        for (g, k), _ in self._by_kind.items():
            if k == kind:
                found = self._objects.get((g, k, namespace, name))
                if found is not None:
                    return found
        return None

    def of_kind(self, kind: str, group: str | None = None, namespace: str | None = None) -> list[Obj]:
        """Every object of a kind (any group when `group` is None), optionally in one namespace."""
        result: list[Obj] = []
        for (g, k), objs in self._by_kind.items():
            if k == kind and (group is None or g == group):
                result.extend(o for o in objs.values() if namespace is None or o.namespace == namespace)
        return result

    def kinds(self) -> set[tuple[str, str]]:
        """Every (group, kind) present."""
        return {key for key, objs in self._by_kind.items() if objs}

    def resolve(self, ref: Ref) -> Obj | None:
        """The object a Ref points to."""
        return self.get(ref.kind, ref.name, ref.namespace, split_api_version(ref.api_version)[0])

    # -- ownership ------------------------------------------------------------------------
    @cached_property
    def _by_uid(self) -> dict[str, Obj]:
        return {o.uid: o for o in self._objects.values() if o.uid}

    @cached_property
    def _children(self) -> dict[str, list[Obj]]:
        """Children by owner uid, and by `namespace/kind/name` for owners read without a uid."""
        children: dict[str, list[Obj]] = defaultdict(list)
        for obj in self._objects.values():
            for ref in obj.owner_references():
                if ref.get("uid"):
                    children[str(ref["uid"])].append(obj)
                children[f"{obj.namespace}/{ref.get('kind')}/{ref.get('name')}"].append(obj)
        return children

    def owner(self, obj: Obj) -> Obj | None:
        """The controlling owner of an object (by uid, else by kind and name in its namespace)."""
        refs = obj.owner_references()
        ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
        if ref is None:
            return None
        found = self._by_uid.get(str(ref.get("uid") or ""))
        if found is not None:
            return found
        group = split_api_version(str(ref.get("apiVersion") or ""))[0]
        return self.get(str(ref.get("kind") or ""), str(ref.get("name") or ""), obj.namespace, group)

    def children(self, obj: Obj, kind: str | None = None) -> list[Obj]:
        """Objects that name `obj` as an owner (by uid, else by kind and name)."""
        found = self._children.get(obj.uid, []) if obj.uid else []
        if not found:
            found = self._children.get(f"{obj.namespace}/{obj.kind}/{obj.name}", [])
        return [c for c in found if kind is None or c.kind == kind]

    def pods_of(self, workload: Obj) -> list[Obj]:
        """Pods of a workload: directly owned, or through its ReplicaSets (Deployment, Rollout)."""
        if workload.kind == "Pod":
            return [workload]
        pods = self.children(workload, "Pod")
        for rs in self.children(workload, "ReplicaSet"):
            pods.extend(self.children(rs, "Pod"))
        return pods

    def workload_of(self, pod: Obj) -> Obj | None:
        """The top workload of a pod (ReplicaSet → Deployment/Rollout, else the direct owner)."""
        owner = self.owner(pod)
        if owner is not None and owner.kind == "ReplicaSet":
            return self.owner(owner) or owner
        return owner

    def node_of(self, pod: Obj) -> Obj | None:
        """The Node object the pod runs on."""
        return self.get("Node", pod.node_name, "", "") if pod.node_name else None

    # -- Argo CD --------------------------------------------------------------------------
    def applications(self) -> list[Obj]:
        """Every argoproj.io Application."""
        return self.of_kind("Application", ARGOCD_GROUP)

    @cached_property
    def settings(self) -> ArgoSettings:
        """Argo CD settings from its ConfigMaps (found in whatever namespace holds them)."""
        found = ArgoSettings()
        for name, attr in SETTINGS_NAMES.items():
            for cm in self.of_kind("ConfigMap", ""):
                if cm.name == name:
                    data = cm.raw.get("data")
                    setattr(found, attr, {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {})
                    found.namespace = found.namespace or cm.namespace
                    break
        return found

    def component(self, name: str) -> Component | None:
        """The first component of that name (`repo-server`, `application-controller`…), None when absent."""
        return next((c for c in self.components if c.name == name), None)

    def config_map(self, name: str) -> Obj | None:
        """The first ConfigMap of that name, in whatever namespace holds it (argocd-cm, argocd-rbac-cm…)."""
        return next((c for c in self.of_kind("ConfigMap", "") if c.name == name), None)

    def app_resources(self, app: Obj) -> list[tuple[dict[str, Any], Obj | None]]:
        """The resources an Application manages: `status.resources` entries with the live object."""
        result = []
        entries = app.status.get("resources")
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            live = self.get(
                str(entry.get("kind") or ""), str(entry.get("name") or ""),
                str(entry.get("namespace") or ""), str(entry.get("group") or ""),
            )
            result.append((entry, live))
        return result

    def _tracking_names(self, app: Obj) -> list[str]:
        """The names an Application's resources are tracked by (`<ns>_<app>` outside the control namespace)."""
        if app.namespace and app.namespace != self.settings.namespace:
            return [app.name, f"{app.namespace}_{app.name}"]
        return [app.name]

    @cached_property
    def _tracked(self) -> dict[str, list[Obj]]:
        """Objects by the application name in their tracking label or tracking-id annotation."""
        label_key = self.settings.instance_label_key
        index: dict[str, list[Obj]] = defaultdict(list)
        for obj in self._objects.values():
            names = {obj.labels.get(label_key), obj.tracking_id.split(":", 1)[0] if obj.tracking_id else None}
            for name in names - {None, ""}:
                index[str(name)].append(obj)
        return index

    def tracked_by(self, app: Obj) -> list[Obj]:
        """Objects that carry the Application's tracking label or annotation."""
        return [obj for name in self._tracking_names(app) for obj in self._tracked.get(name, [])]

    @cached_property
    def _managers(self) -> dict[tuple[str, str, str], Obj]:
        """(kind, namespace, name) → the Application listing or tracking the object."""
        index: dict[tuple[str, str, str], Obj] = {}
        for app in self.applications():
            for entry in as_list(app.at("status", "resources")):
                entry = mapping(entry)
                key = (str(entry.get("kind") or ""), str(entry.get("namespace") or ""), str(entry.get("name") or ""))
                index.setdefault(key, app)
            for obj in self.tracked_by(app):
                index.setdefault((obj.kind, obj.namespace, obj.name), app)
        return index

    def app_of(self, obj: Obj) -> Obj | None:
        """The Application that manages an object (its status.resources, else the tracking label)."""
        return self._managers.get((obj.kind, obj.namespace, obj.name))

    @cached_property
    def components(self) -> list[Component]:
        """Argo components found by what their containers run, else their labels, else their names (pods without a
        workload in the input), with versions from the image they run; Redis and its proxy beside the Argo CD they
        serve (`knowledge.components`)."""
        found: list[Component] = []
        companions: list[tuple[Obj, Recognised]] = []
        seen_pods: set[tuple[str, str]] = set()
        for kind in ("Deployment", "StatefulSet", "DaemonSet"):
            for workload in self.of_kind(kind, "apps"):
                recognised = self._recognised(workload)
                if recognised is not None:
                    pods = tuple(self.pods_of(workload))
                    seen_pods.update((p.namespace, p.name) for p in pods)
                    found.append(self._component(recognised, workload, pods))
                elif (companion := by_containers(workload.containers, companions=True)) is not None:
                    companions.append((workload, companion))
        orphans: dict[str, tuple[Recognised, list[Obj]]] = {}
        for pod in self.of_kind("Pod", ""):
            if (pod.namespace, pod.name) in seen_pods:
                continue
            recognised = self._recognised(pod)
            if recognised is not None:
                orphans.setdefault(recognised.rule.component, (recognised, []))[1].append(pod)
            elif (companion := by_containers(pod.containers, companions=True)) is not None:
                companions.append((pod, companion))
        for recognised, orphan_pods in orphans.values():
            found.append(self._component(recognised, None, tuple(orphan_pods)))
        installed = [(c.product, c.namespace, frozenset(releases(c.labels))) for c in found]
        for obj, companion in companions:
            if serves(companion.rule, obj.labels or _template_labels(obj), obj.namespace, installed) and not is_hook(
                    obj.kind, obj.raw):
                found.append(self._component(companion, obj, tuple(self.pods_of(obj)))
                             if obj.kind != "Pod" else self._component(companion, None, (obj,)))
        return found

    def _recognised(self, obj: Obj) -> Recognised | None:
        """The component a workload or pod runs by its containers, else names by its labels (its pod template's when it
        has none) or its name; None for hooks."""
        recognised = by_containers(obj.containers)
        if recognised is None:
            rule = by_labels(obj.labels or _template_labels(obj)) or by_name(obj.name)
            recognised = Recognised(rule, None) if rule is not None else None
        return None if recognised is None or is_hook(obj.kind, obj.raw) else recognised

    def _component(self, recognised: Recognised, workload: Obj | None, pods: tuple[Obj, ...]) -> Component:
        image = recognised.image
        if image is None:  # found by its labels or name: its first container's
            containers = workload.containers if workload is not None else pods[0].containers if pods else ()
            image = containers[0][0] if containers else None
        rule = recognised.rule
        return Component(rule.component, rule.product, workload, pods, image or None, image_version(image))

    def component_name(self, obj: Obj) -> str | None:
        """The component a workload or pod runs on its own (Redis, which runs beside Argo CD, is told only among the
        other objects: `components`)."""
        recognised = self._recognised(obj)
        return recognised.rule.component if recognised is not None else None

    @cached_property
    def _pod_components(self) -> dict[tuple[str, str], str]:
        return {(p.namespace, p.name): c.name for c in self.components for p in c.pods}

    def component_of_pod(self, namespace: str, pod: str) -> str | None:
        """The component a pod belongs to, by its object, else by its name."""
        found = self._pod_components.get((namespace, pod))
        if found is not None:
            return found
        rule = by_name(pod)
        return rule.component if rule is not None else None

    # -- events, audit, time --------------------------------------------------------------
    @cached_property
    def events(self) -> list[KEvent]:
        """Every Event, core/v1 and events.k8s.io/v1, oldest first."""
        result = [normalise_event(e) for e in self.of_kind("Event")]
        return sorted(result, key=lambda e: e.time or datetime.min.replace(tzinfo=UTC))

    def events_about(self, kind: str, name: str) -> list[KEvent]:
        """The Events whose involved object is the `kind` named `name`, in any namespace, oldest first."""
        return self._events_by_involved.get((kind, name), [])

    def warnings_about(self, refs: Iterable[Ref]) -> list[KEvent]:
        """The Warning Events whose involved object is one of `refs` (same kind, namespace and name), in the order of
        `events`."""
        found: list[KEvent] = []
        for kind, namespace, name in {(r.kind, r.namespace, r.name) for r in refs}:
            found.extend(e for e in self._events_by_involved.get((kind, name), ())
                         if e.type == "Warning" and e.involved is not None and e.involved.namespace == namespace)
        return sorted(found, key=lambda e: self._event_order[id(e)])

    @cached_property
    def _events_by_involved(self) -> dict[tuple[str, str], list[KEvent]]:
        """`events` by the kind and name of their involved object (a rule reading them per object would otherwise
        read every Event for every object: 2,000 Applications × 282 Events in the benchmark)."""
        index: dict[tuple[str, str], list[KEvent]] = defaultdict(list)
        for event in self.events:
            if event.involved is not None:
                index[(event.involved.kind, event.involved.name)].append(event)
        return index

    @cached_property
    def _event_order(self) -> dict[int, int]:
        """The place of each of `events` (by id) in that list."""
        return {id(event): place for place, event in enumerate(self.events)}

    def audit(self) -> Iterator[AuditEvent]:
        """Stream every audit record, file by file; problems go to `problems`."""
        for audit_file in self.audit_files:
            yield from read_audit_file(audit_file, self.problems)

    def metrics(self, names: Collection[str] | None = None) -> Iterator[Sample]:
        """Stream the samples of every metrics file (only of the metrics in `names` when given); problems go
        to `problems`."""
        for metrics_file in self.metrics_files:
            yield from read_metrics_file(metrics_file, self.problems, names)

    # -- files beside the objects ------------------------------------------------------------
    def clock_probes(self) -> list[tuple[str, dict[str, Any]]]:
        """(display name, document) of each input's `clock.yaml` (probes taken by `collect`), read on every call;
        problems go to `problems`."""
        found = []
        for root in self.roots:
            path = root / "clock.yaml"
            if not path.is_file():
                continue
            display = "clock.yaml" if len(self.roots) == 1 else f"{root.name}/clock.yaml"
            found.append((display, mapping(load_yaml_file(path, display, self.problems, root, unique_keys=True))))
        return found

    @cached_property
    def charts(self) -> list[ChartFiles]:
        """Every Helm chart under the inputs' `repo/` folders (sub-charts too), read on first use."""
        return [read_chart(path, root=root / "repo") for root in self.roots
                for path in find_charts(root / "repo") if (root / "repo").is_dir()]

    def log_files_of(self, namespace: str, pod: str) -> list[LogFile]:
        """The log files of one pod (every container, current and previous)."""
        return [f for f in self.log_files if f.namespace == namespace and f.pod == pod]

    def log_tail(self, log_file: LogFile, lines: int = 5) -> list[LogRecord]:
        """The last non-empty lines of a log, parsed (reads only the end of the file)."""
        try:
            with open_input(log_file.path) as handle:
                end = log_file.end if log_file.end is not None else handle.seek(0, 2)
                begin = max(log_file.start, end - TAIL_BYTES)
                handle.seek(log_file.start)
                skipped = 0
                while handle.tell() < begin:
                    block = handle.read(min(TAIL_BYTES, begin - handle.tell()))
                    skipped += block.count(b"\n")
                data = handle.read(end - begin)
        except OSError as exc:
            self.problems.append(Problem(log_file.display, f"cannot read: {exc.strerror or exc}"))
            return []
        text = data.decode("utf-8", errors="replace").replace("\x00", "")
        numbered = [
            (log_file.first_line + skipped + i, line) for i, line in enumerate(text.split("\n")) if line.strip()
        ]
        if begin > log_file.start and numbered:
            numbered = numbered[1:]  # the first line may be cut
        return [parse_line(line, log_file, number, self.reference_time) for number, line in numbered[-lines:]]

    @cached_property
    def reference_time(self) -> datetime:
        """When the snapshot was taken: `collectedAt`, else the newest object timestamp, else now."""
        collected = parse_time(self.meta.get("collectedAt"))
        if collected is not None:
            return collected
        newest = max((t for t in (o.created for o in self._objects.values()) if t is not None), default=None)
        return newest or datetime.now(UTC)


def _template_labels(obj: Obj) -> dict[str, Any]:
    """The labels of a workload's pod template (for a workload without labels of its own)."""
    if obj.kind == "Pod":
        return {}
    return mapping(obj.at("spec", "template", "metadata", "labels"))


def image_version(image: str | None) -> str | None:
    """The tag of an image reference (`quay.io/argoproj/argocd:v2.10.9` → `v2.10.9`)."""
    if not image:
        return None
    image = image.split("@", 1)[0]
    _, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return None
    return tag


def normalise_event(obj: Obj) -> KEvent:
    """A KEvent from a core/v1 or events.k8s.io/v1 Event object."""
    raw = obj.raw
    involved_raw = raw.get("involvedObject") or raw.get("regarding")
    involved = None
    if isinstance(involved_raw, dict):
        involved = Ref(
            str(involved_raw.get("apiVersion") or ""), str(involved_raw.get("kind") or ""),
            str(involved_raw.get("namespace") or ""), str(involved_raw.get("name") or ""),
        )
    source = mapping(raw.get("source"))
    series = mapping(raw.get("series"))
    first = parse_time(raw.get("firstTimestamp")) or parse_time(raw.get("eventTime"))
    last = (
        parse_time(raw.get("lastTimestamp"))
        or parse_time(series.get("lastObservedTime"))
        or parse_time(raw.get("deprecatedLastTimestamp"))
        or first
    )
    count = as_int(raw.get("count") or series.get("count") or raw.get("deprecatedCount"), 1)
    return KEvent(
        obj=obj,
        type=str(raw.get("type") or ""),
        reason=str(raw.get("reason") or ""),
        message=str(raw.get("message") or raw.get("note") or ""),
        involved=involved,
        first=first,
        last=last,
        count=count if count >= 0 else 1,
        created=obj.created,
        source_host=source.get("host") or None,
        reporter=raw.get("reportingInstance") or raw.get("reportingController") or source.get("component") or None,
    )
