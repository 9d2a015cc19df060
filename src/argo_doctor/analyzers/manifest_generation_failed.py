"""manifest-generation-failed: Applications Argo CD cannot compare because the repo-server cannot render them.

Each ComparisonError that carries the repo-server's answer is read with facts/manifests.py. Errors of the
repo-server's load (the caller's deadline, the exec timeout, a killed command, no repo-server to answer) are one
finding for every Application they hit, explained by the repo-server's pods (out-of-memory kills, restarts, limits),
its log (commands killed at the exec timeout) and whether the timeouts nest (the caller must wait longer than the
repo-server lets a command run). An error of the Application's own source or repository is its own finding, never
blamed on the load.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural
from argo_doctor.facts.installation import CONTAINER_HINTS, Setting, main_container, resolve, secrets_in_input
from argo_doctor.facts.manifests import GenerationError, generation_errors
from argo_doctor.facts.repositories import credentials_for, normal_url
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Component, Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping
from argo_doctor.timeutil import parse_go_duration, parse_time

MAX_LINES = 5
"""Repo-server lines of killed commands kept."""
MAX_RENDERS = 200
"""Render lines kept per previous container log."""
RELEASE = re.compile(r"--name-template (\S+)")
MAX_APPS = 5
"""Applications named in a summary."""
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/high_availability/#argocd-repo-server",
        "https://argo-cd.readthedocs.io/en/stable/faq/#why-is-my-application-stuck-in-progressing-state")
PAUSE_NOTE = ("The repo-server answers from its error cache (\"Manifest generation error (cached)\") after "
              "ARGOCD_PAUSE_GEN_AFTER_FAILED_ATTEMPTS (3) failures, for ARGOCD_PAUSE_GEN_MINUTES (60) after the "
              "first: a fixed cause shows only after that, or at once with a hard refresh.")


@dataclass(frozen=True)
class _Timeouts:
    """The repo-server timeouts as each side resolves them, in seconds (None: not known)."""

    controller: Setting | None
    server: Setting | None
    execution: Setting | None
    parallelism: Setting | None

    @staticmethod
    def seconds(setting: Setting | None, go: bool = False) -> float | None:
        if setting is None or setting.value is None:
            return None
        if go:
            return parse_go_duration(setting.value)
        try:
            return float(setting.value)
        except ValueError:
            return None


EXEC_TRACES = ("argocd.exec-trace", "argocd.exec-trace-kustomize")
"""The repo-server's traces of a helm or kustomize run (one signature per tool: one literal needle each)."""


class ManifestGenerationFailed(Analyzer):
    """Applications whose manifests the repo-server cannot generate."""

    id = "manifest-generation-failed"
    title = "Manifests cannot be generated"
    signatures = ("argocd.exec-timeout", *EXEC_TRACES, "argocd.helm-template")
    needs = Needs(frozenset({"argoproj.io/Application"}), metrics=True)

    def __init__(self) -> None:
        self._killed: list[LogRecord] = []
        self._longest: tuple[float, LogRecord] | None = None
        self._renders: dict[str, list[tuple[str, LogRecord, bool]]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the repo-server's last commands killed at the exec timeout, its longest render, and the renders
        started and finished in the log of a container that ended (`.previous.log`), by pod."""
        if signature.id == "argocd.exec-timeout":
            self._killed.append(record)
            del self._killed[:-MAX_LINES]
            return
        release = RELEASE.search(record.raw)
        if record.file.previous and release is not None:
            renders = self._renders[record.file.pod]
            renders.append((release.group(1), record, signature.id in EXEC_TRACES))
            del renders[:-MAX_RENDERS]
        if signature.id not in EXEC_TRACES:
            return
        try:
            took = float(record.fields.get("time_ms") or "") / 1000
        except ValueError:
            return
        if math.isfinite(took) and (self._longest is None or took > self._longest[0]):
            self._longest = (took, record)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        load: list[tuple[Obj, GenerationError]] = []
        reach: dict[tuple[str, str], list[tuple[Obj, GenerationError]]] = defaultdict(list)
        for app in ctx.snap.applications():
            if app.meta.get("deletionTimestamp"):
                continue
            errors = generation_errors(app)
            if not errors:
                continue
            own = [e for e in errors if e.cause != "load"]
            if own and own[0].cause == "repository" and own[0].row is not None:
                reach[(own[0].row.id, normal_url(_repo_url(app, own[0])))].append((app, own[0]))
            elif own:
                yield _own_cause(app, own[0])
            else:
                load.append((app, errors[0]))
        for hit in reach.values():
            yield _repository(ctx, hit)
        if load:
            yield self._load(ctx, load)

    def _load(self, ctx: Context, hit: list[tuple[Obj, GenerationError]]) -> Finding:
        """One finding for every Application the repo-server's load keeps from rendering."""
        kinds = {e.row.id for _, e in hit if e.row is not None}
        evidence = [object_evidence(a, f".status.conditions[{e.index}]", f"ComparisonError: {e.detail}", e.time)
                    for a, e in hit[:MAX_APPS]]
        groups: dict[str, list[tuple[Obj, GenerationError]]] = defaultdict(list)
        for app, error in hit:
            groups[error.detail].append((app, error))
        said = []
        for detail, members in groups.items():
            names = [a.name for a, _ in members]
            shown = ", ".join(names[:MAX_APPS]) + (f" and {len(names) - MAX_APPS} more" if len(names) > MAX_APPS
                                                   else "")
            row = members[0][1].row
            why = f": {row.explanation[0].lower()}{row.explanation[1:].rstrip('.')}" if row else ""
            said.append(f"{len(members)} with \"{detail}\" ({shown}){why}")
        parts = [f"{plural(len(hit), 'Application')} cannot be compared because the repo-server did not render "
                 f"them: {'; '.join(said)}."]
        fixes = []
        repo = ctx.snap.component("repo-server")
        oom = _oom_kills(repo) if repo is not None else []
        for pod, name, restarts, limit, when in oom:
            parts.append(f"Its pod {pod.name} was killed for running out of memory (container {name}, memory limit "
                         f"{limit or 'none'}, {plural(restarts, 'restart')}, last at {when or 'an unknown time'}).")
            evidence.append(object_evidence(pod, ".status.containerStatuses", f"{name} last terminated OOMKilled "
                                            f"(exit 137), {restarts} restarts", parse_time(when)))
            running = _unfinished(self._renders.get(pod.name, []))
            if running:
                parts.append(f"Its log before the kill shows {plural(len(running), 'render')} started and never "
                             f"finished: {', '.join(dict.fromkeys(r for r, _ in running))}.")
                evidence.extend(log_evidence(record) for _, record in running[-3:])
        timeouts = _timeouts(ctx, repo)
        if oom:
            parallel = timeouts.parallelism.value if timeouts.parallelism else None
            fixes.append("Give the repo-server more memory (its container's resources.limits.memory)"
                         + (" or bound how many renders run at once: reposerver.parallelism.limit in "
                            "argocd-cmd-params-cm is unlimited now" if parallel in (None, "0", "") else
                            f" or lower reposerver.parallelism.limit (now {parallel})") + ".")
        if self._killed:
            parts.append(f"The repo-server's log shows {plural(len(self._killed), 'command')} killed at its exec "
                         "timeout.")
            evidence.extend(log_evidence(r) for r in self._killed)
        nest, nest_fix, nest_evidence = _nesting(timeouts, "caller-deadline" in kinds, self._longest)
        if nest:
            parts.append(nest)
            fixes.append(nest_fix)
            evidence.extend(nest_evidence)
        if "exec-timeout" in kinds and not nest_fix:
            execution = timeouts.seconds(timeouts.execution, go=True) or 90
            fixes.append(f"Renders run longer than the repo-server's exec timeout ({_duration(execution)}): raise "
                         f"ARGOCD_EXEC_TIMEOUT on the repo-server (e.g. to {_duration(_above(execution))}) and keep "
                         "controller.repo.server.timeout.seconds above it, or make the render cheaper.")
        pending = [p for p in ctx.snap.metrics(("argocd_repo_pending_request_total",)) if p.value > 0]
        if pending:
            waiting = int(sum(p.value for p in pending))
            bound = timeouts.parallelism.value if timeouts.parallelism else None
            repos = "1 repository" if len(pending) == 1 else f"{len(pending)} repositories"
            parts.append(f"{plural(waiting, 'request')} {'was' if waiting == 1 else 'were'} waiting for a repository "
                         f"lock when the metrics were read (argocd_repo_pending_request_total, {repos}"
                         + (f"; reposerver.parallelism.limit is {bound}" if bound not in (None, "0", "") else "")
                         + "): renders queue behind each other on the same repository.")
            evidence += [Evidence("metric", p.location, f"argocd_repo_pending_request_total"
                                  f"{{repo={p.labels.get('repo', '')}}} {p.value:g}") for p in pending[:3]]
        if any(e.cached for _, e in hit):
            parts.append(PAUSE_NOTE)
        if not oom and not nest and "repo-server-unavailable" in kinds:
            fixes.append("Check that the repo-server's pods are Ready (`kubectl get pods -l "
                         "app.kubernetes.io/name=argocd-repo-server`) and why they restarted.")
        if not fixes:
            fixes.append(hit[0][1].row.remediation if hit[0][1].row else "")
        fixes.append("Then hard-refresh the Applications.")
        first = f"{hit[0][0].namespace}/{hit[0][0].name}"
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"Repo-server cannot render {plural(len(hit), 'Application')}: "
                  + (", ".join(c for c, on in (("out of memory", oom), ("timeouts do not nest", nest)) if on)
                     or (hit[0][1].row.id.replace("-", " ") if hit[0][1].row else "load")),
            summary=" ".join(p for p in parts if p),
            objects=[a.ref for a, _ in hit] + ([repo.workload.ref] if repo and repo.workload else []),
            evidence=evidence,
            remediation=Remediation(text=" ".join(fixes), command=f"argocd app get {first} --hard-refresh",
                                    docs=DOCS),
        )


def _own_cause(app: Obj, error: GenerationError) -> Finding:
    """An Application whose error is its own (its source, values, plugin or repository), not the repo-server's."""
    name = f"{app.namespace}/{app.name}"
    state = mapping(app.status.get("operationState"))
    failed_sync = state.get("phase") in ("Failed", "Error") and error.detail[:60] in str(state.get("message") or "")
    explanation = error.row.explanation if error.row else "The repo-server returned an error argo-doctor does not know."
    summary = (f"Argo CD cannot compare Application {name} with Git: generating its manifests"
               f"{' (' + error.source + ')' if error.source else ''} fails with: {error.detail}. {explanation}")
    if failed_sync:
        summary += f" Its last sync ended {state.get('phase')} on the same error ({state.get('finishedAt')})."
    if error.cached:
        summary += " " + PAUSE_NOTE
    evidence = [object_evidence(app, f".status.conditions[{error.index}]", f"ComparisonError: {error.detail}",
                                error.time)]
    if failed_sync:
        evidence.append(object_evidence(app, ".status.operationState", f"phase {state.get('phase')}",
                                        parse_time(state.get("finishedAt"))))
    first = error.detail.split(": Error: ", 1)[-1] if ": Error: " in error.detail else error.detail
    return Finding(
        rule="manifest-generation-failed",
        severity=Severity.HIGH if failed_sync else Severity.MEDIUM,
        title=f"Manifests of {app.name} cannot be generated: {first}",
        summary=summary,
        objects=[app.ref],
        evidence=evidence,
        remediation=Remediation(
            text=(error.row.remediation if error.row else "Render the source locally on the target revision and fix "
                  "the error.") + ("" if error.row and "hard-refresh" in error.row.remediation
                                   else " A hard refresh makes Argo CD try again at once."),
            command=f"argocd app get {name} --hard-refresh",
            docs=("https://argo-cd.readthedocs.io/en/stable/user-guide/troubleshooting/",)),
    )


def _unfinished(renders: list[tuple[str, LogRecord, bool]]) -> list[tuple[str, LogRecord]]:
    """The helm renders of a log that started and have no later Trace line of the same release."""
    ended: dict[str, list[LogRecord]] = defaultdict(list)
    for release, record, end in renders:
        if end:
            ended[release].append(record)
    return [(release, record) for release, record, end in renders if not end and "operation_name" not in record.raw
            and not any((e.time or record.time) >= (record.time or e.time) for e in ended[release]
                        if e.time and record.time)]


def _repo_url(app: Obj, error: GenerationError) -> str:
    """The repoURL of the source the error is about (`source N of M`, else the only source)."""
    sources = [mapping(s) for s in as_list(app.spec.get("sources"))] or [mapping(app.spec.get("source"))]
    number = int(error.source.split()[1]) if error.source else 1
    return str(sources[min(number, len(sources)) - 1].get("repoURL") or "")


def _repository(ctx: Context, hit: list[tuple[Obj, GenerationError]]) -> Finding:
    """Applications that cannot reach one repository for one reason: the reason, and the credentials Argo CD sends."""
    app, error = hit[0]
    row = error.row
    assert row is not None  # grouped by row
    names = [f"{a.namespace}/{a.name}" for a, _ in hit]
    shown = ", ".join(names[:MAX_APPS]) + (f" (and {len(names) - MAX_APPS} more)" if len(names) > MAX_APPS else "")
    repo = _repo_url(app, error) or "the repository"
    summary = (f"{plural(len(hit), 'Application')} of {repo} cannot be rendered ({shown}): {error.detail}. "
               f"{row.explanation}")
    evidence = [object_evidence(a, f".status.conditions[{e.index}]", f"ComparisonError: {e.detail}", e.time)
                for a, e in hit[:MAX_APPS]]
    if row.id == "repo-auth":
        creds = credentials_for(ctx.snap, repo)
        if creds is not None and creds.credentials:
            summary += (f" Argo CD sends the credentials of Secret {creds.secret.namespace}/{creds.secret.name} "
                        f"({creds.kind}, {creds.url}: keys {', '.join(creds.credentials)}), and the host refuses them: "
                        "they are wrong, expired, or without access to this repository.")
            evidence.append(object_evidence(creds.secret, ".metadata.labels", f"{creds.kind} for {creds.url}"))
        elif creds is not None:
            summary += (f" Secret {creds.secret.namespace}/{creds.secret.name} matches {repo} but holds no "
                        "credential: Argo CD connects anonymously.")
            evidence.append(object_evidence(creds.secret, ".data", "no credential key"))
        elif secrets_in_input(ctx.snap, ctx.snap.settings.namespace or app.namespace):
            summary += (f" No repository or repo-creds Secret of the input matches {repo}: Argo CD sends no "
                        "credentials.")
        else:
            summary += " The input holds no Secrets, so which credentials Argo CD sends is not known here."
    if error.cached:
        summary += " " + PAUSE_NOTE
    return Finding(
        rule="manifest-generation-failed",
        severity=Severity.HIGH,
        title=f"{plural(len(hit), 'Application')} cannot reach {repo}: {row.id.replace('-', ' ')}",
        summary=summary,
        objects=[a.ref for a, _ in hit],
        evidence=evidence,
        remediation=Remediation(text=row.remediation + " Then hard-refresh the Applications.",
                                command=f"argocd repo get {repo}",
                                docs=("https://argo-cd.readthedocs.io/en/stable/user-guide/private-repositories/",)),
    )


def _oom_kills(repo: Component) -> list[tuple[Obj, str, int, str, str]]:
    """(pod, container, restarts, memory limit, when) of the repo-server's containers last killed out of memory."""
    found = []
    for pod in repo.pods:
        limits = {str(c.get("name")): str(mapping(mapping(c.get("resources")).get("limits")).get("memory") or "")
                  for c in as_list(pod.spec.get("containers")) if isinstance(c, dict)}
        for status in as_list(pod.status.get("containerStatuses")):
            status = mapping(status)
            last = mapping(mapping(status.get("lastState")).get("terminated"))
            if last.get("reason") == "OOMKilled":
                name = str(status.get("name") or "")
                found.append((pod, name, as_int(status.get("restartCount")) or 0, limits.get(name, ""),
                              str(last.get("finishedAt") or "")))
    return found


def _timeouts(ctx: Context, repo: Component | None) -> _Timeouts:
    """The callers' repo-server timeouts (60 s by default), the repo-server's exec timeout (90 s) and its
    parallelism limit (0: none), as each component resolves them (cmd/argocd-*/commands, util/exec/exec.go)."""
    def setting(component: Component | None, flag: str | None, env: str, default: str) -> Setting | None:
        if component is None:
            return None
        container = main_container(ctx.snap, component, CONTAINER_HINTS.get(component.name, ""))
        return resolve(ctx.snap, container, flag, env, default) if container is not None else None
    return _Timeouts(
        controller=setting(ctx.snap.component("application-controller"), "repo-server-timeout-seconds",
                           "ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_TIMEOUT_SECONDS", "60"),
        server=setting(ctx.snap.component("server"), "repo-server-timeout-seconds",
                       "ARGOCD_SERVER_REPO_SERVER_TIMEOUT_SECONDS", "60"),
        execution=setting(repo, None, "ARGOCD_EXEC_TIMEOUT", "90s"),
        parallelism=setting(repo, "parallelismlimit", "ARGOCD_REPO_SERVER_PARALLELISM_LIMIT", "0"),
    )


def _nesting(timeouts: _Timeouts, deadline_hit: bool,
             longest: tuple[float, LogRecord] | None) -> tuple[str, str, list[Evidence]]:
    """When a caller gave up: whether it waits less than the repo-server lets a command run (or than the longest
    render of the log took), and the value to set."""
    execution = timeouts.seconds(timeouts.execution, go=True)
    if not deadline_hit or execution is None or timeouts.execution is None:
        return "", "", []
    short = [(who, key, s, timeouts.seconds(s)) for who, key, s in (
        ("the application controller", "controller.repo.server.timeout.seconds", timeouts.controller),
        ("the API server", "server.repo.server.timeout.seconds", timeouts.server))
        if s is not None and (timeouts.seconds(s) or 0) and (timeouts.seconds(s) or 0) <= execution]
    if not short:
        return "", "", []
    target = _above(max(execution, longest[0] if longest else 0))
    said = "; ".join(f"{who} waits {_duration(sec or 0)}, {('set by ' + s.source) if s.explicit else 'its default'}"
                     for who, _, s, sec in short)
    text = (f"The timeouts do not nest: the repo-server lets a command run {_duration(execution)} "
            f"(ARGOCD_EXEC_TIMEOUT, {timeouts.execution.source}), but {said}; so a render that takes longer than the "
            "caller waits fails as \"context deadline exceeded\" although the repo-server would finish it.")
    if longest is not None:
        text += f" The repo-server's log shows a render that took {_duration(longest[0])}."
    fix = (f"Set {' and '.join(key for _, key, _, _ in short)} in argocd-cmd-params-cm to {int(target)} (above the "
           f"exec timeout of {_duration(execution)}"
           + (f" and the longest render, {_duration(longest[0])}" if longest else "")
           + ") and restart the components that read them.")
    evidence = [e for _, _, s, _ in short for e in s.evidence[-1:]] + list(timeouts.execution.evidence[-1:])
    if longest is not None:
        evidence.append(log_evidence(longest[1]))
    return text, fix, evidence


def _above(seconds: float) -> float:
    """A caller timeout comfortably above `seconds`: 30 s more, rounded up to a multiple of 30 s."""
    return math.ceil((seconds + 30) / 30) * 30


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"

