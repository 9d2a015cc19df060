#!/usr/bin/env python3
"""Benchmark argo-doctor on a large synthetic bundle.

Generates the bundle if needed (``bench/generate.py``), then measures, with a warm page
cache: the full ``argo-doctor scan``, the scan of ``objects/`` alone, ``grep -F`` with the
tool's own log signatures over the same logs, a bare PyYAML/json parse of the same object
files, and the scan of the same objects written as ``collect`` writes them (JSON pages); then
the growth table (full scans of bundles of 200, 2,000 and 20,000 Applications); then the live
rows (``bench/live.py``): ``collect`` and ``scan --live`` against a synthetic installation
served by a fake kube-apiserver, and the scan of the collected bundle. Prints the tables
against the aims; ``--results`` appends them to a markdown file. See bench/README.md.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import importlib.util
import inspect
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import msgspec
import yaml
from generate import STAMP_NAME, format_size, parse_size

from argo_doctor.model import DEFAULT_MAX_LOG_BYTES
from argo_doctor.sources.live import NAMESPACE_KINDS, PAGE_SIZE
from live import SIZES, LiveError, LiveReport, TreeWatch, command_context, run_live

BENCH = Path(__file__).resolve().parent
MIB = 2**20
MB = 10**6
DEFAULT_APPS, DEFAULT_PODS, DEFAULT_LOG_BYTES = 2000, 20000, 2**30  # the default bench bundle
AIM_FULL_SCAN_S = 4.5  # wall time of the full scan of the default bundle, at most
AIM_PSS_MIB = 350  # peak of that scan's memory summed over its process tree (PSS: shared pages once), at most
AIM_LARGE_APPS = 20_000  # the largest installation of the growth table, scanned within:
AIM_LARGE_S, AIM_LARGE_PSS_MIB = 35.0, 1.2 * 1024  # seconds and MiB of PSS summed over the process tree
AIM_VERSION_S, AIM_SMALL_SCAN_S = 0.15, 0.6  # start-up: `--version`, and `scan` of examples/argocd-basic
AIM_LOG_RATIO = 0.9  # log pass throughput / grep -F throughput, at least
AIM_OBJECT_RATIO = 0.17  # object pass time / bare parse time, at most
AIM_JSON_MBS = 150.0  # scan of the bundle written as collect writes it: MB (10^6 bytes) of objects per second, at least
AIM_GROWTH_SPREAD = 0.2  # growth table: max/min - 1 of time per object and of RSS per object, at most
GROWTH_APPS = "200,2000,20000"  # default sizes of the growth table (pods: 10 per app, logs in proportion)
PODS_PER_APP = DEFAULT_PODS // DEFAULT_APPS
T = TypeVar("T")
SCAN_OK = (0, 1)  # scan exits 1 when a finding reaches --fail-on; its output is checked to be JSON


@dataclass
class Run:
    """One measured child process."""

    wall: float  # seconds
    maxrss_mib: float  # ru_maxrss of the child (the largest of it and its reaped descendants)
    tree_rss_mib: float | None  # sampled peak of the summed RSS of the child and its descendants
    rc: int
    stdout: Path
    stderr: Path
    cmd: list[str]
    tree_pss_mib: float | None = None  # sampled peak of their summed PSS (shared pages counted once)

    def context(self) -> str:
        """The command line and the end of its stderr, for error messages."""
        return command_context(self.cmd, self.stderr)


class Row(NamedTuple):
    """One line of the results table."""

    metric: str
    value: str
    aim: str = ""
    status: str = ""
    detail: str = ""


class BenchError(Exception):
    """A step of the benchmark could not run; the message says which and why."""


def measure(cmd: Sequence[str | os.PathLike[str]], workdir: Path, name: str, env: dict[str, str] | None = None,
            ok_codes: Sequence[int] | None = (0,), sample_tree: bool = False) -> Run:
    """Run ``cmd`` once; wall time from spawn to reap, peak RSS from ``os.wait4``.

    ``ok_codes`` None accepts any exit code; ``sample_tree`` also samples the process tree's RSS.
    """
    out, err = workdir / f"{name}.stdout", workdir / f"{name}.stderr"
    with open(out, "wb") as fo, open(err, "wb") as fe:
        t0 = time.perf_counter()
        proc = subprocess.Popen([os.fspath(c) for c in cmd], stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, env=env)
        sampler = TreeWatch(proc.pid) if sample_tree and Path("/proc/self/status").exists() else None
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if sampler is not None:
        sampler.stop()
    tree = sampler.tree_peak / MIB if sampler is not None else None
    pss = sampler.pss_peak / MIB if sampler is not None else None
    proc.returncode = rc = os.waitstatus_to_exitcode(status)
    run = Run(wall, usage.ru_maxrss / 1024, tree, rc, out, err, [os.fspath(c) for c in cmd], pss)
    if ok_codes is not None and rc not in ok_codes:
        raise BenchError(f"{name}: exited with {rc}{run.context()}")
    return run


def best_of(n: int, cmd: Sequence[str | os.PathLike[str]], workdir: Path, name: str,
            env: dict[str, str] | None = None, ok_codes: Sequence[int] | None = (0,),
            sample_tree: bool = False) -> Run:
    """Run ``cmd`` ``n`` times; the fastest wall time and the highest peak RSS."""
    runs = [measure(cmd, workdir, name, env, ok_codes, sample_tree) for _ in range(n)]
    fastest = min(runs, key=lambda r: r.wall)
    fastest.maxrss_mib = max(r.maxrss_mib for r in runs)
    trees = [r.tree_rss_mib for r in runs if r.tree_rss_mib is not None]
    fastest.tree_rss_mib = max(trees) if trees else None
    psss = [r.tree_pss_mib for r in runs if r.tree_pss_mib is not None]
    fastest.tree_pss_mib = max(psss) if psss else None
    return fastest


def files_under(path: Path) -> list[Path]:
    """Regular files below ``path``, sorted."""
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []


def warm_cache(files: Sequence[Path]) -> tuple[int, float]:
    """Read every file once so that all measurements run with a warm page cache."""
    t0 = time.perf_counter()
    total = 0
    buf = bytearray(8 * MIB)
    for p in files:
        with open(p, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                total += n
    return total, time.perf_counter() - t0


@dataclass
class ScanSummary:
    """What ``scan -o json`` reported, as far as the document tells."""

    findings: int | None = None
    severities: dict[str, int] | None = None
    errors: int | None = None
    source: dict[str, Any] | None = None

    def describe(self) -> str:
        """The tool's view of the input, for the detail column."""
        parts = []
        if self.source:
            parts += [f"{self.source[k]} {label}" for k, label in
                      (("objects", "objects"), ("logFiles", "log files"), ("auditFiles", "audit files"))
                      if k in self.source]
        if self.errors is not None:
            parts.append(f"{self.errors} input errors")
        return ", ".join(parts)


def in_child(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a forked process. Whatever it allocates stays out of this process's peak RSS, which Linux
    passes on to every process started afterwards as the floor of its ``ru_maxrss`` (the parent's pages are
    counted at exec): the measuring process must stay small."""
    with ProcessPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args).result()


def scan_summary(run: Run) -> ScanSummary:
    """Parse ``scan -o json`` output (which must be JSON whatever the exit code) into a summary, in a child
    process (``in_child``: the output of a large scan takes hundreds of MiB once parsed)."""
    return in_child(_scan_summary, run)


def _scan_summary(run: Run) -> ScanSummary:
    try:
        doc: Any = json.loads(run.stdout.read_bytes())
    except ValueError as e:
        raise BenchError(f"scan exited with {run.rc} and its output is not JSON ({e}){run.context()}") from e
    findings = doc.get("findings") if isinstance(doc, dict) else doc
    summary = ScanSummary()
    if isinstance(findings, list):
        summary.findings = len(findings)
        summary.severities = dict(Counter(str(f.get("severity", "?")) for f in findings if isinstance(f, dict)))
    if isinstance(doc, dict):
        if isinstance(doc.get("errors"), list):
            summary.errors = len(doc["errors"])
        if isinstance(doc.get("source"), dict):
            summary.source = doc["source"]
    return summary


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (or the platform's idea of it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def tool_version(argo: Path) -> str:
    """``argo-doctor --version``, or ``?``."""
    try:
        res = subprocess.run([argo, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    found = re.match(r"argo-doctor,?\s+(?:version\s+)?(\S+)", res.stdout)  # "argo-doctor 0.1.0 (health ...)"
    return found.group(1) if res.returncode == 0 and found else "?"


def git_commit() -> str:
    """Short commit of the work tree (read-only), or ``?``."""
    try:
        res = subprocess.run(["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return res.stdout.strip() if res.returncode == 0 else "?"


def ok(flag: bool | None) -> str:
    """Mark for an aim: met, missed or not measurable."""
    return "n/a" if flag is None else ("ok" if flag else "MISSED")


def fmt(v: float | None, spec: str) -> str:
    """Format a number, or ``n/a``."""
    return "n/a" if v is None else format(v, spec)


def bundle_name(apps: int, pods: int, log_bytes: int, seed: int) -> str:
    """The folder name of a generated bundle under bench/.data/."""
    return f"bundle-a{apps}-p{pods}-l{format_size(log_bytes)}-s{seed}"


def growth_sizes(text: str) -> tuple[int, ...]:
    """``--growth``: comma-separated Application counts, or ``off`` (no growth table)."""
    if text.strip().lower() == "off":
        return ()
    try:
        sizes = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of app counts: {text!r} (e.g. 200,2000,20000, or off)") from None
    if len(sizes) < 2 or sizes[0] < 1:
        raise argparse.ArgumentTypeError(f"--growth needs at least two app counts of 1 or more, or off: {text!r}")
    return sizes


def growth_log_bytes(apps: int) -> int:
    """Log bytes of a growth bundle: the default bundle's per Application, rounded to whole MiB."""
    return max(1, round(apps * DEFAULT_LOG_BYTES / DEFAULT_APPS / MIB)) * MIB


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--apps", type=int, default=DEFAULT_APPS,
                    help=f"Applications in the bundle (default {DEFAULT_APPS})")
    ap.add_argument("--pods", type=int, default=DEFAULT_PODS,
                    help=f"workload pods in the bundle (default {DEFAULT_PODS})")
    ap.add_argument("--log-bytes", default=format_size(DEFAULT_LOG_BYTES),
                    help=f"container log volume, e.g. 200M, 1G (default {format_size(DEFAULT_LOG_BYTES)})")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument("--data", type=Path, default=None,
                    help="bundle directory (default bench/.data/bundle-a<apps>-p<pods>-l<log-bytes>-s<seed>)")
    ap.add_argument("--argo-doctor", type=Path, default=Path(sys.executable).parent / "argo-doctor",
                    help="argo-doctor executable (default: the one next to this Python)")
    ap.add_argument("--repeat", type=int, default=1, help="run each measurement N times, keep the fastest")
    ap.add_argument("--results", type=Path, nargs="?", const=BENCH / "RESULTS.md", default=None,
                    help="append the results as a markdown section to FILE (default bench/RESULTS.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 if an aim is missed")
    ap.add_argument("--growth", type=growth_sizes, default=os.environ.get("BENCH_GROWTH", GROWTH_APPS),
                    help="Application counts of the growth table (pods 10 per app, logs in proportion), "
                         f"or off (default: $BENCH_GROWTH, else {GROWTH_APPS})")
    ap.add_argument("--live-size", choices=[*SIZES, "off"], default=os.environ.get("BENCH_LIVE_SIZE", "full"),
                    help="size of the live rows: full (5000 apps, 50000 pods), small (500, 5000) or off "
                         "(default: $BENCH_LIVE_SIZE, else full)")
    ap.add_argument("--live-only", action="store_true", help="only the live rows (no bundle is generated)")
    args = ap.parse_args(argv)
    if args.live_only and args.live_size == "off":
        ap.error("--live-only with --live-size off leaves nothing to measure")
    try:
        log_bytes = parse_size(args.log_bytes)
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    data: Path = args.data or BENCH / ".data" / bundle_name(args.apps, args.pods, log_bytes, args.seed)
    argo: Path = args.argo_doctor
    try:
        return run(args, data, argo, log_bytes)
    except (BenchError, LiveError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Print rows (the first one the header) as aligned columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print()
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def compile_package() -> None:
    """Write the bytecode of the argo_doctor package this Python imports, as pip does when it installs a wheel: an
    editable install run with PYTHONDONTWRITEBYTECODE (as on this project's machines) compiles every module again
    at each start, 0.1 to 0.15 s that an installed tool never spends."""
    spec = importlib.util.find_spec("argo_doctor")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        compileall.compile_dir(location, quiet=1)


def run(args: argparse.Namespace, data: Path, argo: Path, log_bytes: int) -> int:
    """Measure the bundle rows, the growth table and the live rows as asked, print the tables, append the results."""
    if not (argo.is_file() and os.access(argo, os.X_OK)):
        raise BenchError(f"argo-doctor not found at {argo}; install the project or pass --argo-doctor PATH")
    compile_package()
    took: dict[str, float] = {}
    rows: list[Row] = []
    points: list[Point] = []
    if not args.live_only:
        t0 = time.perf_counter()
        rows, main_point = bundle_rows(args, data, argo, log_bytes, took)
        took = {"bundle rows": time.perf_counter() - t0 - took["JSON row"], **took}
        if args.growth:
            t0 = time.perf_counter()
            points = growth_points(args, argo, main_point)
            rows += growth_rows(points) + large_rows(points)
            took["growth"] = time.perf_counter() - t0
        rows = startup_rows(args, argo) + rows
    live: LiveReport | None = None
    if args.live_size != "off":
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="argo-doctor-bench-live-") as tmp:
            live = run_live(argo, SIZES[args.live_size], Path(tmp), args.repeat)
        rows += [Row(*cells) for cells in live.rows]
        took["live rows"] = time.perf_counter() - t0
    print_table([Row("metric", "value", "aim", "status", "detail"), *rows])
    if points:
        print_table(growth_table(points))
    print("\nbench: took " + ", ".join(f"{part} {secs:.0f} s" for part, secs in took.items()), file=sys.stderr)
    missed = [r.metric for r in rows if r.status == "MISSED"]
    if args.results:
        write_results(args.results, args, None if args.live_only else data, argo, log_bytes, rows, live, points)
        print(f"bench: appended to {args.results}", file=sys.stderr)
    return 1 if args.check and missed else 0


def ensure_bundle(data: Path, apps: int, pods: int, log_bytes: int, seed: int) -> None:
    """Generate the bundle into ``data`` unless it already holds one with these parameters."""
    gen = subprocess.run([sys.executable, BENCH / "generate.py", "--out", data, "--apps", str(apps),
                          "--pods", str(pods), "--log-bytes", str(log_bytes), "--seed", str(seed)], check=False)
    if gen.returncode:
        raise BenchError(f"generating the bundle into {data} failed")


def warm(data: Path) -> None:
    """Write back what generating it left dirty (the kernel's writeback would compete with the measurements: the
    20,000-Application scan took 205 s instead of 114 s right after its 13 GB were written), then read every file
    of a bundle once (warm page cache) and say so."""
    os.sync()
    files = files_under(data)
    warmed, warm_s = warm_cache(files)
    print(f"bench: bundle {data}: {warmed / MIB:.0f} MiB in {len(files)} files "
          f"(read in {warm_s:.1f}s to warm the page cache)", file=sys.stderr)


def bundle_rows(args: argparse.Namespace, data: Path, argo: Path, log_bytes: int,
                took: dict[str, float]) -> tuple[list[Row], Point]:
    """Generate the bundle and measure the log pass, the object pass, the full scan and the JSON row on it; the
    full scan is also the growth point of this size. Adds the time the JSON row took to ``took``."""
    grep = shutil.which("grep")
    if not grep:
        raise BenchError("grep not found on PATH")
    ensure_bundle(data, args.apps, args.pods, log_bytes, args.seed)
    log_files = files_under(data / "logs")
    audit_files = files_under(data / "audit")
    line_files = log_files + audit_files
    stream_bytes = sum(p.stat().st_size for p in line_files)
    audit_bytes = sum(p.stat().st_size for p in audit_files)
    warm(data)

    with tempfile.TemporaryDirectory(prefix="argo-doctor-bench-") as tmp:
        work = Path(tmp)
        print("bench: argo-doctor signatures", file=sys.stderr)
        sigs = measure([argo, "signatures"], work, "signatures")
        needles = [line.rstrip(b"\r") for line in sigs.stdout.read_bytes().split(b"\n") if line.strip()]
        if not needles:
            raise BenchError("`argo-doctor signatures` printed no needles")
        needle_file = work / "needles.txt"
        needle_file.write_bytes(b"\n".join(needles) + b"\n")

        print(f"bench: grep -c -F -f <{len(needles)} needles> over {len(line_files)} log/audit files",
              file=sys.stderr)
        grep_run = best_of(args.repeat, [grep, "-c", "-F", "-f", needle_file, "--", *line_files], work, "grep",
                           env=os.environ | {"LC_ALL": "C"}, ok_codes=(0, 1))
        grep_lines = 0
        for line in grep_run.stdout.read_text().splitlines():
            grep_lines += int(line.rsplit(":", 1)[-1])

        print("bench: log engine with every known signature on every file, and grep with the same list",
              file=sys.stderr)
        all_sigs = measure([argo, "signatures", "--all"], work, "signatures-all")
        all_needle_file = work / "needles-all.txt"
        all_needle_file.write_bytes(all_sigs.stdout.read_bytes())
        grep_all = best_of(args.repeat, [grep, "-c", "-F", "-f", all_needle_file, "--", *line_files], work,
                           "grep-all", env=os.environ | {"LC_ALL": "C"}, ok_codes=(0, 1))
        engine_all = best_of(args.repeat, [sys.executable, BENCH / "log_engine.py", *line_files], work,
                             "engine-all")
        engine_counts = json.loads(engine_all.stdout.read_text())

        print("bench: bare parse of objects/ (PyYAML CSafeLoader + json)", file=sys.stderr)
        bare = best_of(args.repeat, [sys.executable, BENCH / "bare_parse.py", data / "objects"], work, "bare")
        bare_counts = json.loads(bare.stdout.read_text())

        print("bench: argo-doctor scan <bundle>/objects -o json", file=sys.stderr)
        obj_scan = best_of(args.repeat, [argo, "scan", data / "objects", "-o", "json"], work, "scan-objects",
                           ok_codes=SCAN_OK)
        obj_summary = scan_summary(obj_scan)

        print("bench: argo-doctor scan <bundle> -o json", file=sys.stderr)
        full = best_of(args.repeat, [argo, "scan", data, "-o", "json"], work, "scan-full", ok_codes=SCAN_OK,
                       sample_tree=True)
        summary = scan_summary(full)

        t0 = time.perf_counter()
        json_row = json_bundle_row(args, data, argo, work, obj_summary)
        took["JSON row"] = time.perf_counter() - t0

    log_pass = full.wall - obj_scan.wall
    grep_mibs = stream_bytes / MIB / grep_run.wall
    log_mibs = stream_bytes / MIB / log_pass if log_pass > 0 else None
    log_ratio = log_mibs / grep_mibs if log_mibs is not None else None
    obj_ratio = obj_scan.wall / bare.wall
    grep_all_mibs = stream_bytes / MIB / grep_all.wall
    engine_all_mibs = stream_bytes / MIB / engine_all.wall
    engine_ratio = engine_all_mibs / grep_all_mibs
    default = (args.apps, args.pods, log_bytes) == (DEFAULT_APPS, DEFAULT_PODS, DEFAULT_LOG_BYTES)
    only_default = "" if default else f"; the aim is for the default bundle ({DEFAULT_APPS} apps), not checked here"
    rows: list[Row] = [
        Row("log + audit bytes", f"{stream_bytes / MIB:.1f} MiB", detail=f"of which audit {audit_bytes / MIB:.1f} MiB"),
        Row("grep -F -f signatures", f"{grep_mibs:.0f} MiB/s",
            detail=f"{grep_run.wall:.2f} s, {len(needles)} needles, {grep_lines} lines matched"),
        Row("log pass (full - objects)", f"{fmt(log_mibs, '.0f')} MiB/s", detail=f"{log_pass:.2f} s"),
        Row("log pass / grep", fmt(log_ratio, ".2f"), f">= {AIM_LOG_RATIO}",
            ok(None if log_ratio is None else log_ratio >= AIM_LOG_RATIO)),
        Row("grep -F, every known signature", f"{grep_all_mibs:.0f} MiB/s",
            detail=f"{grep_all.wall:.2f} s, {engine_counts['signatures']} needles"),
        Row("log engine, every signature, every file", f"{engine_all_mibs:.0f} MiB/s",
            detail=f"{engine_all.wall:.2f} s incl. start-up, {engine_counts['lines']} lines matched, "
            f"peak RSS {engine_all.maxrss_mib:.0f} MiB"),
        Row("log engine / grep (worst case)", f"{engine_ratio:.2f}", f">= {AIM_LOG_RATIO}",
            ok(engine_ratio >= AIM_LOG_RATIO)),
        Row("bare parse of objects/", f"{bare.wall:.2f} s",
            detail=f"{bare_counts['objects']} objects in {bare_counts['files']} files"),
        Row("object pass (scan objects/)", f"{obj_scan.wall:.2f} s",
            detail=f"exit {obj_scan.rc}, peak RSS {obj_scan.maxrss_mib:.0f} MiB; {obj_summary.describe()}"),
        Row("object pass / bare parse", f"{obj_ratio:.2f}", f"<= {AIM_OBJECT_RATIO}",
            ok(obj_ratio <= AIM_OBJECT_RATIO)),
        Row("full scan", f"{full.wall:.2f} s", f"<= {AIM_FULL_SCAN_S:g} s" if default else "",
            ok(full.wall <= AIM_FULL_SCAN_S) if default else "",
            f"exit {full.rc}; {summary.describe()}{only_default}"),
        Row("memory of full scan (PSS, process tree)", f"{fmt(full.tree_pss_mib, '.0f')} MiB",
            f"<= {AIM_PSS_MIB}" if default else "",
            ok(None if full.tree_pss_mib is None else full.tree_pss_mib <= AIM_PSS_MIB) if default else "",
            f"sum over the process tree, sampled every 0.1 s; largest process {full.maxrss_mib:.0f} MiB (wait4), "
            f"RSS sum {fmt(full.tree_rss_mib, '.0f')} MiB" + only_default),
        Row("findings", "?" if summary.findings is None else str(summary.findings),
            detail=", ".join(f"{k} {v}" for k, v in sorted((summary.severities or {}).items()))),
        json_row,
    ]
    return rows, Point(args.apps, args.pods, log_bytes, scan_objects(summary, full), full.wall, full.maxrss_mib,
                       full.tree_pss_mib)


# --------------------------------------------------------------------------------------------
# The JSON row: the bundle's objects written as `argo-doctor collect` writes them


def _plural(kind: str) -> str:
    """The resource name discovery gives a kind (regular English plurals: enough for the generator's kinds)."""
    low = kind.lower()
    if low.endswith("y"):
        return low[:-1] + "ies"
    return low + ("es" if low.endswith(("s", "x", "ch")) else "s")


def read_objects(path: str) -> list[dict[str, Any]]:
    """The objects of one object file (YAML documents or JSON), the items of a ``kind: List`` one by one."""
    with open(path, "rb") as f:
        docs = [json.load(f)] if path.endswith(".json") else list(yaml.load_all(f, Loader=yaml.CSafeLoader))
    objects: list[dict[str, Any]] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            objects += [item for item in doc["items"] if isinstance(item, dict)]
        elif isinstance(doc, dict):
            objects.append(doc)
    return objects


class PageWriter:
    """Writes objects as ``collect`` writes them: ``objects/<plural>.<group or core>/NNNN.json`` per kind
    (``<namespace>-NNNN.json`` for the kinds it lists per namespace: Secrets, ConfigMaps), pages of PAGE_SIZE
    items in a ``kind: List``, indented by 2 as the redaction pass writes JSON."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending: dict[str, list[dict[str, Any]]] = {}
        self.pages: Counter[str] = Counter()
        self.needs: set[str] = set()
        self.namespaces: set[str] = set()

    def add(self, obj: dict[str, Any]) -> None:
        """Queue one object; a full page is written at once."""
        group = str(obj.get("apiVersion") or "v1").rpartition("/")[0]
        kind = str(obj.get("kind") or "")
        key = f"{_plural(kind)}.{group or 'core'}/"
        if (group, kind) in NAMESPACE_KINDS:
            namespace = str((obj.get("metadata") or {}).get("namespace") or "")
            self.namespaces.add(namespace)
            key += f"{namespace}-"
        self.needs.add(f"{group}/{kind}" if group else kind)
        page = self.pending.setdefault(key, [])
        page.append(obj)
        if len(page) == PAGE_SIZE:
            self._write(key)

    def _write(self, key: str) -> None:
        self.pages[key] += 1
        path = self.root / "objects" / f"{key}{self.pages[key]:04d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = msgspec.json.encode({"apiVersion": "v1", "kind": "List", "items": self.pending.pop(key)})
        path.write_bytes(msgspec.json.format(body, indent=2) + b"\n")

    def close(self) -> None:
        """Write the pages not full yet."""
        for key in list(self.pending):
            self._write(key)


def converter_hash() -> str:
    """sha256 of the converter's code and page size: changing either converts again."""
    code = "".join(inspect.getsource(f) for f in (_plural, read_objects, PageWriter, convert_to_json))
    return hashlib.sha256(f"{code}{PAGE_SIZE}".encode()).hexdigest()


def convert_to_json(source: Path, out: Path) -> None:
    """Write the objects of the bundle ``source`` into the new folder ``out`` in collect's layout, with a
    ``bundle.yaml`` as collect writes it; logs and audit are left out. Files are parsed by worker processes;
    run it with ``in_child``, as it holds pages of objects."""
    writer = PageWriter(out)
    files = [str(p) for p in files_under(source / "objects") if p.suffix in (".yaml", ".yml", ".json")]
    with ProcessPoolExecutor() as pool:
        for objects in pool.map(read_objects, files):
            for obj in objects:
                writer.add(obj)
    writer.close()
    meta: dict[str, Any] = yaml.safe_load((source / "bundle.yaml").read_text()) or {}
    collected = {
        "collectedAt": meta.get("collectedAt"),
        "collectedBy": f"bench/run.py: the objects of {source.name} in collect's layout",
        "cluster": meta.get("cluster"),
        "components": [],
        "namespaces": sorted(writer.namespaces),
        "options": {"since": "86400s", "maxLogBytes": DEFAULT_MAX_LOG_BYTES, "previous": True,
                    "probeNodeClocks": False, "needs": sorted(writer.needs)},
        "skipped": [],
        "absent": [],
    }
    (out / "bundle.yaml").write_text(yaml.safe_dump(collected, sort_keys=False, width=1000))


def ensure_json_bundle(source: Path, out: Path) -> float | None:
    """Convert ``source`` into ``out`` unless ``out`` holds the conversion of the same bundle by the same code
    (stamp ``.bench-params.json``); the seconds the conversion took, None when there was nothing to do."""
    wanted = {"source": json.loads((source / STAMP_NAME).read_text()), "converter": converter_hash()}
    stamp = out / STAMP_NAME
    try:
        if json.loads(stamp.read_text()) == wanted:
            return None
    except (OSError, ValueError):
        pass
    if out.exists() and not stamp.is_file() and any(out.iterdir()):
        raise BenchError(f"{out} exists and is not a converted bundle; refusing to overwrite it")
    print(f"bench: writing the objects of {source} as collect writes them into {out}", file=sys.stderr)
    t0 = time.perf_counter()
    partial = out.with_name(out.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    in_child(convert_to_json, source, partial)
    (partial / STAMP_NAME).write_text(json.dumps(wanted, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    return time.perf_counter() - t0


def json_bundle_row(args: argparse.Namespace, data: Path, argo: Path, work: Path, yaml_scan: ScanSummary) -> Row:
    """Convert the bundle (once, cached beside it as ``<bundle>-json``) and measure the scan of the result."""
    json_data = data.with_name(data.name + "-json")
    converted = ensure_json_bundle(data, json_data)
    pages = files_under(json_data / "objects")
    object_bytes = sum(p.stat().st_size for p in pages)
    warm(json_data)
    print("bench: argo-doctor scan <bundle in collect's layout> -o json", file=sys.stderr)
    scan = best_of(args.repeat, [argo, "scan", json_data, "-o", "json"], work, "scan-json", ok_codes=SCAN_OK)
    summary = scan_summary(scan)
    mbs = object_bytes / MB / scan.wall
    objects, yaml_objects = (s.source.get("objects") if s.source else None for s in (summary, yaml_scan))
    same = "" if objects == yaml_objects else f" (the YAML bundle: {yaml_objects})"
    how = "converted in " + (f"{converted:.0f} s" if converted is not None else "an earlier run (cached)")
    return Row("JSON bundle (collect's layout)", f"{mbs:.0f} MB/s", f">= {AIM_JSON_MBS:g} MB/s",
               ok(mbs >= AIM_JSON_MBS),
               f"{object_bytes / MB:.0f} MB of objects in {len(pages)} pages of up to {PAGE_SIZE}, no logs; scan "
               f"{scan.wall:.2f} s, exit {scan.rc}, peak RSS {scan.maxrss_mib:.0f} MiB; {objects} objects{same}; "
               f"{how}")


# --------------------------------------------------------------------------------------------
# The growth table


class Point(NamedTuple):
    """One size of the growth table: the full scan of a generated bundle."""

    apps: int
    pods: int
    log_bytes: int
    objects: int
    wall: float  # seconds
    rss_mib: float  # ru_maxrss: the largest process
    pss_mib: float | None = None  # PSS summed over the process tree, sampled

    @property
    def us_per_object(self) -> float:
        """Wall time per object read, in microseconds."""
        return self.wall * 1e6 / self.objects

    @property
    def kib_per_object(self) -> float:
        """Peak RSS per object read, in KiB."""
        return self.rss_mib * 1024 / self.objects


def scan_objects(summary: ScanSummary, run: Run) -> int:
    """The number of objects ``scan -o json`` says it read."""
    objects = (summary.source or {}).get("objects")
    if not isinstance(objects, int) or objects < 1:
        raise BenchError(f"the scan's JSON does not say how many objects it read{run.context()}")
    return objects


def growth_points(args: argparse.Namespace, argo: Path, main_point: Point) -> list[Point]:
    """The full scan of a bundle of each size of ``--growth``, each generated once and cached under bench/.data/,
    each scanned once whatever ``--repeat``; the size of the main bundle reuses its full scan."""
    points = []
    with tempfile.TemporaryDirectory(prefix="argo-doctor-bench-growth-") as tmp:
        for apps in args.growth:
            pods, log_bytes = apps * PODS_PER_APP, growth_log_bytes(apps)
            if (apps, pods, log_bytes) == main_point[:3]:
                points.append(main_point)
                continue
            data = BENCH / ".data" / bundle_name(apps, pods, log_bytes, args.seed)
            ensure_bundle(data, apps, pods, log_bytes, args.seed)
            warm(data)
            print(f"bench: growth: argo-doctor scan <{apps} apps> -o json", file=sys.stderr)
            scan = measure([argo, "scan", data, "-o", "json"], Path(tmp), f"growth-{apps}", ok_codes=SCAN_OK,
                           sample_tree=True)
            points.append(Point(apps, pods, log_bytes, scan_objects(scan_summary(scan), scan), scan.wall,
                                scan.maxrss_mib, scan.tree_pss_mib))
    return points


def spread(values: Sequence[float]) -> float:
    """max / min - 1."""
    return max(values) / min(values) - 1


def growth_rows(points: Sequence[Point]) -> list[Row]:
    """The two aims of the growth table: time and RSS per object stay within AIM_GROWTH_SPREAD across sizes."""
    rows = []
    measures: tuple[tuple[str, str, Callable[[Point], float], Callable[[Point], float]], ...] = (
        ("time", "us", lambda p: p.us_per_object, lambda p: p.wall * 1e6),
        ("RSS", "KiB", lambda p: p.kib_per_object, lambda p: p.rss_mib * 1024))
    for metric, unit, per_object, total in measures:
        values = [per_object(p) for p in points]
        marginal = [(total(b) - total(a)) / (b.objects - a.objects) for a, b in pairwise(points)
                    if b.objects != a.objects]
        rows.append(Row(f"growth: {metric} per object, spread", f"{spread(values):.0%}",
                        f"<= {AIM_GROWTH_SPREAD:.0%}", ok(spread(values) <= AIM_GROWTH_SPREAD),
                        f"{min(values):.1f} to {max(values):.1f} {unit}/object over {len(points)} sizes "
                        f"({', '.join(str(p.apps) for p in points)} apps); from one size to the next, "
                        f"{', '.join(f'{m:.1f}' for m in marginal)} {unit} per added object"))
    return rows


def large_rows(points: Sequence[Point]) -> list[Row]:
    """The aims of the largest installation (AIM_LARGE_APPS Applications), when the growth table has it."""
    large = next((p for p in points if p.apps == AIM_LARGE_APPS), None)
    if large is None:
        return []
    name = f"{AIM_LARGE_APPS:,} apps"
    return [Row(f"{name}: full scan", f"{large.wall:.1f} s", f"<= {AIM_LARGE_S:g} s", ok(large.wall <= AIM_LARGE_S),
                f"{large.objects} objects, {large.pods} pods, {format_size(large.log_bytes)} logs"),
            Row(f"{name}: memory (PSS, process tree)", f"{fmt(large.pss_mib, '.0f')} MiB",
                f"<= {AIM_LARGE_PSS_MIB:.0f}",
                ok(None if large.pss_mib is None else large.pss_mib <= AIM_LARGE_PSS_MIB),
                f"largest process {large.rss_mib:.0f} MiB (wait4)")]


def startup_rows(args: argparse.Namespace, argo: Path) -> list[Row]:
    """Start-up: `argo-doctor --version`, and the scan of the smallest example, best of ``--repeat``."""
    with tempfile.TemporaryDirectory(prefix="argo-doctor-bench-start-") as tmp:
        version = best_of(max(args.repeat, 5), [argo, "--version"], Path(tmp), "version")
        small = best_of(max(args.repeat, 5), [argo, "scan", BENCH.parent / "examples" / "argocd-basic", "-o", "json"],
                        Path(tmp), "scan-basic", ok_codes=SCAN_OK)
    return [Row("start-up: --version", f"{version.wall:.3f} s", f"<= {AIM_VERSION_S:g} s",
                ok(version.wall <= AIM_VERSION_S), f"best of {max(args.repeat, 5)}"),
            Row("start-up: scan examples/argocd-basic", f"{small.wall:.2f} s", f"<= {AIM_SMALL_SCAN_S:g} s",
                ok(small.wall <= AIM_SMALL_SCAN_S), f"best of {max(args.repeat, 5)}, -o json, exit {small.rc}")]


def growth_table(points: Sequence[Point]) -> list[list[str]]:
    """The growth table: a header, one line per size, the spread."""
    rows = [["apps", "pods", "logs", "objects", "wall s", "peak RSS MiB", "us/object", "KiB/object"]]
    rows += [[str(p.apps), str(p.pods), format_size(p.log_bytes), str(p.objects), f"{p.wall:.2f}",
              f"{p.rss_mib:.0f}", f"{p.us_per_object:.1f}", f"{p.kib_per_object:.2f}"] for p in points]
    rows.append(["spread (max/min - 1)", "", "", "", "", "", f"{spread([p.us_per_object for p in points]):.0%}",
                 f"{spread([p.kib_per_object for p in points]):.0%}"])
    return rows


def write_results(path: Path, args: argparse.Namespace, data: Path | None, argo: Path, log_bytes: int,
                  rows: Sequence[Row], live: LiveReport | None = None, points: Sequence[Point] = ()) -> None:
    """Append one markdown section with the date, machine, parameters, the table and the growth table (`data`
    None: no bundle rows were measured)."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    params = []
    if data is not None:
        stamp = json.loads((data / STAMP_NAME).read_text())
        params.append(f"- parameters: apps {args.apps}, pods {args.pods}, log bytes {format_size(log_bytes)}, "
                      f"audit bytes {stamp['audit_bytes'] / MIB:.1f} MiB, seed {args.seed}, best of {args.repeat}")
    if live is not None:
        params.append(f"- {live.params}")
    lines = []
    if not path.exists() or path.stat().st_size == 0:
        lines += ["# argo-doctor benchmark results", "",
                  "Sections appended by `bench/run.py --results`; bench/README.md explains each number.", ""]
    lines += [
        f"## {'Live, ' if data is None else ''}{now}: {ncpu} CPU, {cpu_model()}", "",
        *params,
        f"- argo-doctor {tool_version(argo)}, commit {git_commit()}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}", "",
        "| metric | value | aim | status | detail |", "|---|---:|---|---|---|",
    ]
    lines += [f"| {' | '.join(r)} |" for r in rows]
    if points:
        table = growth_table(points)
        lines += ["", "Growth (full scans; pods 10 per app, logs in proportion; each size scanned once):", "",
                  f"| {' | '.join(table[0])} |", "|" + "---:|" * len(table[0])]
        lines += [f"| {' | '.join(r)} |" for r in table[1:]]
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    sys.exit(main())
