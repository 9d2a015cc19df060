"""The hostile-input suite's runner and the contract every run on hostile input keeps.

Each run is a child process under limits: `RLIMIT_AS` (per process: each worker of argo-doctor's
pools gets its own), `RLIMIT_CPU`, no core files, a wall-clock timeout, stdin on /dev/null and
`TMPDIR` on a fresh empty directory that must be empty again afterwards. Children are forked from
a multiprocessing fork server that has imported `argo_doctor.cli` once, so that each run does not
pay the two seconds of imports of `.venv/bin/argo-doctor`; the child then runs exactly what the
console script runs (`argo_doctor.cli:main`, the `SystemExit` it raises becomes the exit status,
an escaping exception a traceback and status 1, exit handlers run).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import multiprocessing
import os
import re
import resource
import shutil
import signal
import struct
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES
from tests.report.contract import validate

GOOD = EXAMPLES / "argocd-basic"
"""The known-good bundle given beside hostile input: every finding it gives alone must survive."""
DEPRECATED = EXAMPLES / "incidents" / "deprecated-callers"
"""The known-good input of `deprecations` (and of the rule that reads metrics)."""
MEMORY_LIMIT = 1 << 30
"""Address space per process: a scan of examples/argocd-basic runs in a quarter of it."""
CPU_SECONDS = 30
"""CPU time per process (then SIGXCPU): a scan of examples/argocd-basic takes about 1.5 s."""
WALL_SECONDS = 60
"""Wall-clock time per run, a safety net for hangs (a FIFO opened for reading)."""
FILE_SIZE_LIMIT = 4 << 30
"""Largest file a run may write (the extraction of a tarball): a guard for the disk, not a contract."""
CANARY = "hostile-canary-5f0c2a9e"
"""Text planted where argo-doctor must not read it (outside the input): no output may carry it."""
_SCRUBBED_ENVIRONMENT = ("ARGO_DOCTOR_DEBUG", "FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "COLUMNS")

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["argo_doctor.cli", __name__])


def _child(args: list[str], folder: str, limits: dict[int, tuple[int, int]]) -> None:
    """Run `argo-doctor ARGS` in this (forked) process, in its own process group, under `limits`, in
    `folder` with TMPDIR `folder/tmp`, stdin /dev/null, stdout and stderr to `folder/stdout` and
    `folder/stderr`; its peak RSS goes to `folder/rss`."""
    os.setsid()
    os.chdir(folder)
    for which, (soft, hard) in limits.items():
        resource.setrlimit(which, (soft, hard))
    for name in _SCRUBBED_ENVIRONMENT:
        os.environ.pop(name, None)
    os.environ["TMPDIR"] = os.path.join(folder, "tmp")
    tempfile.tempdir = None
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    from argo_doctor.cli import main

    try:
        main(args, prog_name="argo-doctor")  # always ends in SystemExit, which multiprocessing turns into the status
    finally:
        atexit._run_exitfuncs()
        with open("rss", "w") as handle:
            handle.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))


@dataclass(frozen=True)
class Run:
    """One finished (or killed) run of argo-doctor."""

    args: tuple[str, ...]
    status: int | None
    """The exit status; negative: killed by that signal; None: still running at the wall timeout."""
    stdout: str
    stderr: str
    peak_rss: int | None
    """The largest resident set of the main process, in bytes (None when it was killed)."""

    def describe(self) -> str:
        """How the run ended, for assertion messages."""
        if self.status is None:
            how = f"did not finish within {WALL_SECONDS} s (killed)"
        elif self.status < 0:
            how = f"was killed by {signal.Signals(-self.status).name}"
            if self.status == -signal.SIGXCPU:
                how += f" (over {CPU_SECONDS} s of CPU)"
        else:
            how = f"exited {self.status}"
        return f"argo-doctor {' '.join(self.args)} {how}; stderr: {self.stderr[-1500:]!r}"

    def json(self) -> Any:
        """Standard output, parsed as JSON."""
        try:
            return json.loads(self.stdout)
        except ValueError as exc:
            raise AssertionError(f"output is not JSON ({exc}): {self.stdout[:500]!r}; {self.describe()}") from None

    @property
    def errors(self) -> list[str]:
        """Every input error the run reported, as `location: message`: the `errors` of a JSON report
        and every line of standard error."""
        entries = [line for line in self.stderr.splitlines() if line.strip()]
        if self.stdout.lstrip().startswith("{"):
            with contextlib.suppress(ValueError):
                doc = json.loads(self.stdout)
                entries += [f"{e['location']}: {e['message']}" for e in doc.get("errors", [])]
        return entries


class Argo:
    """Runs `argo-doctor ARGS` under limits; asserts afterwards that TMPDIR is empty."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.count = 0

    def __call__(self, *args: str | Path) -> Run:
        """Run argo-doctor with `args`."""
        self.count += 1
        folder = self.base / f"run-{self.count}"
        tmpdir = folder / "tmp"
        tmpdir.mkdir(parents=True)
        argv = [str(a) for a in args]
        limits = {
            resource.RLIMIT_AS: (MEMORY_LIMIT, MEMORY_LIMIT),
            resource.RLIMIT_CPU: (CPU_SECONDS, CPU_SECONDS + 5),
            resource.RLIMIT_CORE: (0, 0),
            resource.RLIMIT_FSIZE: (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT),
        }
        process = _CONTEXT.Process(target=_child, args=(argv, str(folder), limits))
        process.start()
        try:
            process.join(WALL_SECONDS)
            status = process.exitcode
        finally:
            assert process.pid is not None
            with contextlib.suppress(ProcessLookupError):  # the run if still running, and any worker it left
                os.killpg(process.pid, signal.SIGKILL)
            process.join()
        rss = _read(folder / "rss")
        run = Run(tuple(argv), status, _read(folder / "stdout"), _read(folder / "stderr"), int(rss) if rss else None)
        left = sorted(p.relative_to(tmpdir).as_posix() for p in tmpdir.rglob("*"))
        shutil.rmtree(tmpdir)  # what a failed run leaves can be gigabytes: not kept among pytest's temp dirs
        assert not left, f"temporary files left behind in TMPDIR: {left[:10]}; {run.describe()}"
        return run


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


@dataclass(frozen=True)
class Baseline:
    """What the known-good inputs give alone."""

    expected: Mapping[str, frozenset[tuple[str, ...]]]
    """By command, the projection (see PROJECTIONS) of what it gives for its good input alone: GOOD, and
    DEPRECATED for `deprecations`."""
    deprecated: frozenset[tuple[str, ...]]
    """(rule, title) of every finding of `scan DEPRECATED`."""
    rss: int
    """The larger peak RSS of `scan GOOD` and `timeline GOOD`, in bytes."""


def output_format(run: Run) -> str:
    """The `-o` of the run (`table` when not given)."""
    args = list(run.args)
    for flag in ("-o", "--output"):
        if flag in args[:-1]:
            return args[args.index(flag) + 1]
    return "table"


def assert_contract(run: Run, *named: str, phrase: str = "", codes: Iterable[int] = (0, 1, 2)) -> Any:
    """The promise on any input: an exit status in `codes` (never 3, never a signal or a hang, no
    traceback); JSON output that parses (and, for `scan`, keeps the documented contract, with no rule
    crashed); each of `named` in an input error that also matches the regex `phrase`. Returns the JSON
    document, or None for other formats and for exit status 2."""
    assert run.status is not None and run.status >= 0, run.describe()
    assert run.status in set(codes), run.describe()
    assert "Traceback (most recent call last)" not in run.stderr, run.describe()
    assert "internal error" not in run.stderr, run.describe()
    doc = None
    if output_format(run) == "json" and run.status != 2:
        doc = run.json()
        if run.args[0] == "scan":
            validate(doc)
            crashed = [e for e in doc["errors"] if e["location"].startswith("analyzer ")]
            assert not crashed, crashed
    for name in named:
        hits = [e for e in run.errors if name in e and re.search(phrase, e, re.I)]
        assert hits, f"no input error names {name!r} and says /{phrase}/; errors: {run.errors[:20]}; {run.describe()}"
    return doc


def findings_of(doc: Any) -> frozenset[tuple[str, ...]]:
    """(rule, title) of every finding of a `scan -o json` document."""
    return frozenset((f["rule"], f["title"]) for f in doc["findings"])


PROJECTIONS: dict[str, Callable[[Any], frozenset[tuple[str, ...]]]] = {
    "scan": findings_of,
    "timeline": lambda doc: frozenset((e["time"], e["excerpt"]) for e in doc["timeline"]),
    "health": lambda doc: frozenset((o["kind"], o["namespace"], o["name"]) for o in doc["objects"]),
    "deprecations": lambda doc: frozenset((u["location"], u["apiVersion"], u["kind"], u["how"]) for u in doc["uses"]),
}
"""What must survive hostile input beside a good one, by command: findings (rule, title), timeline entries
(time, excerpt), objects (kind, namespace, name), uses (location, apiVersion, kind, how)."""


def assert_keeps(command: str, doc: Any, expected: frozenset[tuple[str, ...]]) -> None:
    """Everything of `expected` is in the JSON document of `command`."""
    lost = sorted(expected - PROJECTIONS[command](doc))
    assert not lost, f"{command}: {len(lost)} items of the good input lost: {lost[:5]}"


def reader_args(command: str, *paths: Path | str) -> list[str | Path]:
    """`command` on its good input and `paths`, as JSON."""
    companion = DEPRECATED if command == "deprecations" else GOOD
    return [command, companion, *paths, "-o", "json", *(["--fail-on", "never"] if command == "scan" else [])]


def assert_reader(
    argo: Argo, command: str, hostile: Path | str, named: str | None, phrase: str, good: Baseline,
    codes: tuple[int, ...] = (0,), twin: Path | None = None,
) -> Run:
    """Run `command` on its good input and `hostile`: an exit status in `codes` (`deprecations` may also
    exit 1), `named` (unless None) in an input error that says `phrase` (the timeline has no error list),
    and, unless the run exited 2, everything the good input gives alone, or, given a `twin` of `hostile`
    with the bad file made harmless, everything the good input and the twin give. A bad file inside a
    readable input never changes the exit status: by default 2 is a failure."""
    allowed = (*codes, 1) if command == "deprecations" else codes
    run = argo(*reader_args(command, hostile))
    names = () if named is None or command == "timeline" else (named,)
    doc = assert_contract(run, *names, phrase=phrase, codes=allowed)
    if doc is not None:
        if twin is None:
            expected = good.expected[command]
        else:
            expected = PROJECTIONS[command](assert_contract(argo(*reader_args(command, twin)), codes=allowed))
        assert_keeps(command, doc, expected)
    return run


@pytest.fixture
def argo(tmp_path: Path) -> Argo:
    """The runner, with its runs under the test's tmp_path."""
    return Argo(tmp_path / "runs")


@pytest.fixture(scope="session")
def good(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    """What GOOD and DEPRECATED give alone, each checked against the contract."""
    argo = Argo(tmp_path_factory.mktemp("good"))
    runs = {command: argo(*reader_args(command)) for command in PROJECTIONS}
    docs = {command: assert_contract(run, codes=(0, 1)) for command, run in runs.items()}
    deprecated = assert_contract(argo("scan", DEPRECATED, "-o", "json", "--fail-on", "never"), codes=(0,))
    assert all(PROJECTIONS[command](doc) for command, doc in docs.items())
    assert not any(doc["errors"] for doc in (docs["scan"], docs["deprecations"], deprecated))
    assert any(f["rule"] == "deprecated-api-caller" for f in deprecated["findings"])
    return Baseline({command: PROJECTIONS[command](doc) for command, doc in docs.items()}, findings_of(deprecated),
                    max(runs[command].peak_rss or 0 for command in ("scan", "timeline")))


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write `files` (relative path → content) under `root`; return `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
    return root


def gzip_stream(parts: Iterable[tuple[bytes, int]], end: bool = True) -> bytes:
    """One gzip member that decompresses to each `chunk` repeated `times` times, in order; each distinct
    chunk is compressed once (a full flush makes the compressed chunk independent of what precedes it,
    so its bytes can be repeated). Without `end`, the stream just stops: no final block, no trailer."""
    segments: dict[bytes, bytes] = {}
    body, crc, size = [], 0, 0
    for chunk, times in parts:
        if chunk not in segments:
            packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
            segments[chunk] = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
        body.append(segments[chunk] * times)
        size += len(chunk) * times
        for _ in range(times if end else 0):
            crc = zlib.crc32(chunk, crc)
    stream = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"".join(body)
    if not end:
        return stream
    final = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush()
    return stream + final + struct.pack("<II", crc, size % (1 << 32))


def tar_member(name: str, data: bytes = b"", **fields: Any) -> tuple[tarfile.TarInfo, bytes]:
    """A tar entry: a regular file holding `data` unless `fields` (type, linkname, size...) say otherwise."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_700_000_000
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def tar_bytes(members: Iterable[tuple[tarfile.TarInfo, bytes]], bundle: Path | None = None, end: bool = True) -> bytes:
    """An uncompressed tar of `members`, then (if given) every file of `bundle` at the top level; without
    `end`, no end-of-archive blocks."""
    buffer = io.BytesIO()
    tar = tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT)  # noqa: SIM115 - closed below
    for info, data in members:
        tar.addfile(info, io.BytesIO(data) if data else None)
    if bundle is not None:
        for path in sorted(bundle.rglob("*")):
            tar.add(path, path.relative_to(bundle).as_posix(), recursive=False)
    unterminated = buffer.getvalue()
    tar.close()
    return buffer.getvalue() if end else unterminated


def write_outside(path: Path) -> Path:
    """A file outside any input that a link may lead to, every item named after CANARY so that any reader
    that follows the link shows it: a Node, an Ingress of a removed API (for `deprecations`) and an
    Event (for `timeline`, which lists every Event)."""
    items = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{CANARY}"}},
        {"apiVersion": "extensions/v1beta1", "kind": "Ingress",
         "metadata": {"name": f"ingress-{CANARY}", "namespace": "default"}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"event-{CANARY}", "namespace": "default"},
         "involvedObject": {"kind": "Pod", "namespace": "default", "name": f"pod-{CANARY}"},
         "type": "Warning", "reason": "BackOff", "message": f"read from outside the input: {CANARY}",
         "lastTimestamp": "2026-11-20T14:10:00Z", "count": 1},
    ]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def assert_no_canary(run: Run) -> None:
    """Nothing read from outside the input reached any output."""
    assert CANARY not in run.stdout and CANARY not in run.stderr, f"read outside the input: {run.describe()}"
