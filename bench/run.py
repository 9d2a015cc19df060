#!/usr/bin/env python3
"""Benchmark argo-doctor on a large synthetic bundle.

Generates the bundle if needed (``bench/generate.py``), then measures, with a warm page
cache: the full ``argo-doctor scan``, the scan of ``objects/`` alone, ``grep -F`` with the
tool's own log signatures over the same logs, and a bare PyYAML/json parse of the same
object files; then the live rows (``bench/live.py``): ``collect`` and ``scan --live`` against a
synthetic installation served by a fake kube-apiserver, and the scan of the collected bundle.
Prints a table against the aims; ``--results`` appends it to a markdown file. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from generate import format_size, parse_size

from live import SIZES, LiveError, LiveReport, TreeWatch, command_context, run_live

BENCH = Path(__file__).resolve().parent
MIB = 2**20
AIM_LOG_RATIO = 0.33  # log pass throughput / grep -F throughput, at least
AIM_OBJECT_RATIO = 1.5  # object pass time / bare parse time, at most
AIM_RSS_MIB = 500  # peak RSS of the full scan, below
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
    proc.returncode = rc = os.waitstatus_to_exitcode(status)
    run = Run(wall, usage.ru_maxrss / 1024, tree, rc, out, err, [os.fspath(c) for c in cmd])
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


def scan_summary(run: Run) -> ScanSummary:
    """Parse ``scan -o json`` output (which must be JSON whatever the exit code) into a summary."""
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
    return (res.stdout.split() or ["?"])[-1] if res.returncode == 0 else "?"  # "argo-doctor, version X"


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


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--apps", type=int, default=2000, help="Applications in the bundle (default 2000)")
    ap.add_argument("--pods", type=int, default=20000, help="workload pods in the bundle (default 20000)")
    ap.add_argument("--log-bytes", default="1G", help="container log volume, e.g. 200M, 1G (default 1G)")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument("--data", type=Path, default=None,
                    help="bundle directory (default bench/.data/bundle-a<apps>-p<pods>-l<log-bytes>-s<seed>)")
    ap.add_argument("--argo-doctor", type=Path, default=Path(sys.executable).parent / "argo-doctor",
                    help="argo-doctor executable (default: the one next to this Python)")
    ap.add_argument("--repeat", type=int, default=1, help="run each measurement N times, keep the fastest")
    ap.add_argument("--results", type=Path, nargs="?", const=BENCH / "RESULTS.md", default=None,
                    help="append the results as a markdown section to FILE (default bench/RESULTS.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 if an aim is missed")
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
    name = f"bundle-a{args.apps}-p{args.pods}-l{format_size(log_bytes)}-s{args.seed}"
    data: Path = args.data or BENCH / ".data" / name
    argo: Path = args.argo_doctor
    try:
        return run(args, data, argo, log_bytes)
    except (BenchError, LiveError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, data: Path, argo: Path, log_bytes: int) -> int:
    """Measure the bundle rows and the live rows as asked, print the table, append the results."""
    if not (argo.is_file() and os.access(argo, os.X_OK)):
        raise BenchError(f"argo-doctor not found at {argo}; install the project or pass --argo-doctor PATH")
    rows = [] if args.live_only else bundle_rows(args, data, argo, log_bytes)
    live: LiveReport | None = None
    if args.live_size != "off":
        with tempfile.TemporaryDirectory(prefix="argo-doctor-bench-live-") as tmp:
            live = run_live(argo, SIZES[args.live_size], Path(tmp), args.repeat)
        rows += [Row(*cells) for cells in live.rows]
    header = Row("metric", "value", "aim", "status", "detail")
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print()
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    missed = [r.metric for r in rows if r.status == "MISSED"]
    if args.results:
        write_results(args.results, args, None if args.live_only else data, argo, log_bytes, rows, live)
        print(f"\nbench: appended to {args.results}", file=sys.stderr)
    return 1 if args.check and missed else 0


def bundle_rows(args: argparse.Namespace, data: Path, argo: Path, log_bytes: int) -> list[Row]:
    """Generate the bundle and measure the log pass, the object pass and the full scan on it."""
    grep = shutil.which("grep")
    if not grep:
        raise BenchError("grep not found on PATH")
    gen = subprocess.run([sys.executable, BENCH / "generate.py", "--out", data, "--apps", str(args.apps),
                          "--pods", str(args.pods), "--log-bytes", str(log_bytes), "--seed", str(args.seed)],
                         check=False)
    if gen.returncode:
        raise BenchError(f"generating the bundle into {data} failed")
    log_files = files_under(data / "logs")
    audit_files = files_under(data / "audit")
    line_files = log_files + audit_files
    stream_bytes = sum(p.stat().st_size for p in line_files)
    audit_bytes = sum(p.stat().st_size for p in audit_files)
    all_files = files_under(data)
    warmed, warm_s = warm_cache(all_files)
    print(f"bench: bundle {data}: {warmed / MIB:.0f} MiB in {len(all_files)} files "
          f"(read in {warm_s:.1f}s to warm the page cache)", file=sys.stderr)

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

    log_pass = full.wall - obj_scan.wall
    grep_mibs = stream_bytes / MIB / grep_run.wall
    log_mibs = stream_bytes / MIB / log_pass if log_pass > 0 else None
    log_ratio = log_mibs / grep_mibs if log_mibs is not None else None
    obj_ratio = obj_scan.wall / bare.wall
    grep_all_mibs = stream_bytes / MIB / grep_all.wall
    engine_all_mibs = stream_bytes / MIB / engine_all.wall
    engine_ratio = engine_all_mibs / grep_all_mibs
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
        Row("full scan", f"{full.wall:.2f} s", detail=f"exit {full.rc}; {summary.describe()}"),
        Row("peak RSS of full scan", f"{full.maxrss_mib:.0f} MiB", f"< {AIM_RSS_MIB}",
            ok(full.maxrss_mib < AIM_RSS_MIB),
            "" if full.tree_rss_mib is None else
            f"largest process (wait4); sum over the process tree, sampled: {full.tree_rss_mib:.0f} MiB"),
        Row("findings", "?" if summary.findings is None else str(summary.findings),
            detail=", ".join(f"{k} {v}" for k, v in sorted((summary.severities or {}).items()))),
    ]
    return rows


def write_results(path: Path, args: argparse.Namespace, data: Path | None, argo: Path, log_bytes: int,
                  rows: Sequence[Row], live: LiveReport | None = None) -> None:
    """Append one markdown section with the date, machine, parameters and the table (`data` None: no bundle
    rows were measured)."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    params = []
    if data is not None:
        stamp = json.loads((data / ".bench-params.json").read_text())
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
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    sys.exit(main())
