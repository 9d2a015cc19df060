"""The command line: parses options, calls the rest, and turns errors into one line and an exit code."""

from __future__ import annotations

import multiprocessing
import os
import select as io_select
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from rich.console import Console

from argo_doctor import __version__, deprecations, helm, knowledge
from argo_doctor.analyzers import BASE_NEEDS
from argo_doctor.engine import (
    health_assessor,
    installation_map,
    map_needs,
    needs_for,
    parse_options,
    run_scan,
    select_analyzers,
    signatures_for,
)
from argo_doctor.errors import ArgoDoctorError, ConfigError
from argo_doctor.github import DEFAULT_API_URL
from argo_doctor.health import ARGOCD_PARITY
from argo_doctor.health import cache as lua_cache
from argo_doctor.model import DEFAULT_MAX_LOG_BYTES, Needs, Problem, Severity
from argo_doctor.remediate.notifications import URL_HELP, notifications_config
from argo_doctor.remediate.policy import Policy, load_policy
from argo_doctor.report import REPORTERS, ReportOptions
from argo_doctor.report import deprecations as deprecations_report
from argo_doctor.report import helm as helm_report
from argo_doctor.report import html as html_report
from argo_doctor.report import map as map_report
from argo_doctor.report import sarif as sarif_report
from argo_doctor.report.columns import columns
from argo_doctor.report.groups import unknown_expand
from argo_doctor.report.json import chain_json, encode, evidence_json, problem_json, timeline_json
from argo_doctor.report.table import problem_groups
from argo_doctor.snapshot import Snapshot, gc_paused
from argo_doctor.sources import bundle, rewrite
from argo_doctor.sources.audit import AuditFile
from argo_doctor.sources.files import read_option_file
from argo_doctor.sources.objects import load_yaml_file
from argo_doctor.sources.redact import SecretScrubber, clean
from argo_doctor.timeline import full_timeline, select
from argo_doctor.timeutil import format_time, parse_go_duration, parse_time

if TYPE_CHECKING:  # imported where used: `scan` of files needs no HTTP client, database driver or web server
    from argo_doctor.remediate.kube import KubeClient
    from argo_doctor.sources.live import Collected, LiveOptions, Tally

F = TypeVar("F", bound=Callable[..., Any])
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
SEVERITIES = [s.label for s in sorted(Severity, reverse=True)]


def _fail(message: str, code: int = EXIT_USAGE, scrubber: SecretScrubber | None = None) -> None:
    click.echo(f"argo-doctor: error: {clean(message, scrubber, human=True)}", err=True)
    sys.exit(code)


def _problem_lines(problems: list[Problem], scrubber: SecretScrubber | None = None) -> None:
    """Input problems on stderr, one line each, redacted and without control characters."""
    for problem in clean(problems, scrubber, human=True):
        click.echo(f"argo-doctor: {problem.location}: {problem.message}", err=True)


EXIT_SIGNALS = ("SIGTERM", "SIGHUP")


def _exit_on_signal(signo: int, frame: FrameType | None) -> None:
    """SIGTERM/SIGHUP end the command like an exception, so that temporary directories are removed; a
    second one ends the process at once."""
    signal.signal(signo, signal.SIG_DFL)
    raise SystemExit(128 + signo)


def _handle_signals() -> None:
    """Install `_exit_on_signal` for the life of the command (SIGINT already raises KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = {}
    for name in EXIT_SIGNALS:
        signo = getattr(signal, name, None)
        if signo is not None:
            previous[signo] = signal.signal(signo, _exit_on_signal)

    def restore() -> None:
        for signo, handler in previous.items():
            signal.signal(signo, handler)

    click.get_current_context().call_on_close(restore)


def _lua_dir_option(func: F) -> F:
    return click.option(
        "--lua-dir", "lua_dirs", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Health customizations in Argo CD's resource_customizations layout: DIR/<group>/<Kind>/health.lua.",
    )(func)


@dataclass(frozen=True)
class LiveArgs:
    """The live-source options of a command."""

    live: bool
    kubeconfig: Path | None
    context: str | None
    namespaces: tuple[str, ...]
    since: str
    max_log_bytes: int
    previous: bool
    probe_node_clocks: bool
    audit: tuple[Path, ...]
    quiet: bool
    timeout: str

    def options(self, metrics: bool = False) -> LiveOptions:
        """The collector's options; ConfigError for a bad --since or --timeout."""
        from argo_doctor.sources.live import LiveOptions
        since = parse_go_duration(self.since)
        if since is None or since <= 0:
            raise ConfigError(f"--since {self.since!r} is not a positive duration like 24h or 90m")
        if self.max_log_bytes <= 0:
            raise ConfigError("--max-log-bytes must be positive")
        deadline = parse_go_duration(self.timeout)
        if deadline is None or deadline <= 0:
            raise ConfigError(f"--timeout {self.timeout!r} is not a positive duration like 15m or 1h")
        return LiveOptions(self.namespaces, timedelta(seconds=since), self.max_log_bytes, self.previous,
                           self.probe_node_clocks, metrics, deadline=timedelta(seconds=deadline))


def _cluster_options(func: F) -> F:
    """The options of every command that reads a cluster: where it is, and how much to read."""
    options = [
        click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Kubeconfig file (default: in-cluster configuration in a pod, else $KUBECONFIG or "
                          "~/.kube/config)."),
        click.option("--context", help="Kubeconfig context (default: the current one)."),
        click.option("-n", "--namespace", "namespaces", multiple=True,
                     help="An Argo namespace (repeatable; default: every namespace holding an Argo component)."),
        click.option("--since", default="24h", show_default=True, help="How far back to read logs (Go duration)."),
        click.option("--max-log-bytes", type=int, default=DEFAULT_MAX_LOG_BYTES, show_default=True,
                     help="At most this many bytes of log per container."),
        click.option("--previous/--no-previous", default=True, show_default=True,
                     help="Also read the logs of the previous instance of containers that restarted."),
        click.option("--probe-node-clocks", is_flag=True,
                     help="Measure node clocks through the API server's node proxy (nodes/<node>/proxy/healthz). "
                          "Needs the nodes/proxy permission, which also allows running commands on kubelets: grant "
                          "it only for this. Without it, clocks are estimated from node Leases."),
        click.option("--timeout", default="15m", show_default=True,
                     help="Stop reading the cluster after this long (Go duration); what was not read by then is "
                          "listed in the report."),
        click.option("-q", "--quiet", is_flag=True, help="No progress display while reading the cluster."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _live_options(func: F) -> F:
    """`--live` and `--audit`, then the cluster options: for commands that read files or, with --live, a cluster."""
    func = _cluster_options(func)
    func = click.option("--audit", "audit", multiple=True, type=click.Path(exists=True, path_type=Path),
                        help="A local kube-apiserver audit log to add to a live scan (repeatable; the API does not "
                             "serve audit logs).")(func)
    return click.option("--live", is_flag=True,
                        help="Read the cluster of the kubeconfig (read-only) instead of files.")(func)


def _live_args(kwargs: dict[str, Any]) -> LiveArgs:
    """The live options out of a command's keyword arguments (`collect` has neither --live nor --audit)."""
    return LiveArgs(
        live=kwargs.pop("live", True), kubeconfig=kwargs.pop("kubeconfig"), context=kwargs.pop("context"),
        namespaces=kwargs.pop("namespaces"), since=kwargs.pop("since"), max_log_bytes=kwargs.pop("max_log_bytes"),
        previous=kwargs.pop("previous"), probe_node_clocks=kwargs.pop("probe_node_clocks"),
        audit=kwargs.pop("audit", ()), quiet=kwargs.pop("quiet"), timeout=kwargs.pop("timeout"),
    )


def _progress(quiet: bool) -> tuple[Callable[[Tally], None], Callable[[], None]]:
    """A progress display on stderr (a live line on a terminal, nothing otherwise), and its end."""
    console = Console(stderr=True)
    shown = not quiet and console.is_terminal
    lock = threading.Lock()
    status = console.status("reading the cluster…") if shown else None
    if status is not None:
        status.start()

    def update(tally: Tally) -> None:
        if status is not None:
            with lock:
                status.update(f"{tally.phase}: {tally.kinds} lists, {tally.pages} pages, {tally.objects:,} objects, "
                              f"{tally.logs} logs ({tally.log_bytes / 1e6:.1f} MB), {tally.skipped} refused")

    def done() -> None:
        if status is not None:
            status.stop()

    return update, done


def _collect(live: LiveArgs, root: Path, needs: Needs, metrics: bool = False,
             written: Callable[[Path], None] | None = None) -> Collected:
    """Read the cluster, as the API gives it, into the bundle folder `root`, with progress on stderr; `written` is
    told of each object file written."""
    from argo_doctor.sources import live as live_source

    options = live.options(metrics)
    client = live_source.connect(live.kubeconfig, live.context)
    update, done = _progress(live.quiet)
    try:
        result = live_source.collect(client, root, needs, options, update, written)
    finally:
        done()
        client.close()
    if not live.quiet:
        click.echo(result.summary(), err=True)
    return result


DEPLOYED_NEEDS = BASE_NEEDS | Needs(frozenset({"argoproj.io/Application"}), app_resources=True)
"""What `health --live` and `deprecations --live` read: the objects Applications deploy."""


def _live_bundle(paths: tuple[Path, ...], workdir: Path, live: LiveArgs, needs: Needs,
                 metrics: bool = False, written: Callable[[Path], None] | None = None) -> Path | None:
    """With --live, the cluster collected into a private folder of `workdir` (files may not be given too); None
    without --live. The folder (mode 0700, removed when the command ends) is not redacted: reading it fingerprints
    Secrets, and every output is redacted, as for any bundle."""
    if not live.live:
        return None
    if paths:
        raise ConfigError("give either files or --live, not both")
    _collect(live, workdir / "live", needs, metrics, written)
    return workdir / "live"


def _snapshot(paths: tuple[Path, ...], workdir: Path, live: LiveArgs, needs: Needs) -> Snapshot:
    """The Snapshot of the files, or of the cluster with --live (collected into `workdir`, each object file parsed
    on worker processes as soon as it is written, while the collection goes on)."""
    workers = os.cpu_count() or 1
    early = bundle.EarlyLoads(workdir / "live", workers) if live.live and not paths and workers > 1 else None
    try:
        folder = _live_bundle(paths, workdir, live, needs, written=early.written if early is not None else None)
        if folder is not None:
            snap = bundle.load([folder], workdir, early)
            snap.source = f"live: {snap.meta.get('cluster', {}).get('name') or 'cluster'}"
            for path in live.audit:
                snap.audit_files.append(AuditFile(path, str(path)))
            return snap
    finally:
        if early is not None:
            early.close()
    if not paths:
        raise ConfigError("nothing to read: give bundles, tarballs, dumps or files, or --live")
    if live.audit:
        raise ConfigError("--audit adds audit logs to a --live scan; a bundle holds its own under audit/")
    return bundle.load(paths, workdir)


def _output_closed(exc: BaseException) -> bool:
    """Whether `exc` is the write to a standard output or error whose reader went away (`... | head`), and not
    a broken connection elsewhere (a socket to the cluster), which stays an error."""
    if not isinstance(exc, BrokenPipeError):
        return False
    if not hasattr(io_select, "poll"):
        return True
    for fd in (1, 2):
        try:
            poller = io_select.poll()
            poller.register(fd, io_select.POLLOUT)
            if any(events & (io_select.POLLERR | io_select.POLLHUP) for _, events in poller.poll(0)):
                return True
        except (OSError, ValueError):
            continue
    return False


def _die_of_broken_pipe() -> NoReturn:
    """End as `grep` and `kubectl` do when their reader goes away: killed by SIGPIPE, without a message (exit
    status 141 in a shell). Temporary directories are already removed: the commands' `with` blocks have ended."""
    signo = getattr(signal, "SIGPIPE", None)
    if signo is not None:
        try:
            signal.signal(signo, signal.SIG_DFL)
            os.kill(os.getpid(), signo)
        except (OSError, ValueError):
            pass
    os._exit(128 + (signo or 13))


class _Main(click.Group):
    """The command group: a standard output closed by its reader ends any command quietly (`_die_of_broken_pipe`),
    including `--help` and `--version`, rather than as an internal error or click's exit status 1."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError as exc:
            if _output_closed(exc):
                _die_of_broken_pipe()
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                if sys.stdout is not None:
                    sys.stdout.flush()  # what is still buffered meets the closed pipe here, not at interpreter exit
        except BrokenPipeError as exc:
            if _output_closed(exc):
                _die_of_broken_pipe()
            raise
        except SystemExit as exc:
            # rich's Console meets a closed stdout by pointing it at /dev/null and exiting 1, which reads as
            # "findings" (`Console.on_broken_pipe`)
            if exc.code == 1 and isinstance(exc.__context__, BrokenPipeError):
                _die_of_broken_pipe()
            raise


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="argo-doctor",
                      message=f"%(prog)s %(version)s (health checks as in Argo CD {ARGOCD_PARITY})")
def main() -> None:
    """Find out why Argo CD misbehaves, from a bundle, a cluster-info dump or manifest files.

    Every command's output may be cut short by its reader (`argo-doctor scan B -o json | head`): the command
    then ends without a message, killed by SIGPIPE like grep and kubectl (exit status 141 in a shell; 0 when
    only its last write was cut short).
    """
    _handle_signals()


@dataclass
class _Ending:
    """How the process ends after its command (see `run`)."""

    at_once: bool = False


_ENDING = _Ending()


def run() -> None:
    """The `argo-doctor` program: `main`. After `scan`, `timeline` and `map`, which only read and write their
    report, the process ends as soon as its output is flushed, without the interpreter freeing, object by object,
    all that the command made (0.13 s after a scan of the benchmark's bundle). Nothing else is left to end then:
    their `with` blocks removed their temporary directories and stopped their worker processes, whatever the exit
    status; with another thread or a child process still there, the interpreter ends as usual."""
    _ENDING.at_once = False
    try:
        main()
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
        if _ENDING.at_once and isinstance(code, int) and _alone() and _flushed():
            os._exit(code)
        raise


def _alone() -> bool:
    """No other thread runs, and no child process of `multiprocessing` (a pool's worker) is left."""
    return threading.active_count() == 1 and not multiprocessing.active_children()


def _flushed() -> bool:
    """Standard output and error flushed; False when one is closed or broken (the interpreter's exit reports it)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def _check_expand(expand: tuple[str, ...]) -> None:
    """A usage error for an `--expand` value that is neither a rule id, a group id nor `all`."""
    rules = sorted(analyzer.id for analyzer in select_analyzers())
    bad = unknown_expand(expand, rules)
    if bad:
        raise ConfigError(f"--expand {bad[0]!r} is neither a rule id, a group id (RULE:group:HEX, as the reports "
                          f"show) nor 'all'; rule ids: {', '.join(rules)}")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice(sorted(REPORTERS)), default="table", show_default=True)
@click.option(
    "--fail-on", type=click.Choice([*SEVERITIES, "never"]), default="high", show_default=True,
    help="Exit 1 when a finding is at least this severe.",
)
@click.option("--rule", "rules", multiple=True, help="Run only this rule (repeatable).")
@click.option("--skip-rule", "skip_rules", multiple=True, help="Do not run this rule (repeatable).")
@click.option("--option", "option_pairs", multiple=True, metavar="RULE.KEY=VALUE",
              help="A rule option, e.g. node-clock-skew.threshold=5 (`argo-doctor rules` lists them).")
@click.option("--expand", "expand", multiple=True, metavar="RULE|GROUP",
              help="List every finding of this rule's groups, or of this group id, instead of the group "
                   "(repeatable; `all` for every group).")
@_lua_dir_option
@_live_options
def scan(
    paths: tuple[Path, ...], output: str, fail_on: str, rules: tuple[str, ...], skip_rules: tuple[str, ...],
    option_pairs: tuple[str, ...], expand: tuple[str, ...], lua_dirs: tuple[Path, ...], **live_kwargs: Any,
) -> None:
    """Scan bundles, tarballs, cluster-info dumps or object files, or the cluster with --live, and report findings.

    Exit status: 0 when no finding reaches --fail-on, 1 when one does, 2 for a usage error or
    unreadable input.
    """
    # no cyclic GC (in `timeline` and `map` too): what the command makes lives until it ends, and it makes few
    # cycles (737 objects on the bench bundle), while each collection after a load or a pass would walk everything
    # that the pass made
    _ENDING.at_once = True  # in `timeline` and `map` too (see `run`)
    with _errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir, \
            gc_paused(freeze=True):
        analyzers = select_analyzers(rules, skip_rules)
        options = parse_options(option_pairs, analyzers)
        _check_expand(expand)
        snap = guard.watch(_snapshot(paths, Path(workdir), _live_args(live_kwargs), needs_for(analyzers)))
        result = run_scan(snap, analyzers, lua_dirs, options)
        REPORTERS[output](result, sys.stdout, ReportOptions(fail_on, frozenset(expand)))
        sys.stdout.flush()
    if result.crashed:
        _fail(f"internal error in rule(s) {', '.join(result.crashed)}; their findings may be missing (see errors)",
              EXIT_INTERNAL)
    if fail_on != "never" and any(f.severity >= Severity.parse(fail_on) for f in result.findings):
        sys.exit(EXIT_FINDINGS)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--around", help="Centre of the window: an RFC 3339 time (e.g. 2026-11-22T15:03:00Z).")
@click.option("--window", default="10m", show_default=True, help="Width of the window around --around (Go duration).")
@click.option("--component", "components", multiple=True,
              help="Only this component (repo-server, application-controller, events, kube-apiserver, ...).")
@click.option("-o", "--output", type=click.Choice(["table", "json", "html"]), default="table", show_default=True)
@_live_options
def timeline(
    paths: tuple[Path, ...], around: str | None, window: str, components: tuple[str, ...], output: str,
    **live_kwargs: Any,
) -> None:
    """Print one ordered timeline of every timestamped fact of every component, with the causal
    chains the findings establish."""
    _ENDING.at_once = True
    with _errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir, \
            gc_paused(freeze=True):  # as `scan`
        centre = parse_time(around) if around else None
        width = parse_go_duration(window)
        if around and centre is None:
            raise ConfigError(f"--around {around!r} is not an RFC 3339 time (e.g. 2026-11-22T15:03:00Z)")
        if width is None:
            raise ConfigError(f"--window {window!r} is not a Go duration of at most 2562047h (e.g. 10m, 2h)")
        analyzers = select_analyzers()
        snap = guard.watch(_snapshot(paths, Path(workdir), _live_args(live_kwargs), needs_for(analyzers)))
        result = run_scan(snap, analyzers)
        human = output != "json"
        every = full_timeline(snap, result.findings)
        entries = clean(select(every, centre, width, components), snap.scrubber, human=human)
        chained = clean([f for f in result.findings if f.chain], snap.scrubber, human=human)
        # the timeline's own reads (logs around the findings) may add problems after the scan
        problems = clean(list(dict.fromkeys(snap.problems)), snap.scrubber, human=human)
        if output == "html":
            html_report.render_timeline(snap, entries, result.findings, problems, sys.stdout, centre, window)
            return
        if not human:
            doc = {
                "timeline": [timeline_json(e) for e in entries],
                "chains": [{"finding": f.id, "title": f.title, "steps": [
                    {**evidence_json(f.evidence[s["evidence"]]), "gapSeconds": s["gapSeconds"]} for s in chain_json(f)
                ]} for f in chained],
                "errors": [problem_json(p) for p in problems],
            }
            click.echo(encode(doc, snap.scrubber))
            return
        previous = None
        rows = [("TIME", "+S", "COMPONENT", "WHAT", "WHERE")]
        for entry in entries:
            gap = "" if previous is None else f"{(entry.time - previous).total_seconds():+.0f}"
            previous = entry.time
            rows.append((format_time(entry.time) or "", gap, entry.component, " ".join(entry.excerpt.split())[:160],
                         entry.location))
        if entries:
            click.echo(columns(rows))
        elif every:
            click.echo(f"no timeline entry: none of the {len(every)} timestamped facts of the input is in the window "
                       "or of the components chosen")
        else:
            click.echo("no timeline entry: the input holds no timestamped log line, event, audit record or object")
        for finding in chained:
            click.echo(f"\nCausal chain ({finding.rule}): {finding.title}")
            for step in chain_json(finding):
                item = finding.evidence[step["evidence"]]
                gap = "" if step["gapSeconds"] is None else f"+{step['gapSeconds']:g} s  "
                click.echo(f"  → {format_time(item.time)}  {gap}{' '.join(item.excerpt.split())[:140]}")
        for heading, group in problem_groups(problems):
            click.echo(f"\n{heading}")
            for problem in group:
                click.echo(f"  {problem.location}: {problem.message}")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_lua_dir_option
@_live_options
def health(paths: tuple[Path, ...], output: str, lua_dirs: tuple[Path, ...], **live_kwargs: Any) -> None:
    """Print the health Argo CD would show for every object in the files.

    Each file's objects are assessed as they are: an object read more than once (two collections of one cluster)
    is shown once per copy, and the table then starts with the LOCATION of each.
    Lua health customizations come from an argocd-cm ConfigMap among the inputs and from --lua-dir.
    """
    with _errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        snap = guard.watch(_snapshot(paths, Path(workdir), _live_args(live_kwargs), DEPLOYED_NEEDS))
        assessor = health_assessor(snap, lua_dirs)
        # every copy of an object read more than once is assessed, with its location: no copy is left out here
        copies = [*snap.all(), *(d.dropped for d in snap.duplicates)]
        rows = [(obj, assessor.assess(obj.raw))
                for obj in sorted(copies, key=lambda o: (o.location.split(":")[0], o.kind, o.namespace, o.name))]
        notes = {d.note for d in snap.duplicates}
        problems = [*(p for p in snap.problems if p not in notes),
                    *(Problem(p.location, p.message, p.kind) for p in assessor.problems)]
        if output == "json":
            doc = {
                "objects": [
                    {
                        "apiVersion": o.api_version, "kind": o.kind, "namespace": o.namespace, "name": o.name,
                        "location": o.location,
                        "health": {"status": h.status.value, "message": h.message} if h else None,
                    }
                    for o, h in rows
                ],
                "errors": [problem_json(p) for p in problems],
            }
            sys.stdout.write(encode(doc, snap.scrubber) + "\n")
            return
        lines: list[tuple[str, ...]] = [("KIND", "NAMESPACE", "NAME", "HEALTH", "MESSAGE")]
        lines += clean([
            (o.kind, o.namespace, o.name, h.status.value if h else "-", " ".join(h.message.split()) if h else "")
            for o, h in rows
        ], snap.scrubber, human=True)
        if snap.duplicates:  # the copies of one object differ only by where they were read
            locations = clean([o.location for o, _ in rows], snap.scrubber, human=True)
            lines = [(where, *line) for where, line in zip(["LOCATION", *locations], lines, strict=True)]
        click.echo(columns(lines))
        _problem_lines(problems, snap.scrubber)


@main.command("collect")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path),
              help="A new folder, or a FILE.tar.gz (or .tgz, .tar) to write.")
@click.option("--rule", "rules", multiple=True,
              help="Collect only what this rule reads (repeatable; default: every rule).")
@click.option("--no-redact", is_flag=True,
              help="Keep Secret values, tokens and passwords as they are. The bundle then holds credentials: do not "
                   "share it.")
@_cluster_options
def collect_command(out: Path, rules: tuple[str, ...], no_redact: bool, **live_kwargs: Any) -> None:
    """Read the cluster (read-only) into a v1 bundle that `scan` reads as it reads the cluster, redacted.

    Exit status: 0 when the bundle is written (reads the API refused are listed in its bundle.yaml), 2 for bad
    options or an unreachable cluster.
    """
    problems: list[Problem] = []
    counts: dict[str, int] = {}
    with _errors_to_exit():
        tarball = out.name.endswith(bundle.TARBALL_SUFFIXES)
        if out.exists() and (tarball or not out.is_dir() or any(out.iterdir())):
            raise ConfigError(f"{out} exists; give a new folder or file name")
        parent = out.absolute().parent
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise ConfigError(f"cannot write into {parent}: not a folder this user may write to")
        if no_redact:
            click.echo("argo-doctor: WARNING: --no-redact: the bundle will hold Secret values, tokens and passwords "
                       "in clear text, readable only by this user. Do not share it; delete it when done.", err=True)
        live = _live_args(live_kwargs)
        needs = needs_for(select_analyzers(rules))
        # the cluster is read as it is into a private folder beside the output (mode 0700, same file system); the
        # redaction's first pass then learns every Secret value before it writes anything
        with tempfile.TemporaryDirectory(prefix=".argo-doctor-", dir=parent) as workdir:
            raw = Path(workdir) / "bundle"
            umask = os.umask(0o077) if no_redact else None  # credentials in clear: files only this user reads
            try:
                _collect(live, raw, needs)
            finally:
                if umask is not None:
                    os.umask(umask)
            if not no_redact:
                counts = dict(rewrite.redact_bundle(raw, out, problems))
            elif tarball:
                rewrite.write_tarball(raw, out)
                out.chmod(0o600)
            else:
                shutil.move(raw, out)
    _problem_lines(problems)
    for kind, count in sorted(counts.items()):
        click.echo(f"argo-doctor: redacted {count} {kind}", err=True)
    click.echo(str(out))


@main.command("redact")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path),
              help="The redacted copy: a new folder, or FILE.tar.gz (default: SOURCE-redacted, or "
                   "NAME-redacted.tar.gz for a tarball).")
@click.option("--force", is_flag=True, help="Write into an output folder that is not empty.")
def redact_command(source: Path, out: Path | None, force: bool) -> None:
    """Write a redacted copy of a bundle (folder or tarball): Secret values become fingerprints, and tokens, keys
    and passwords are masked in objects, logs and audit events, as `collect` does. Prints what it masked, by kind,
    never a value; redacting the copy again changes nothing.

    Exit status: 0 when the copy is written, 2 for bad options or an unreadable bundle.
    """
    problems: list[Problem] = []
    with _errors_to_exit():
        if out is None:
            name = source.name
            for suffix in bundle.TARBALL_SUFFIXES:
                if name.endswith(suffix):
                    out = source.with_name(name.removesuffix(suffix) + "-redacted.tar.gz")
                    break
            else:
                out = source.with_name(name + "-redacted")
        counts = rewrite.redact_bundle(source, out, problems, force=force)
    _problem_lines(problems)
    for kind, count in sorted(counts.items()):
        click.echo(f"argo-doctor: redacted {count} {kind}", err=True)
    if not counts:
        click.echo("argo-doctor: nothing to redact", err=True)
    click.echo(str(out))


@main.command("map")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice([*map_report.OUTPUTS, "sarif"]), default="table",
              show_default=True, help="table, json (docs/map-output.md), a graph: mermaid, dot, or the findings as "
                                      "SARIF 2.1.0 (docs/sarif.md).")
@_live_options
def map_command(paths: tuple[Path, ...], output: str, **live_kwargs: Any) -> None:
    """Map the installation: every Argo component with its version, replicas, nodes and ServiceAccount, how it
    integrates (which API, with what auth, for what), the permissions its ServiceAccount really has (aggregated
    ClusterRoles resolved) and the findings of rbac-overbroad, rbac-missing and component-known-bug.

    Exit status: 0, or 2 for a usage error or unreadable input.
    """
    _ENDING.at_once = True
    with _errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir, \
            gc_paused(freeze=True):  # as `scan`
        snap = guard.watch(_snapshot(paths, Path(workdir), _live_args(live_kwargs), map_needs()))
        found = installation_map(snap)
        if output == "sarif":
            click.echo(sarif_report.scan_sarif(found.result))
        else:
            click.echo(map_report.render(output, found.components, found.permissions, found.result.findings,
                                         snap.scrubber))
    _problem_lines(found.result.problems, snap.scrubber)


@main.group("lua")
def lua_group() -> None:
    """Argo CD's built-in Lua health scripts: fetch a release's into the cache, list what is cached.

    scan, health, timeline and map use the cached scripts of the installation's Argo CD version (found in the
    inputs) for the kinds that neither argocd-cm nor --lua-dir covers.
    """


@lua_group.command("fetch")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--argocd-version", "version", metavar="vX.Y.Z",
              help="The Argo CD release, v3.5.1 or 3.5.1 (default: the version of the installation in PATHS, else "
                   "the latest).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def lua_fetch(paths: tuple[Path, ...], version: str | None, output: str) -> None:
    """Download the health scripts of an Argo CD release (its source archive from GitHub), check that each compiles,
    and cache them under $XDG_CACHE_HOME/argo-doctor/lua/<version>/ with a manifest.json.

    PATHS are bundles, dumps or files as for scan, read only for the Argo CD version. Exit status: 0 when cached,
    2 for a bad version, an unreachable or refused archive.
    """
    with _errors_to_exit(), tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        if version is not None:
            version = lua_cache.check_version(version)
        elif paths:
            version = lua_cache.installed_argocd_version(bundle.load(paths, Path(workdir)))
            if version is not None:
                click.echo(f"argo-doctor: Argo CD {version} found in the inputs", err=True)
        if version is None:
            version = lua_cache.latest_version()
            click.echo(f"argo-doctor: fetching the latest Argo CD release, {version}", err=True)
        fetched = lua_cache.fetch(version)
    if output == "json":
        click.echo(encode({**lua_cache.manifest_json(fetched), "archiveSha256": fetched.archive_sha256}))
        return
    click.echo(f"Fetched {len(fetched.scripts)} health scripts of Argo CD {fetched.version} into {fetched.path}")
    click.echo(f"from {fetched.source} (sha256 {fetched.archive_sha256})\n")
    click.echo(columns([("GROUP", "KINDS"), *_kinds_by_group(fetched.scripts)]))


def _kinds_by_group(scripts: tuple[str, ...]) -> list[tuple[str, str]]:
    """Rows of (group, its kinds) for `<group>/<Kind>` keys; `_` wildcards shown as `*`."""
    groups: dict[str, list[str]] = {}
    for key in scripts:
        group, _, kind = key.rpartition("/")
        groups.setdefault(group.replace("_", "*") or "(core)", []).append(kind.replace("_", "*"))
    return [(group, ", ".join(kinds)) for group, kinds in sorted(groups.items())]


@lua_group.command("list")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def lua_list(output: str) -> None:
    """List the Argo CD versions whose health scripts are cached, newest first."""
    with _errors_to_exit():
        root = lua_cache.cache_root()
    found = lua_cache.cached_versions(root)
    if output == "json":
        click.echo(encode({"cache": str(root), "versions": [lua_cache.manifest_json(c) for c in found]}))
        return
    if not found:
        click.echo(f"argo-doctor: nothing cached in {root}; see `argo-doctor lua fetch`", err=True)
        return
    click.echo(columns([("VERSION", "SCRIPTS", "FETCHED", "PATH"),
                        *((c.version, str(len(c.scripts)), c.fetched_at, str(c.path)) for c in found)]))


@main.command()
def rules() -> None:
    """List the rules (analyzers)."""
    for analyzer in select_analyzers():
        click.echo(f"{analyzer.id:28} {analyzer.title}")
        for key, meaning in analyzer.options.items():
            click.echo(f"  --option {analyzer.id}.{key}=…  {meaning}")


@main.command()
@click.option("--rule", "rules_", multiple=True, help="Only the signatures of this rule.")
@click.option("--all", "all_", is_flag=True, help="Every signature of the knowledge base, used by a rule or not.")
def signatures(rules_: tuple[str, ...], all_: bool) -> None:
    """Print the literal log needles the engine prefilters on, one per line (for benchmarks)."""
    with _errors_to_exit():
        table = knowledge.log_signatures() if all_ else signatures_for(select_analyzers(rules_))
        for needle in dict.fromkeys(sig.needle for sig in table.values()):
            click.echo(needle.decode())


@main.command("deprecations")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--target-version", help="Kubernetes version to check against (e.g. 1.25); default: the cluster "
              "version in a bundle's bundle.yaml, else every known deprecation is listed.")
@click.option("-o", "--output", type=click.Choice(["table", "json", "markdown", "sarif"]), default="table",
              show_default=True, help="table, json, markdown, or SARIF 2.1.0 for code scanning (docs/sarif.md).")
@_live_options
def deprecations_command(paths: tuple[Path, ...], target_version: str | None, output: str, **live_kwargs: Any) -> None:
    """List uses of deprecated and removed APIs in manifests, chart templates, Kustomize trees and
    bundles (live objects: per managedFields manager and last-applied annotation). In chart templates,
    `.Capabilities` conditions (semverCompare on KubeVersion, APIVersions.Has) are decided at the target
    version; a use behind a condition that cannot be decided is listed as "may be used".

    Exit status: 0 when nothing found is certainly removed in the target version, 1 when something is,
    2 for bad options or when no input can be read.
    """
    from argo_doctor.helm.scan import chart_template_apis  # the reader of chart templates

    with _errors_to_exit(), tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        target = deprecations.parse_version(target_version) if target_version else None
        if target_version and target is None:
            raise ConfigError(f"--target-version {target_version!r} is not a Kubernetes version like 1.25")
        problems: list[Problem] = []
        # live: the objects Applications deploy, with their managedFields, and the API server's metrics
        folder = _live_bundle(paths, Path(workdir), _live_args(live_kwargs), DEPLOYED_NEEDS, metrics=True)
        if folder is not None:
            paths = (folder,)
        elif not paths:
            raise ConfigError("nothing to read: give manifests, charts or bundles, or --live")
        inputs = list(bundle.readable_inputs(paths, Path(workdir), problems))  # tarballs extracted as `scan` does
        roots = [item.path for item in inputs]
        target = target or _cluster_version(roots)
        labels = {item.path: f"{item.given.name}!" for item in inputs if item.extracted}
        if output == "sarif" and folder is None:  # SARIF: paths from the current directory, as code scanning reads
            labels = {item.path: f"{item.given}!" if item.extracted else str(item.given) for item in inputs}
        uses, found = deprecations.scan_paths(roots, target, chart_template_apis, labels)
        problems += found
    if output == "sarif":
        click.echo(sarif_report.deprecations_sarif(uses, problems, target, files=folder is None))
    else:
        click.echo(deprecations_report.render(uses, problems, target, output))
    _problem_lines(problems)
    if deprecations.removed(uses):
        sys.exit(EXIT_FINDINGS)


def _cluster_version(roots: list[Path]) -> tuple[int, int] | None:
    """The cluster version of the first bundle among the folders (bundle.yaml `cluster.version`)."""
    for root in roots:
        # the scan's own loader for settings files (regular file inside the bundle, size, depth and alias guards);
        # its problems are the scan's to report, not this look-up's
        doc = load_yaml_file(root / "bundle.yaml", "bundle.yaml", [], root, unique_keys=True)
        cluster = doc.get("cluster") if isinstance(doc, dict) else None
        if isinstance(cluster, dict):
            return deprecations.parse_version(str(cluster.get("version") or ""))
    return None


@main.command("helm-check")
@click.argument("chart", type=click.Path(path_type=Path))
@click.option("-f", "--values", "values_files", multiple=True, type=click.Path(path_type=Path),
              help="A values file, as helm template -f (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE[,KEY=VALUE]",
              help="Set values as helm template --set does (repeatable; after the -f files).")
@click.option("--set-string", "set_strings", multiple=True, metavar="KEY=VALUE[,KEY=VALUE]",
              help="Set string values as helm template --set-string does (repeatable; applied last).")
@click.option("--render-twice", is_flag=True,
              help="Also render twice with the helm binary on PATH and diff (exit 2 when that cannot be done).")
@click.option("-o", "--output", type=click.Choice(["table", "json", "sarif"]), default="table", show_default=True,
              help="table, json, or SARIF 2.1.0 for code scanning (docs/sarif.md).")
def helm_check(chart: Path, values_files: tuple[Path, ...], sets: tuple[str, ...], set_strings: tuple[str, ...],
               render_twice: bool, output: str) -> None:
    """Find template calls whose output changes on every render (genCA, randAlphaNum, now, lookup…) with the
    values in use; a call under a condition the values cannot decide is reported as "may be reached".

    Exit status: 0 when the chart renders the same every time, 1 when it does not, 2 for bad input (not a chart,
    an unreadable Chart.yaml, a values file or a --set helm would refuse). With --render-twice, 2 too when the two
    renders cannot be made (no helm on PATH, helm template fails: the reason is the last line), unless the
    analysis already found a call that changes on every render (1).
    """
    with _errors_to_exit():
        report = helm.scan_chart(chart, values_files, render_twice, sets, set_strings, strict=True)
    if output == "json":
        click.echo(encode(helm_report.report_json(report)))
    elif output == "sarif":
        click.echo(sarif_report.helm_sarif(report))
    else:
        click.echo(helm_report.report_text(report))
    if report.uses or report.render_diff:
        sys.exit(EXIT_FINDINGS)
    if render_twice and report.render_diff is None:
        sys.exit(EXIT_USAGE)


@main.group("github-app")
def github_app_group() -> None:
    """GitHub App credentials, as Argo CD uses them."""


@github_app_group.command("check")
@click.option("--app-id", required=True, help="The GitHub App's id (githubAppID).")
@click.option("--installation-id", required=True, help="The installation id (githubAppInstallationID).")
@click.option("--private-key", "private_key", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="PEM file of the app's private key (githubAppPrivateKey). Never printed.")
@click.option("--api-url", default=DEFAULT_API_URL, show_default=True,
              help="GitHub's API; for GitHub Enterprise Server, https://HOST/api/v3.")
@click.option("--clock-offset", type=float, default=0.0, show_default=True,
              help="Sign as a host whose clock is this many seconds ahead (negative: behind).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def github_app_check(
    app_id: str, installation_id: str, private_key: Path, api_url: str, clock_offset: float, output: str
) -> None:
    """Request an installation token with the JWT Argo CD would sign, and explain the answer.

    Exit status: 0 when GitHub issues a token, 1 when it refuses, 2 for bad options or an
    unreachable GitHub.
    """
    from argo_doctor.github import app as github_app
    from argo_doctor.report import github as github_report

    with _errors_to_exit():
        pem = _option_file(private_key, "--private-key", "private key")
        result = github_app.check(app_id, installation_id, pem, api_url, clock_offset)
    if output == "json":
        click.echo(encode(github_report.result_json(result)))
    else:
        click.echo(github_report.result_text(result))
    if result.error is not None:
        sys.exit(EXIT_USAGE)
    if result.status != 201:
        sys.exit(EXIT_FINDINGS)


def _kube_options(func: F) -> F:
    """--kubeconfig and --context, for the commands that write through `remediate`."""
    func = click.option("--context", help="Kubeconfig context (default: the current one).")(func)
    return click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                        help="Kubeconfig file (default: in-cluster configuration in a pod, else $KUBECONFIG or "
                             "~/.kube/config).")(func)


def _instance() -> str:
    """Who decides, for the audit trail: the pod name in a pod, else the host name."""
    return os.environ.get("POD_NAME") or socket.gethostname()


@main.group("fix")
def fix_group() -> None:
    """Fix what is safe to fix, deciding with the rules that `scan` explains with (dry run unless --apply)."""


@fix_group.command("rollout-restart")
@click.option("-n", "--namespace", required=True, help="The namespace of the Rollouts.")
@click.option("--app", help="Only the Rollouts of this Argo CD Application: NAME or APP-NAMESPACE/NAME "
                            "(default namespace argocd).")
@click.option("--name", help="Only this Rollout.")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A policy file as `serve` takes (allow-lists, cooldown, cap, single replicas); its dryRun is "
                   "ignored here: only --apply writes. Default: this namespace, 15m cooldown, no single replica.")
@click.option("--apply", is_flag=True, help="Send the patches (default: only print them).")
@click.option("--audit-db", help="Record the decisions in this audit store, and take its cooldowns into account "
                                 "(sqlite:///ABS/PATH, a path, or postgresql://...).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_kube_options
def fix_rollout_restart(namespace: str, app: str | None, name: str | None, policy_file: Path | None, apply: bool,
                        audit_db: str | None, output: str, kubeconfig: Path | None, context: str | None) -> None:
    """Restart the Rollouts that rollout-stuck-degraded finds stuck: Degraded for ProgressDeadlineExceeded while
    every pod of the current ReplicaSet is ready. Others are never restarted; each decision says why. The patch
    is `kubectl argo rollouts restart`'s, guarded by the Rollout's resourceVersion.

    Exit status: 0 when every decision was carried out (or only printed), 1 when a patch failed, 2 for bad options
    or an unreachable cluster.
    """
    from argo_doctor.remediate.kube import KubeClient
    from argo_doctor.remediate.restarter import Restarter
    from argo_doctor.remediate.store import open_store
    from argo_doctor.report import remediate as remediate_report

    with _errors_to_exit():
        rules_policy = load_policy(policy_file) if policy_file else Policy(namespaces=(namespace,),
                                                                           applications=("*",), source="default")
        target = None
        if app:
            app_ns, _, app_name = app.rpartition("/")
            target = (app_ns or "argocd", app_name)
        store = open_store(audit_db) if audit_db else None
        client = KubeClient.connect(kubeconfig, context)
        try:
            restarter = Restarter(client, rules_policy, store, source="fix", instance=_instance(), dry_run=not apply)
            result = restarter.rollouts(namespace, app=target, name=name)
        finally:
            client.close()
            if store is not None:
                store.close()
    if output == "json":
        click.echo(encode(remediate_report.decisions_json(result, apply)))
    else:
        click.echo(remediate_report.decisions_text(result, apply))
    if any(o.action == "failed" for o in result.outcomes):
        sys.exit(EXIT_FINDINGS)


MIN_SECRET_BYTES = 16
MAX_OPTION_FILE_BYTES = 1 << 20
"""The largest token or key file read (a PEM key is a few KiB)."""


def _option_file(path: Path, option: str, what: str) -> bytes:
    """The content of the file an option names, by the rule of inputs: a regular file, never a FIFO or a device
    (which would block or never end); ConfigError, one line, otherwise."""
    try:
        return read_option_file(path, MAX_OPTION_FILE_BYTES)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot read the {what}: {exc.strerror or exc}") from None


def _secret_file(path: Path | None, option: str, what: str) -> bytes | None:
    """A token or key from a file, without surrounding whitespace; a placeholder or a short one is refused."""
    if path is None:
        return None
    value = _option_file(path, option, what).strip()
    if len(value) < MIN_SECRET_BYTES or b"REPLACE" in value.upper():
        raise ConfigError(f"{path}: the {what} must be a random value of at least {MIN_SECRET_BYTES} bytes, not a "
                          "placeholder (e.g. `openssl rand -hex 32`)")
    return value


def _reachable(client: KubeClient) -> None:
    """The readiness probe's API check: GET /version answers."""
    client.get("/version")


@main.command()
@click.option("--listen", default="0.0.0.0:8080", show_default=True, help="HOST:PORT to listen on.")
@click.option("--policy", "policy_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The policy file: dryRun, allow.namespaces, allow.applications, cooldown, maxRestartsPerHour, "
                   "allowSingleReplica.")
@click.option("--audit-db", required=True, envvar="ARGO_DOCTOR_AUDIT_DB",
              help="sqlite:///ABS/PATH (or a path), or postgresql://... for replicas sharing one store (env "
                   "ARGO_DOCTOR_AUDIT_DB keeps a password off the command line).")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the bearer token callers send as `Authorization: Bearer <token>`.")
@click.option("--hmac-secret-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the key of `X-Argo-Doctor-Signature: sha256=<hex HMAC-SHA256 of the body>`.")
@click.option("--insecure-no-auth", is_flag=True, help="Accept unauthenticated notifications (tests only).")
@_kube_options
def serve(listen: str, policy_file: Path, audit_db: str, token_file: Path | None, hmac_secret_file: Path | None,
          insecure_no_auth: bool, kubeconfig: Path | None, context: str | None) -> None:
    """Receive Argo CD Notifications webhooks (POST /v1/notifications/argocd) and restart the Rollouts of the
    notified Application that are stuck Degraded, within the policy, with an audit trail. `notifications-config`
    prints the matching Argo CD configuration.

    Exit status: 0 after SIGTERM (requests in flight are finished), 2 for bad options or an unusable store.
    """
    from argo_doctor.remediate.kube import KubeClient
    from argo_doctor.remediate.restarter import Restarter
    from argo_doctor.remediate.service import Auth, create_app, parse_listen
    from argo_doctor.remediate.service import run as run_service
    from argo_doctor.remediate.store import open_store

    with _errors_to_exit():
        auth = Auth(_secret_file(token_file, "--token-file", "token"),
                    _secret_file(hmac_secret_file, "--hmac-secret-file", "HMAC secret"))
        if auth.open and not insecure_no_auth:
            raise ConfigError("refusing to serve without authentication: give --token-file or --hmac-secret-file "
                              "(or --insecure-no-auth for a test)")
        rules_policy = load_policy(policy_file)
        parse_listen(listen)
        store = open_store(audit_db)
        client = KubeClient.connect(kubeconfig, context)
        try:
            restarter = Restarter(client, rules_policy, store, source="serve", instance=_instance())
            app = create_app(restarter, store, auth, api_ready=lambda: _reachable(client))
            run_service(app, listen, insecure=auth.open)
        finally:
            client.close()
            store.close()


@main.command("audit")
@click.option("--audit-db", required=True, envvar="ARGO_DOCTOR_AUDIT_DB",
              help="The audit store: sqlite:///ABS/PATH (or a path), or postgresql://... (env ARGO_DOCTOR_AUDIT_DB).")
@click.option("--since", default="24h", show_default=True, help="Only decisions this recent (90m, 24h, 7d).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many decisions, newest first.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def audit_command(audit_db: str, since: str, limit: int | None, output: str) -> None:
    """Show the decisions of `serve` and `fix --apply`, newest first: what was notified, the verdict, the policy
    outcome, the patch and the API's answer (-o json has every field).

    Exit status: 0, or 2 for bad options or an unreachable store.
    """
    from argo_doctor.remediate.store import open_store, parse_age
    from argo_doctor.report import audit as audit_report

    with _errors_to_exit():
        store = open_store(audit_db, writable=False)
        try:
            entries = store.entries(since=datetime.now(UTC) - parse_age(since), limit=limit)
        finally:
            store.close()
    click.echo(audit_report.render(entries, output))


@main.command("notifications-config")
@click.option("--url", required=True, help=URL_HELP)
@click.option("--argocd-namespace", default="argocd", show_default=True,
              help="Where Argo CD and its notifications controller run.")
def notifications_config_command(url: str, argocd_namespace: str) -> None:
    """Print the Argo CD Notifications configuration that calls `argo-doctor serve` when an Application turns
    Degraded: the argocd-notifications-cm entries (webhook service, template, trigger), the token key of
    argocd-notifications-secret (a placeholder) and the subscription annotation for Applications.

    Exit status: 0, or 2 for a bad URL.
    """
    with _errors_to_exit():
        click.echo(notifications_config(url, namespace=argocd_namespace), nl=False)


class _errors_to_exit:
    """Turn argo-doctor errors into one line and exit 2; anything unexpected into one line and 3. The line
    is redacted, with the Secret values of the snapshot being read once `watch` has seen it."""

    def __init__(self) -> None:
        self.scrubber: SecretScrubber | None = None

    def __enter__(self) -> _errors_to_exit:
        return self

    def watch(self, snap: Snapshot) -> Snapshot:
        """Remember the snapshot's Secret values for the error line; return the snapshot."""
        self.scrubber = snap.scrubber
        return snap

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or isinstance(exc, SystemExit | click.exceptions.Exit | click.ClickException):
            return False
        if _output_closed(exc):
            return False  # the reader went away: `_Main.invoke` ends the command quietly
        if isinstance(exc, ArgoDoctorError):
            _fail(str(exc), exc.exit_code, self.scrubber)
        if isinstance(exc, KeyboardInterrupt):
            _fail("interrupted", 130)
        if os.environ.get("ARGO_DOCTOR_DEBUG"):
            return False
        _fail(f"internal error: {type(exc).__name__}: {exc} (set ARGO_DOCTOR_DEBUG=1 for the traceback)",
              EXIT_INTERNAL, self.scrubber)
        return True
