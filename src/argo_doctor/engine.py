"""The scan engine: one log pass dispatching to analyzers, then the analyzers, then the timeline."""

from __future__ import annotations

import difflib
import os
import re
import threading
from collections import defaultdict
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

from argo_doctor import knowledge
from argo_doctor.analyzers import BASE_NEEDS, Analyzer, Context, all_analyzers
from argo_doctor.errors import ConfigError
from argo_doctor.facts.installation import INSTALLATION_NEEDS, InstalledComponent, component_permissions, installation
from argo_doctor.facts.rbac import Permissions
from argo_doctor.health import HealthAssessor, HealthProblem, LuaHealthScripts
from argo_doctor.health.assess import BUILTIN_LUA_CHECKS, GO_BUILTIN_CHECKS
from argo_doctor.health.cache import installed_argocd_version, scripts_for
from argo_doctor.health.types import LUA_SCRIPTS_LOCATION
from argo_doctor.model import Finding, Needs, Problem, TimelineEntry
from argo_doctor.snapshot import Obj, Snapshot, gc_paused
from argo_doctor.sources.logs import LogRecord, LogSignature, ScanStats, scan_logs
from argo_doctor.sources.redact import clean
from argo_doctor.sources.workers import Forked, ForkFailed
from argo_doctor.timeline import build_timeline


@dataclass
class ScanResult:
    """Everything a reporter needs."""

    snapshot: Snapshot
    findings: list[Finding]
    timeline: list[TimelineEntry]
    problems: list[Problem]
    stats: ScanStats = field(default_factory=ScanStats)
    crashed: list[str] = field(default_factory=list)
    """Rules whose analyzer raised: a bug; the CLI exits 3 after reporting the rest."""
    rules: list[str] = field(default_factory=list)
    """The ids of the rules that ran, in the registry's order (JUnit and SARIF list them all, with or without
    findings)."""
    redacted: bool = False
    """Whether `findings` and `problems` went through `clean` (`run_scan` does it): the JSON reporter then cleans
    only the rest of its document."""
    cleaned: dict[str, str] = field(default_factory=dict, repr=False)
    """What `clean` made of each text of `findings` and `problems` (the snapshot's scrubber, not `human`): the
    timeline repeats most of them."""


MAX_LISTED = 8
"""Kinds named in the note about health scripts that are not cached; the rest are counted."""


def select_analyzers(only: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> list[Analyzer]:
    """Fresh analyzer instances, filtered by rule id."""
    classes = all_analyzers()
    known = {cls.id for cls in classes}
    for rule in (*only, *skip):
        if rule not in known:
            close = difflib.get_close_matches(rule, sorted(known), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"unknown rule {rule!r}; {hint}`argo-doctor rules` lists them")
    return [cls() for cls in classes if (not only or cls.id in only) and cls.id not in skip]


def signatures_for(analyzers: list[Analyzer]) -> dict[str, LogSignature]:
    """The log signatures the given analyzers asked for, by id."""
    table = knowledge.log_signatures()
    wanted: dict[str, LogSignature] = {}
    for analyzer in analyzers:
        for sig_id in analyzer.signatures:
            if sig_id not in table:
                raise ConfigError(f"analyzer {analyzer.id} asks for unknown log signature {sig_id!r}")
            wanted[sig_id] = table[sig_id]
    return wanted


def needs_for(analyzers: list[Analyzer]) -> Needs:
    """Everything the given analyzers read: their own needs, the logs of the components their signatures name
    (`*` when a signature applies to any component) and the audit log when one reads it."""
    needs = BASE_NEEDS
    table = knowledge.log_signatures()
    for analyzer in analyzers:
        needs |= analyzer.needs
        components = set()
        for sig_id in analyzer.signatures:
            components |= set(table[sig_id].components) if sig_id in table and table[sig_id].components else {"*"}
        needs |= Needs(logs=frozenset(components), audit=analyzer.audit)
    return needs


def health_assessor(snap: Snapshot, lua_dirs: tuple[Path, ...] = (), lua_cache: Path | None = None) -> HealthAssessor:
    """A HealthAssessor with the Lua customizations of argocd-cm, then of each `--lua-dir`, then the scripts `lua
    fetch` cached (in `lua_cache`, default the user's cache) for the installation's Argo CD version; with one note
    for the kinds of the input that Argo CD would assess with a built-in script that none of these holds."""
    scripts = LuaHealthScripts.from_argocd_cm(snap.settings.cm)
    for folder in lua_dirs:
        scripts = scripts.merged(LuaHealthScripts.from_dir(folder))
    installed = installed_argocd_version(snap)
    cached, notes = scripts_for(installed, lua_cache)
    in_use = cached is not None and any(
        scripts.script_for(group, kind) is None and cached.script_for(group, kind) is not None
        for group, kind in snap.kinds()
    )
    if not in_use:
        notes = []  # the choice of a cached version is worth a word only when one of its scripts applies
    missing = _kinds_without_script(snap, scripts.with_fallback(cached), installed)
    if missing:
        notes.append(_missing_scripts_note(snap, missing, installed))
    return HealthAssessor(scripts.with_fallback(cached, notes))


def _kinds_without_script(
    snap: Snapshot, scripts: LuaHealthScripts, installed: str | None
) -> list[tuple[str, str]]:
    """The kinds of the input that Argo CD (the `installed` release when known) assesses with a built-in Lua script,
    that no script here covers and argo-doctor does not re-implement."""
    return sorted(
        (group, kind) for group, kind in snap.kinds()
        if knowledge.has_builtin_lua(group, kind, installed) and scripts.script_for(group, kind) is None
        and (group, kind) not in BUILTIN_LUA_CHECKS and (group, kind) not in GO_BUILTIN_CHECKS
    )


def _missing_scripts_note(snap: Snapshot, kinds: list[tuple[str, str]], installed: str | None) -> HealthProblem:
    """One note for all the kinds whose Argo CD health script is not at hand, naming the command that fetches it,
    with the number of objects of each, and of the copies read when an object was read more than once (`health`
    assesses every copy)."""
    shown = []
    for group, kind in kinds[:MAX_LISTED]:
        count = len(snap.of_kind(kind, group))
        copies = count + sum(1 for d in snap.duplicates if (d.dropped.group, d.dropped.kind) == (group, kind))
        read = f"{count} object(s) in {copies} copies" if copies > count else str(count)
        shown.append(f"{kind} ({group or 'core'}, {read})")
    if len(kinds) > MAX_LISTED:
        shown.append(f"and {len(kinds) - MAX_LISTED} more")
    command = (f"`argo-doctor lua fetch --argocd-version {installed}`" if installed else
               "`argo-doctor lua fetch --argocd-version vX.Y.Z` with the installation's version (none found in the "
               "inputs; without the option: the latest release)")
    where = f"Argo CD {installed}" if installed else "Argo CD"
    return HealthProblem(
        LUA_SCRIPTS_LOCATION,
        f"{len(kinds)} kind(s) get their health in {where} from a built-in Lua script that is not cached here, so "
        f"their health is not assessed: {', '.join(shown)}; run {command}",
        "note",
    )


def parse_options(pairs: tuple[str, ...], analyzers: list[Analyzer]) -> dict[str, str]:
    """`RULE.KEY=VALUE` pairs, checked against the options the rules declare."""
    known = {f"{a.id}.{key}" for a in analyzers for key in a.options}
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name.strip() not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise ConfigError(f"unknown option {pair!r}: expected RULE.KEY=VALUE, one of {listed}")
        options[name.strip()] = value.strip()
    return options


def run_scan(
    snap: Snapshot, analyzers: list[Analyzer], lua_dirs: tuple[Path, ...] = (), options: dict[str, str] | None = None,
    workers: int = 0,
) -> ScanResult:
    """Run the log pass and every analyzer over a snapshot.

    The rules that read the audit log run with the audit pass in a forked copy of this process, beside the others,
    when `workers` allows it (0: with a CPU to spare and SPLIT_MIN_OBJECTS to SPLIT_MAX_OBJECTS objects; 1: never;
    more: always);
    the result is the same either way, in the same order. The copy has no health assessor (the Lua worker is this
    process's): were a rule there to ask for health, which none does (every example and test bundle is checked),
    the scan would run the copy's rules itself, after the others, whose health calls would then come first (the
    order of health's notes, and which objects a spent Lua budget leaves unassessed, could differ)."""
    stats = ScanStats()
    options = options or {}
    # no cyclic GC: 0.3 s per full collection on the benchmark bundle, several per pass, and while a forked copy
    # runs, a full collection would copy every page of the heap
    with gc_paused():
        _log_pass(snap, analyzers, stats)
        base = len(snap.problems)
        readers = [a for a in analyzers if a.audit]
        away = _fork_group(snap, readers, options, workers) if 0 < len(readers) < len(analyzers) else None
        local = [a for a in analyzers if away is None or not a.audit]
        with away if away is not None else nullcontext():
            health = health_assessor(snap, lua_dirs)
            health_problems = _taken(snap.problems, base)
            with health:  # stops the Lua worker process when the analyzers are done
                groups = [_run_group(snap, local, health, options)]
                if away is not None:
                    groups.append(_forked_result(away, snap, readers, health, options))
    outcomes = {rule: outcome for group in groups for rule, outcome in group.outcomes.items()}
    snap.problems.extend(p for group in groups for p in group.audit)
    snap.problems.extend(health_problems)
    findings: list[Finding] = []
    crashed = []
    for analyzer in analyzers:  # in the rules' order, wherever they ran
        outcome = outcomes[analyzer.id]
        if outcome.error is not None:
            raise outcome.error
        findings.extend(outcome.findings)
        snap.problems.extend(outcome.problems)
        if outcome.crashed:
            crashed.append(analyzer.id)
    snap.problems.extend(Problem(p.location, p.message, p.kind) for p in health.problems)
    snap.problems.extend(unknown_kinds(snap, health.scripts, needs_for(analyzers).kinds))
    snap.problems.extend(missing_inputs(snap, analyzers))
    cleaned: dict[str, str] = {}
    for group in groups:
        cleaned.update(group.cleaned)
    findings.sort(key=lambda f: (-f.severity, f.rule, f.title))
    problems = clean(_dedupe(snap.problems), snap.scrubber, cache=cleaned)
    return ScanResult(snap, findings, build_timeline(snap, findings), problems, stats, crashed,
                      [a.id for a in analyzers], redacted=True, cleaned=cleaned)


SPLIT_MIN_OBJECTS = 2_000
"""The size of snapshot from which the audit-reading rules run in a forked copy by default: below it, forking and
sending the findings back cost about what the copy saves (the rules of a scan of 4,530 objects took 0.41–0.45 s with
the copy, 0.45–0.54 s without; of 90 objects, 41 ms against 35)."""
SPLIT_MAX_OBJECTS = 100_000
"""The size of snapshot above which they run here by default: every page that either process writes while the copy
lives is copied, and the rules on both sides read most objects, so the copy costs memory in proportion to the
snapshot (about 1 KiB an object on the bench bundles) for a few percent of the time."""


@dataclass
class _Outcome:
    """What one analyzer gave: its findings (cleaned), the problems it added, whether it crashed, and the
    ConfigError it raised (the scan stops on the first, in the rules' order)."""

    findings: list[Finding]
    problems: list[Problem] = field(default_factory=list)
    crashed: bool = False
    error: ConfigError | None = None


@dataclass
class _Group:
    """What a group of analyzers gave: the problems of its audit pass, each analyzer's outcome by rule id, and
    what `clean` made of each text of the findings."""

    audit: list[Problem]
    outcomes: dict[str, _Outcome]
    cleaned: dict[str, str]


class _ParentOnly(BaseException):
    """Raised in the forked copy when a rule asks for health (the Lua worker belongs to the scan's process); a
    BaseException, so that no rule's `except Exception` takes it for a result."""


class _NoHealth:
    """The forked copy's stand-in for the health assessor: any use of it (`assess`, `scripts`, `problems`…) raises
    _ParentOnly, and the scan then runs the copy's rules itself."""

    def __getattr__(self, name: str) -> Any:
        raise _ParentOnly


def _run_group(snap: Snapshot, group: list[Analyzer], health: HealthAssessor, options: Mapping[str, str]) -> _Group:
    """The audit pass for `group`'s readers, then each of its analyzers; the problems they add are taken out of the
    snapshot's list into the result, by step."""
    start = len(snap.problems)
    readers = [a for a in group if a.audit]
    for event in snap.audit() if readers else ():  # one pass over the audit log, whatever the number of readers
        for analyzer in readers:
            analyzer.on_audit(event)
    audit = _taken(snap.problems, start)
    ctx = Context(snap, health, options)
    cleaned: dict[str, str] = {}
    outcomes = {}
    for analyzer in group:
        found: list[Finding] = []
        outcome = _Outcome(found)
        try:
            found.extend(analyzer.analyze(ctx))
        except ConfigError as exc:
            outcome.error = exc
        except Exception as exc:  # one broken analyzer must not lose the others (nor what it found before)
            outcome.crashed = True
            snap.problems.append(Problem(f"analyzer {analyzer.id}", f"internal error: {type(exc).__name__}: {exc}"))
        outcome.findings = clean(found, snap.scrubber, cache=cleaned)
        outcome.problems = _taken(snap.problems, start)
        outcomes[analyzer.id] = outcome
    return _Group(audit, outcomes, cleaned)


def _taken(problems: list[Problem], start: int) -> list[Problem]:
    taken = problems[start:]
    del problems[start:]
    return taken


def _fork_group(
    snap: Snapshot, group: list[Analyzer], options: Mapping[str, str], workers: int
) -> Forked[_Group] | None:
    """`group` running in a forked copy of this process, or None when it runs here (see `run_scan`; never from a
    process with other threads, whose locks the copy would find held)."""
    sized = SPLIT_MIN_OBJECTS <= len(snap) <= SPLIT_MAX_OBJECTS
    wanted = workers > 1 if workers else (os.cpu_count() or 1) > 1 and sized
    if not wanted or threading.active_count() > 1:
        return None
    try:
        return Forked(partial(_run_group, snap, group, cast(HealthAssessor, _NoHealth()), options))
    except OSError:
        return None


def _forked_result(
    away: Forked[_Group], snap: Snapshot, group: list[Analyzer], health: HealthAssessor, options: Mapping[str, str]
) -> _Group:
    """What the forked copy gave; when it gave nothing (it died, or a rule of it asked for health), `group` runs
    here, from the state it had when the copy was made."""
    try:
        return away.result()
    except ForkFailed:
        return _run_group(snap, group, health, options)


def _log_pass(snap: Snapshot, analyzers: list[Analyzer], stats: ScanStats) -> None:
    wanted = signatures_for(analyzers)
    if not wanted:
        return
    listeners: dict[str, list[Analyzer]] = defaultdict(list)
    for analyzer in analyzers:
        for sig_id in analyzer.signatures:
            listeners[sig_id].append(analyzer)

    def dispatch(sig: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        for analyzer in listeners[sig.id]:
            analyzer.on_log(sig, record, match)

    jobs = []
    for log_file in snap.log_files:
        component = snap.component_of_pod(log_file.namespace, log_file.pod)
        jobs.append((log_file, [s for s in wanted.values() if s.applies_to(component)]))
    scan_logs(jobs, dispatch, snap.problems, snap.reference_time, stats)


UNKNOWN_KINDS_SHOWN = 8
"""How many kinds the note on kinds no check reads names."""


ARGO_RESOURCES = ("applications.argoproj.io,applicationsets.argoproj.io,appprojects.argoproj.io,"
                  "rollouts.argoproj.io,analysisruns.argoproj.io,experiments.argoproj.io")
"""What `kubectl get` adds to a collection that lacks the Argo custom resources."""


def missing_inputs(snap: Snapshot, analyzers: list[Analyzer]) -> list[Problem]:
    """One note for each kind of input a collection of a cluster with Argo components (a bundle, a `kubectl
    cluster-info dump`) lacks although the rules chosen read it: Argo custom resources (a dump never holds them),
    container logs; with the command that adds them. Manifest files are what they are: no note."""
    collected = {"bundle-v1", "cluster-info-dump"} & set(snap.formats)
    if not collected or not snap.components:  # no Argo component: nothing of Argo's to miss
        return []
    notes = []
    argo_rules = [a.id for a in analyzers if any(k.startswith("argoproj.io/") for k in a.needs.kinds)]
    if argo_rules and not any(o.group == "argoproj.io" for o in snap.all()):
        where = "a `kubectl cluster-info dump` never holds them" if "cluster-info-dump" in collected else \
            "the collection did not read them"
        notes.append(Problem("input", f"no Argo custom resource (Application, ApplicationSet, AppProject, Rollout, "
                             f"AnalysisRun) in the input: {where}, and {len(argo_rules)} rules that read them had "
                             f"nothing to read. Add them: kubectl get {ARGO_RESOURCES} -A -o yaml > argo.yaml, then "
                             "scan both inputs together (argo-doctor scan INPUT argo.yaml), or use argo-doctor "
                             "collect", "note"))
    log_rules = [a.id for a in analyzers if a.needs.logs or a.needs.failing_pod_logs]
    if log_rules and not snap.log_files:
        notes.append(Problem("input", f"no container log in the input: {len(log_rules)} rules that read the Argo "
                             "components' logs had nothing to read. argo-doctor collect reads them (or kubectl logs "
                             "-n NAMESPACE POD -c CONTAINER --timestamps > logs/NAMESPACE/POD/CONTAINER.log in a "
                             "bundle)", "note"))
    return notes


def unknown_kinds(snap: Snapshot, scripts: LuaHealthScripts, read: frozenset[str] = frozenset()) -> list[Problem]:
    """One note for the kinds that neither Kubernetes, Argo, a CRD in the input, a health customization, Argo CD's
    built-in health scripts nor the rules run (`read`: their needs) know (a ServiceMonitor, a kustomization.yaml):
    indexed and read by no check, which is no error in the input."""
    defined: set[tuple[str, str]] = set()
    for crd in snap.of_kind("CustomResourceDefinition", "apiextensions.k8s.io"):
        names = crd.spec.get("names")
        if isinstance(names, dict):
            defined.add((str(crd.spec.get("group") or ""), str(names.get("kind") or "")))
    known = knowledge.known_kinds()
    unknown: list[list[Obj]] = []
    for group, kind in sorted(snap.kinds()):
        if (group, kind) in known or (group, kind) in defined or scripts.script_for(group, kind) is not None \
                or f"{group}/{kind}".lstrip("/") in read:
            continue
        if knowledge.has_builtin_lua(group, kind):  # Argo CD knows it: health_assessor's note names it
            continue
        unknown.append(snap.of_kind(kind, group))
    if not unknown:
        return []
    count = sum(len(objs) for objs in unknown)
    shown = ", ".join(f"{objs[0].kind} ({objs[0].api_version}, {len(objs)})" for objs in unknown[:UNKNOWN_KINDS_SHOWN])
    more = f" and {len(unknown) - UNKNOWN_KINDS_SHOWN} more" if len(unknown) > UNKNOWN_KINDS_SHOWN else ""
    return [Problem(
        unknown[0][0].location,
        f"{count} object(s) of {len(unknown)} kind(s) that no check reads: {shown}{more}; indexed, not checked (no "
        "CustomResourceDefinition, health customization or Argo CD health check for them in the input)",
        "note",
    )]


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[Problem] = set()
    result = []
    for problem in problems:
        if problem not in seen:
            seen.add(problem)
            result.append(problem)
    return result


MAP_RULES = ("rbac-overbroad", "rbac-missing", "component-known-bug")
"""The rules whose findings `map` shows beside the components (`scan` reports them too)."""


@dataclass
class InstallationMap:
    """What `argo-doctor map` reports: the components with their integrations and effective permissions, and the
    findings of the map's rules."""

    components: list[InstalledComponent]
    permissions: dict[tuple[str, str], Permissions]
    """Effective permissions of each component's ServiceAccount, by (namespace, workload name)."""
    result: ScanResult


def map_needs() -> Needs:
    """What a live `map` collects: the map rules' needs and the installation's settings."""
    return needs_for(select_analyzers(MAP_RULES)) | INSTALLATION_NEEDS


def installation_map(snap: Snapshot) -> InstallationMap:
    """The installation map of a snapshot."""
    result = run_scan(snap, select_analyzers(MAP_RULES))
    components = installation(snap)
    return InstallationMap(components, component_permissions(snap, components), result)
