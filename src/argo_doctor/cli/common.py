"""What several commands share: the options that read a cluster, the Snapshot of the inputs, option files."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource
from rich.console import Console
from rich.status import Status

from argo_doctor.analyzers import BASE_NEEDS
from argo_doctor.errors import ConfigError
from argo_doctor.facts.scope import Scope, scope
from argo_doctor.model import DEFAULT_MAX_LOG_BYTES, Needs
from argo_doctor.report.table import width
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from argo_doctor.sources.audit import AuditFile
from argo_doctor.sources.files import read_option_file
from argo_doctor.timeutil import parse_go_duration

if TYPE_CHECKING:  # imported where used: `scan` of files needs no HTTP client, database driver or web server
    from argo_doctor.sources.live import Collected, LiveOptions, Tally

F = TypeVar("F", bound=Callable[..., Any])


def lua_dir_option(func: F) -> F:
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


def cluster_options(func: F) -> F:
    """The options of every command that reads a cluster: where it is, and how much to read."""
    options = [
        click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Kubeconfig file (default: in-cluster configuration in a pod, else $KUBECONFIG or "
                          "~/.kube/config)."),
        click.option("--context", help="Kubeconfig context (default: the current one)."),
        click.option("--argo-namespace", "namespaces", multiple=True, metavar="NS",
                     help="A namespace Argo components run in (repeatable; default: every namespace holding one)."),
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


def scope_options(func: F) -> F:
    """`--app` and `-n/--namespace`: narrow what a command shows, as kubectl's namespace does."""
    func = click.option("-n", "--namespace", "scope_namespaces", multiple=True, metavar="NS",
                        help="Only objects of this namespace and the findings about them (repeatable).")(func)
    return click.option("--app", "scope_apps", multiple=True, metavar="[NS/]NAME",
                        help="Only what this Argo CD Application manages (its resources, their Pods and ReplicaSets), "
                             "and the findings and evidence about them (repeatable).")(func)


def scope_of(snap: Snapshot, kwargs: dict[str, Any]) -> Scope:
    """The Scope the `scope_options` of a command ask for, in its keyword arguments."""
    return scope(snap, kwargs.get("scope_apps", ()), kwargs.get("scope_namespaces", ()))


def live_options(func: F) -> F:
    """`--live` and `--audit`, then the cluster options: for commands that read files or, with --live, a cluster."""
    func = cluster_options(func)
    func = click.option("--audit", "audit", multiple=True, type=click.Path(exists=True, path_type=Path),
                        help="A local kube-apiserver audit log to add to a live scan (repeatable; the API does not "
                             "serve audit logs).")(func)
    return click.option("--live", is_flag=True,
                        help="Read the cluster of the kubeconfig (read-only) instead of files.")(func)


def table_width() -> int | None:
    """The width a table is fitted to: `COLUMNS`, else the terminal's; None (every cell whole) when standard output
    is a pipe or file, so that `grep` sees every word."""
    tty = sys.stdout.isatty()
    found = width(os.environ, tty)
    if found is None and tty:
        return shutil.get_terminal_size().columns
    return found if tty or os.environ.get("COLUMNS", "").strip() else None


LIVE_ONLY = ("kubeconfig", "context", "namespaces", "since", "max_log_bytes", "previous", "probe_node_clocks",
             "timeout")
"""The parameters that only say how to read a cluster: given with files, they would be silently ignored."""


def live_args(kwargs: dict[str, Any]) -> LiveArgs:
    """The live options out of a command's keyword arguments (`collect` has neither --live nor --audit); a
    ConfigError for an option of the cluster given without --live, which would have no effect."""
    if not kwargs.get("live", True):
        ctx = click.get_current_context()
        given = [p for p in ctx.command.params if p.name in LIVE_ONLY
                 and ctx.get_parameter_source(p.name) not in (None, ParameterSource.DEFAULT)]
        if given:
            flag = max(given[0].opts, key=len)
            raise ConfigError(f"{flag} says how to read a cluster: it has no effect on files; add --live to read "
                              "the cluster, or leave it out")
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


def collect_live(live: LiveArgs, root: Path, needs: Needs, metrics: bool = False,
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


def live_bundle(paths: tuple[Path, ...], workdir: Path, live: LiveArgs, needs: Needs,
                 metrics: bool = False, written: Callable[[Path], None] | None = None) -> Path | None:
    """With --live, the cluster collected into a private folder of `workdir` (files may not be given too); None
    without --live. The folder (mode 0700, removed when the command ends) is not redacted: reading it fingerprints
    Secrets, and every output is redacted, as for any bundle."""
    if not live.live:
        return None
    if paths:
        raise ConfigError("give either files or --live, not both")
    collect_live(live, workdir / "live", needs, metrics, written)
    return workdir / "live"


MAX_LISTED = 10
"""The most bundles of a folder an error names."""


def snapshot(paths: tuple[Path, ...], workdir: Path, live: LiveArgs, needs: Needs) -> Snapshot:
    """The Snapshot of the files, or of the cluster with --live (collected into `workdir`, each object file parsed
    on worker processes as soon as it is written, while the collection goes on)."""
    workers = os.cpu_count() or 1
    early = bundle.EarlyLoads(workdir / "live", workers) if live.live and not paths and workers > 1 else None
    try:
        folder = live_bundle(paths, workdir, live, needs, written=early.written if early is not None else None)
        if folder is not None:
            snap = bundle.load([folder], workdir, early)
            cluster = snap.meta.get("cluster", {})
            server, context = cluster.get("name") or "cluster", cluster.get("context")
            snap.source = f"live: context {context} ({server})" if context else f"live: {server}"
            for path in live.audit:
                snap.audit_files.append(AuditFile(path, str(path)))
            return snap
    finally:
        if early is not None:
            early.close()
    if not paths:
        raise ConfigError("nothing to read: give bundles, tarballs, dumps or files, or --live")
    several = bundle.bundles_in(paths[0]) if len(paths) == 1 else []
    if len(several) > 1:
        command = click.get_current_context().info_name
        shown = ", ".join(str(p) for p in several[:MAX_LISTED]) + (", …" if len(several) > MAX_LISTED else "")
        raise ConfigError(f"{paths[0]} holds {len(several)} bundles, each its own installation: give one (argo-doctor "
                          f"{command} {several[0]}){' or scan the folder with -o table' if command == 'scan' else ''}"
                          f"; it holds {shown}")
    if live.audit:
        raise ConfigError("--audit adds audit logs to a --live scan; a bundle holds its own under audit/")
    return bundle.load(paths, workdir)

PROGRESS_AFTER = 1.0
"""Seconds an offline command works before it shows a progress line: a quick scan stays silent."""


class Progress:
    """A line on stderr, on a terminal only and from PROGRESS_AFTER seconds on, saying what an offline command is
    doing (`reading …`, `scanning …`), as a live collection shows its own; `-q` silences it. Gone before the report."""

    def __init__(self, quiet: bool) -> None:
        self._console = Console(stderr=True)
        self._shown = not quiet and self._console.is_terminal
        self._text = ""
        self._lock = threading.Lock()
        self._status: Status | None = None
        self._timer: threading.Timer | None = None
        self._stopped = False

    def __enter__(self) -> Progress:
        if self._shown and PROGRESS_AFTER <= 0:
            self._start()
        elif self._shown:
            self._timer = threading.Timer(PROGRESS_AFTER, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def phase(self, text: str) -> None:
        """Say what is being done now."""
        with self._lock:
            self._text = text
            if self._status is not None:
                self._status.update(text)

    def reading(self, paths: tuple[Path, ...]) -> None:
        """The reading phase, with the number and size of the input files (counted only for a terminal)."""
        if not self._shown:
            return
        files, size = 0, 0
        for path in paths:
            for root, _, names in os.walk(path) if path.is_dir() else [(str(path.parent), [], [path.name])]:
                for name in names:
                    try:
                        size += os.lstat(os.path.join(root, name)).st_size
                    except OSError:
                        continue
                    files += 1
        self.phase(f"reading {', '.join(map(str, paths))}: {files:,} files, {size / 1e6:,.1f} MB")

    def _start(self) -> None:
        with self._lock:
            if not self._stopped:
                self._status = self._console.status(self._text or "working…")
                self._status.start()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._stopped = True
            if self._status is not None:
                self._status.stop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()


def kube_options(func: F) -> F:
    """--kubeconfig and --context, for the commands that write through `remediate`."""
    func = click.option("--context", help="Kubeconfig context (default: the current one).")(func)
    return click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                        help="Kubeconfig file (default: in-cluster configuration in a pod, else $KUBECONFIG or "
                             "~/.kube/config).")(func)


def instance() -> str:
    """Who decides, for the audit trail: the pod name in a pod, else the host name."""
    return os.environ.get("POD_NAME") or socket.gethostname()

MIN_SECRET_BYTES = 16
MAX_OPTION_FILE_BYTES = 1 << 20
"""The largest token or key file read (a PEM key is a few KiB)."""


def option_file(path: Path, option: str, what: str) -> bytes:
    """The content of the file an option names, by the rule of inputs: a regular file, never a FIFO or a device
    (which would block or never end); ConfigError, one line, otherwise."""
    try:
        return read_option_file(path, MAX_OPTION_FILE_BYTES)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot read the {what}: {exc.strerror or exc}") from None


def secret_file(path: Path | None, option: str, what: str) -> bytes | None:
    """A token or key from a file, without surrounding whitespace; a placeholder or a short one is refused."""
    if path is None:
        return None
    value = option_file(path, option, what).strip()
    if len(value) < MIN_SECRET_BYTES or b"REPLACE" in value.upper():
        raise ConfigError(f"{path}: the {what} must be a random value of at least {MIN_SECRET_BYTES} bytes, not a "
                          "placeholder (e.g. `openssl rand -hex 32`)")
    return value

