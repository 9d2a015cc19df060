"""The live rows of the benchmark: `collect` and `scan --live` against a synthetic installation served by the
fake kube-apiserver of the tests (``bench/live_server.py``, in its own process), and the scan of the bundle
that `collect` wrote.

Measures wall time and peak RSS (the main process and its largest worker apart) of each command, counts the
requests the fake received, and checks that the object requests are one per page of each list, never one
per object. Used by ``bench/run.py`` (``--live-size``, ``--live-only``); see bench/README.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
MIB = 2**20
AIM_LIVE_RATIO = 2.0  # scan --live time / scan of the collected bundle time, at most
AIM_LIVE_RSS_MIB = 400  # peak RSS of collect and of scan --live (largest single process), below
SCAN_ARGS = ("-o", "json", "--fail-on", "never")
SERVER_START_TIMEOUT = 900.0
Cells = tuple[str, str, str, str, str]
"""metric, value, aim, status, detail: one row of the results table."""




def process_tree(root: int) -> list[int]:
    """`root` and every live descendant of it, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def command_context(cmd: list[str], stderr: Path) -> str:
    """A command line and the end of its stderr, for error messages."""
    tail = stderr.read_text(errors="replace")[-2000:].strip()
    return f"\n  command: {' '.join(cmd)}" + (f"\n  stderr:\n{tail}" if tail else "")

@dataclass(frozen=True)
class LiveSize:
    """The size of the synthetic installation the fake serves."""

    apps: int
    pods: int
    log_mib: float
    """Log of one repo-server pod in MiB (the application-controller's is 1.25x, the server's 0.5x)."""


SIZES = {"full": LiveSize(5000, 50000, 4.0), "small": LiveSize(500, 5000, 1.0)}


class LiveError(Exception):
    """A step of the live benchmark could not run; the message says which and why."""


@dataclass
class ProcRun:
    """One measured argo-doctor process and its descendants."""

    wall: float
    cpu: float
    """User + system CPU seconds of the process and its reaped descendants."""
    rc: int
    maxrss_mib: float
    """`ru_maxrss` from `os.wait4`: the largest of the process and its reaped descendants (exact)."""
    main_hwm_mib: float
    """VmHWM of the process itself, last sampled value (a lower bound)."""
    worker_hwm_mib: float
    """The largest VmHWM of any descendant (the loader's forked workers), last sampled values; 0 without any."""
    workers: int
    tree_rss_mib: float
    """Peak of the summed VmRSS of the whole tree, sampled (counts pages shared after fork once per process)."""
    stdout: Path
    stderr: Path
    cmd: list[str]

    def context(self) -> str:
        """The command line and the end of its stderr, for error messages."""
        return command_context(self.cmd, self.stderr)

    def rss(self) -> str:
        """The memory detail of a row."""
        worker = f"largest worker {self.worker_hwm_mib:.0f} MiB (of {self.workers})" if self.workers else \
            "no worker process"
        return (f"main process {self.main_hwm_mib:.0f} MiB, {worker} (VmHWM, sampled every 0.1 s); "
                f"wait4 ru_maxrss {self.maxrss_mib:.0f} MiB; tree sum {self.tree_rss_mib:.0f} MiB")


def _pss(pid: int) -> int:
    """The proportional set size of a process, in bytes (0 when it is gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class TreeWatch:
    """Samples /proc every `interval` s for a process and its descendants: each one's VmHWM (its own peak RSS,
    which only grows, so a sample misses at most the growth after it), the summed VmRSS of the tree, and its summed
    PSS (`smaps_rollup`: a page shared by forked workers counts once, split between them, as memory is paid)."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.hwm: dict[int, int] = {}
        self.tree_peak = 0
        self.pss_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        total = pss = 0
        for pid in process_tree(self.pid):
            try:
                with open(f"/proc/{pid}/status", "rb") as f:
                    fields = dict(line.split(b":", 1) for line in f.read().splitlines() if b":" in line)
            except OSError:
                continue
            if b"VmHWM" not in fields:  # a zombie has no memory left
                continue
            self.hwm[pid] = max(self.hwm.get(pid, 0), int(fields[b"VmHWM"].split()[0]) * 1024)
            total += int(fields[b"VmRSS"].split()[0]) * 1024
            pss += _pss(pid)
        self.tree_peak = max(self.tree_peak, total)
        self.pss_peak = max(self.pss_peak, pss)

    def _loop(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.interval):
                return

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()


def measure(cmd: Sequence[str | os.PathLike[str]], workdir: Path, name: str) -> ProcRun:
    """Run `cmd` once: wall time from spawn to reap, `ru_maxrss` from `os.wait4`, VmHWM per process sampled."""
    out, err = workdir / f"{name}.stdout", workdir / f"{name}.stderr"
    argv = [os.fspath(c) for c in cmd]
    with open(out, "wb") as fo, open(err, "wb") as fe:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        watch = TreeWatch(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    watch.stop()
    proc.returncode = rc = os.waitstatus_to_exitcode(status)
    workers = [v for pid, v in watch.hwm.items() if pid != proc.pid]
    run = ProcRun(wall, usage.ru_utime + usage.ru_stime, rc, usage.ru_maxrss / 1024, watch.hwm.get(proc.pid, 0) / MIB,
                  max(workers, default=0) / MIB, len(workers), watch.tree_peak / MIB, out, err, argv)
    if rc != 0:
        raise LiveError(f"{name}: exited with {rc}{run.context()}")
    return run


def best_of(n: int, make: Callable[[int], Sequence[str | os.PathLike[str]]], workdir: Path, name: str,
            server: Server | None = None) -> tuple[ProcRun, dict[str, Any] | None]:
    """Run `make(i)` for i < n: the fastest run, with the highest memory figures of all runs, and what the fake
    `server` (when given) received during that run, its CPU time then in `server_cpu_s`."""
    runs = []
    cpu = server.stats()["server_cpu_s"] if server is not None else 0.0
    for i in range(n):
        run = measure(make(i), workdir, f"{name}-{i}")
        stats = server.stats() if server is not None else None
        if stats is not None:
            stats["server_cpu_s"], cpu = stats["server_cpu_s"] - cpu, stats["server_cpu_s"]
        runs.append((run, stats))
    best, stats = min(runs, key=lambda r: r[0].wall)
    best.maxrss_mib = max(r.maxrss_mib for r, _ in runs)
    best.main_hwm_mib = max(r.main_hwm_mib for r, _ in runs)
    best.worker_hwm_mib = max(r.worker_hwm_mib for r, _ in runs)
    best.tree_rss_mib = max(r.tree_rss_mib for r, _ in runs)
    return best, stats


# ---------------------------------------------------------------------------------------------------------------
# the server


class Server:
    """`bench/live_server.py` in a child process: start it, read its request statistics, stop it."""

    def __init__(self, size: LiveSize, workdir: Path) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        self._out = workdir / "server.stdout"
        self._err = workdir / "server.stderr"
        cmd = [sys.executable, os.fspath(BENCH / "live_server.py"), "--apps", str(size.apps), "--pods",
               str(size.pods), "--log-mib", str(size.log_mib), "--kubeconfig", os.fspath(self.kubeconfig)]
        t0 = time.perf_counter()
        with open(self._out, "wb") as fo, open(self._err, "wb") as fe:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        self.url = ""
        while not self.url:
            if self.proc.poll() is not None:
                raise LiveError(f"live_server.py exited with {self.proc.returncode}:\n{self.log()}")
            if time.perf_counter() - t0 > SERVER_START_TIMEOUT:
                self.stop()
                raise LiveError(f"live_server.py not ready after {SERVER_START_TIMEOUT:.0f} s:\n{self.log()}")
            time.sleep(0.2)
            for line in self._out.read_text().splitlines():
                if line.startswith("ready "):
                    self.url = line.split()[1]
        self.started = time.perf_counter() - t0

    def log(self) -> str:
        """The end of the server's stderr."""
        return self._err.read_text(errors="replace")[-3000:]

    def stats(self, reset: bool = True) -> dict[str, Any]:
        """The requests the fake received since the last reset; `reset` forgets them."""
        with urllib.request.urlopen(self.url + ("?reset=1" if reset else ""), timeout=120) as response:
            doc: dict[str, Any] = json.load(response)
        return doc

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not end within 30 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------------------------------------------------------
# request accounting


@dataclass
class RequestCheck:
    """The requests of one command against the formula: every list costs max(1, ceil(n / limit)) requests
    (n: the objects the fake holds for that list path), plus discovery and the version, plus one per log."""

    total: int
    by_kind: dict[str, int]
    lists: int
    pages_expected: int
    pages_made: int
    per_object: int
    logs: dict[str, int]
    wrong: list[str] = field(default_factory=list)
    """Lists whose request count is not the expected one."""

    @classmethod
    def of(cls, stats: dict[str, Any]) -> RequestCheck:
        """Check the statistics that `live_server.py` answered."""
        expected = made = 0
        wrong = []
        for path, entry in sorted(stats["lists"].items()):
            limit = entry["limit"] or 0
            want = max(1, math.ceil(entry["objects"] / limit)) if limit else 1
            expected += want
            made += entry["requests"]
            if entry["requests"] != want:
                wrong.append(f"{path}: {entry['requests']} requests for {entry['objects']} objects "
                             f"(limit {entry['limit']}, expected {want})")
        by_kind = stats["by_kind"]
        return cls(stats["total"], by_kind, len(stats["lists"]), expected, made, by_kind.get("get", 0),
                   stats["logs"], wrong)

    @property
    def ok(self) -> bool:
        """Pages as the formula says and no per-object GET."""
        return not self.wrong and self.per_object == 0

    def detail(self) -> str:
        """The breakdown, for the detail column."""
        k = self.by_kind
        logs = ", ".join(f"{v} {name}" for name, v in sorted(self.logs.items())) or "none"
        other = {n: v for n, v in k.items() if n not in ("list", "page", "log", "discovery", "version", "get")}
        parts = [f"{self.lists} lists + {k.get('page', 0)} further pages = {self.pages_made} "
                 f"(Σ max(1, ceil(n/limit)) = {self.pages_expected})",
                 f"{k.get('discovery', 0)} discovery, {k.get('version', 0)} version",
                 f"{self.per_object} per-object GETs",
                 f"{k.get('log', 0)} logs ({logs})"]
        parts += [f"{v} {n}" for n, v in sorted(other.items())]
        if self.wrong:
            parts.append("off: " + "; ".join(self.wrong[:3]) + (" ..." if len(self.wrong) > 3 else ""))
        return "; ".join(parts)


def tree_bytes(root: Path) -> tuple[int, int, int]:
    """Bytes and files under `root`, and the bytes under `root/logs`."""
    total = files = logs = 0
    for path in root.rglob("*"):
        if path.is_file():
            size = path.stat().st_size
            total += size
            files += 1
            if path.relative_to(root).parts[0] == "logs":
                logs += size
    return total, files, logs


def findings(run: ProcRun) -> tuple[int, int | None]:
    """Findings in a `scan -o json` output, and the number of objects the scan says it read."""
    try:
        doc: Any = json.loads(run.stdout.read_bytes())
    except ValueError as e:
        raise LiveError(f"scan output is not JSON ({e}){run.context()}") from e
    found = doc.get("findings") if isinstance(doc, dict) else doc
    source = doc.get("source") if isinstance(doc, dict) else None
    objects = source.get("objects") if isinstance(source, dict) else None
    return (len(found) if isinstance(found, list) else -1), objects


def digest(path: Path) -> str:
    """The first 12 hex digits of a file's sha256 (the sources measured may not be committed yet), or `?`."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    except OSError:
        return "?"


def status(flag: bool) -> str:
    """Mark for an aim."""
    return "ok" if flag else "MISSED"


# ---------------------------------------------------------------------------------------------------------------
# the benchmark


@dataclass
class LiveReport:
    """The rows, and the parameter line for a results section."""

    rows: list[Cells]
    params: str


def run_live(argo: Path, size: LiveSize, workdir: Path, repeat: int = 1) -> LiveReport:
    """Serve the installation, measure collect, scan --live and the scan of the collected bundle."""

    def say(text: str) -> None:
        print(f"bench: live: {text}", file=sys.stderr, flush=True)

    say(f"building and serving {size.apps} Applications, {size.pods} pods (bench/live_server.py)")
    server = Server(size, workdir)
    try:
        say(f"server ready in {server.started:.1f} s; {server.log().strip().splitlines()[-1]}")
        cluster = ("--kubeconfig", os.fspath(server.kubeconfig), "-q")
        say("argo-doctor collect")
        bundles = [workdir / f"bundle-{i}" for i in range(repeat)]
        collect, collect_stats = best_of(repeat, lambda i: [argo, "collect", "-o", bundles[i], *cluster], workdir,
                                         "collect", server)
        say("argo-doctor scan --live")
        live, live_stats = best_of(repeat, lambda i: [argo, "scan", "--live", *cluster, *SCAN_ARGS], workdir,
                                   "scan-live", server)
    finally:
        server.stop()
    assert collect_stats is not None and live_stats is not None
    bundle = bundles[-1]
    say("argo-doctor scan <collected bundle>")
    scan, _ = best_of(repeat, lambda i: [argo, "scan", bundle, *SCAN_ARGS], workdir, "scan-bundle")
    total, files, log_bytes = tree_bytes(bundle)
    live_found, live_objects = findings(live)
    scan_found, scan_objects = findings(scan)
    ratio = live.wall / scan.wall
    collect_requests, live_requests = RequestCheck.of(collect_stats), RequestCheck.of(live_stats)

    def cpu(run: ProcRun, stats: dict[str, Any]) -> str:
        return f"CPU: argo-doctor {run.cpu:.1f} s, fake API server {stats['server_cpu_s']:.1f} s"

    rows: list[Cells] = [
        ("live: installation served", f"{size.apps} apps, {size.pods} pods", "", "",
         f"bench/live_server.py: fake API built and serving in {server.started:.1f} s, its own peak RSS "
         f"{live_stats['server_maxrss_mib']:.0f} MiB (not counted below), {live_stats['errors']} fake errors"),
        ("live: collect", f"{collect.wall:.2f} s", "", "", f"{cpu(collect, collect_stats)}; wrote "
         f"{total / MIB:.1f} MiB in {files} files (logs {log_bytes / MIB:.1f} MiB), {scan_objects} objects"),
        ("live: peak RSS of collect", f"{collect.maxrss_mib:.0f} MiB", f"< {AIM_LIVE_RSS_MIB}",
         status(collect.maxrss_mib < AIM_LIVE_RSS_MIB), collect.rss()),
        ("live: requests of collect", str(collect_requests.total), "∝ lists × pages",
         status(collect_requests.ok), collect_requests.detail()),
        ("live: scan --live", f"{live.wall:.2f} s", "", "",
         f"{cpu(live, live_stats)}; {live_found} findings, {live_objects} objects"),
        ("live: peak RSS of scan --live", f"{live.maxrss_mib:.0f} MiB", f"< {AIM_LIVE_RSS_MIB}",
         status(live.maxrss_mib < AIM_LIVE_RSS_MIB), live.rss()),
        ("live: requests of scan --live", str(live_requests.total), "∝ lists × pages",
         status(live_requests.ok), live_requests.detail()),
        ("live: scan of the collected bundle", f"{scan.wall:.2f} s", "", "",
         f"CPU {scan.cpu:.1f} s; {scan_found} findings, {scan_objects} objects; peak RSS {scan.maxrss_mib:.0f} "
         f"MiB: {scan.rss()}"),
        ("live: scan --live / scan of bundle", f"{ratio:.2f}", f"<= {AIM_LIVE_RATIO}",
         status(ratio <= AIM_LIVE_RATIO), f"scan --live {live.wall:.2f} s, scan of bundle {scan.wall:.2f} s"),
    ]
    sources = ", ".join(f"{name} sha256 {digest(BENCH.parent / 'src' / 'argo_doctor' / 'sources' / name)}"
                        for name in ("live.py", "redact.py"))
    params = (f"live: apps {size.apps}, pods {size.pods}, Argo CD logs {size.log_mib:g} MiB per repo-server pod "
              f"(synthetic_installation of tests/live/fakeapi.py, served by bench/live_server.py), best of {repeat}; "
              f"{sources}")
    return LiveReport(rows, params)
