"""The `argo-doctor` command group and how the process ends: exit statuses, signals, a closed output."""

from __future__ import annotations

import multiprocessing
import os
import select as io_select
import signal
import sys
import threading
from dataclasses import dataclass
from importlib import import_module
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import click

from argo_doctor import ARGOCD_PARITY, __version__
from argo_doctor.errors import ArgoDoctorError
from argo_doctor.model import Problem, Severity

if TYPE_CHECKING:  # imported where used: `--version` and `--help` load no command
    from argo_doctor.snapshot import Snapshot
    from argo_doctor.sources.redact import SecretScrubber

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
SEVERITIES = [s.label for s in sorted(Severity, reverse=True)]


def fail(message: str, code: int = EXIT_USAGE, scrubber: SecretScrubber | None = None) -> None:
    from argo_doctor.sources.redact import clean

    click.echo(f"argo-doctor: error: {clean(message, scrubber, human=True)}", err=True)
    sys.exit(code)


def problem_lines(problems: list[Problem], scrubber: SecretScrubber | None = None) -> None:
    """Input problems on stderr, one line each, redacted and without control characters."""
    from argo_doctor.sources.redact import clean

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


COMPLETE_VAR = "_ARGO_DOCTOR_COMPLETE"
"""The environment variable through which a shell asks for completions (see `completion`)."""
COMMANDS = {"scan": "scan", "timeline": "timeline", "health": "health", "map": "map", "deprecations": "deprecations",
            "upgrade-check": "upgrade_check", "collect": "collect", "redact": "redact", "mcp": "mcp", "fix": "fix",
            "serve": "serve", "audit": "audit", "notifications-config": "notifications_config",
            "helm-check": "helm_check", "github-app": "github_app", "rbac": "rbac", "lua": "lua", "rules": "rules",
            "signatures": "rules", "completion": "completion"}
"""Each command and the module of `cli` that defines it, in the order `--help` lists them (the order a user needs
them). A module is imported when its command runs (or `--help` lists them all): `--version` loads none."""


class _Main(click.Group):
    """The command group: a standard output closed by its reader ends any command quietly (`_die_of_broken_pipe`),
    including `--help` and `--version`, rather than as an internal error or click's exit status 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        order = list(COMMANDS)
        return sorted({*self.commands, *COMMANDS}, key=lambda name: (
            order.index(name) if name in order else len(order), name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            import_module(f"argo_doctor.cli.{COMMANDS[cmd_name]}")  # its decorator adds the command to the group
        return self.commands.get(cmd_name)

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


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="argo-doctor",
                      message=f"%(prog)s %(version)s (health checks as in Argo CD {ARGOCD_PARITY})")
def main() -> None:
    """Find out why Argo CD (and Argo Rollouts, Events, Workflows, Image Updater) misbehaves: from the cluster,
    a bundle that `collect` wrote, a `kubectl cluster-info dump` or manifest files. Nothing is written to a cluster
    but by `fix --apply` and `serve`.

    \b
    Examples:
      argo-doctor scan --live              # the current context, read-only
      argo-doctor collect -o bundle.tgz    # a redacted bundle to share
      argo-doctor scan bundle.tgz -o html > report.html
    """
    _handle_signals()


@dataclass
class Ending:
    """How the process ends after its command (see `run`)."""

    at_once: bool = False


ENDING = Ending()


def run() -> None:
    """The `argo-doctor` program: `main`. After `scan`, `timeline` and `map`, which only read and write their
    report, the process ends as soon as its output is flushed, without the interpreter freeing, object by object,
    all that the command made (0.13 s after a scan of the benchmark's bundle). Nothing else is left to end then:
    their `with` blocks removed their temporary directories and stopped their worker processes, whatever the exit
    status; with another thread or a child process still there, the interpreter ends as usual."""
    ENDING.at_once = False
    try:
        main(prog_name=prog_name(sys.argv[0]), complete_var=COMPLETE_VAR)
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
        if ENDING.at_once and isinstance(code, int) and _alone() and _flushed():
            os._exit(code)
        raise


def prog_name(argv0: str) -> str:
    """`kubectl argo-doctor` when run as the kubectl plugin (`kubectl-argo_doctor`), else `argo-doctor`."""
    return "kubectl argo-doctor" if os.path.basename(argv0).startswith("kubectl-argo_doctor") else "argo-doctor"


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


class errors_to_exit:
    """Turn argo-doctor errors into one line and exit 2; anything unexpected into one line and 3. The line
    is redacted, with the Secret values of the snapshot being read once `watch` has seen it."""

    def __init__(self) -> None:
        self.scrubber: SecretScrubber | None = None

    def __enter__(self) -> errors_to_exit:
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
            fail(str(exc), exc.exit_code, self.scrubber)
        if isinstance(exc, KeyboardInterrupt):
            fail("interrupted", 130)
        if os.environ.get("ARGO_DOCTOR_DEBUG"):
            return False
        fail(f"internal error: {type(exc).__name__}: {exc} (set ARGO_DOCTOR_DEBUG=1 for the traceback)",
              EXIT_INTERNAL, self.scrubber)
        return True
