"""Argo Rollouts: whether a Degraded Rollout is stuck although its pods are fine (a restart is safe and clears it),
Degraded for a real reason (never restart), or not decidable from the input. The one decision that `scan` explains
and `remediate` acts on.

What it relies on, from the argo-rollouts controller (v1.x, `utils/rollout/rolloututil.go` CalculateRolloutPhase,
`utils/conditions/conditions.go`, `rollout/sync.go`): the phase is Degraded when an InvalidSpec condition exists or a
condition's reason is RolloutAborted or ProgressDeadlineExceeded, and the message is then `<reason>: <condition
message>` (`ProgressDeadlineExceeded: ReplicaSet "web-6d4b9" has timed out progressing.`); the phase is only
meaningful when `status.observedGeneration` equals `metadata.generation`. The current pod template's ReplicaSet,
its pods and its AnalysisRuns carry the label `rollouts-pod-template-hash=<status.currentPodHash>`. A Rollout is
paused by `spec.paused` or `status.pauseConditions` (`status.controllerPause` alone means it was resumed). A restart
is pending while `spec.restartAt` differs from `status.restartedAt` (`utils/replicaset` NeedsRestart). The controller
never times a Rollout out at an analysis, experiment or pause step (`rollout/sync.go` isIndefiniteStep); while
`status.stableRS` differs from the current pod hash an update is under way, and a restart would evict the stable pods
too (`rollout/restart.go` evicts every pod older than restartAt) without moving the update on.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from argo_doctor.snapshot import Component, Obj, Snapshot
from argo_doctor.sources.objects import as_int, as_list, mapping
from argo_doctor.timeutil import format_time, parse_time, shift

ROLLOUT_GROUP = "argoproj.io"
HASH_LABEL = "rollouts-pod-template-hash"
DEADLINE = "ProgressDeadlineExceeded"
ABORTED = "RolloutAborted"
DEFAULT_DEADLINE_SECONDS = 600
FAILED_ANALYSIS = ("Failed", "Error", "Inconclusive")
RUNNING_ANALYSIS = ("", "Pending", "Running")
"""AnalysisRun phases of a measurement still under way (no phase: not started yet)."""
ROLLOUT_NEEDS = frozenset({"argoproj.io/Rollout", "argoproj.io/AnalysisRun", "apps/ReplicaSet", "Pod"})
"""The kinds `assess_rollout` reads, as a rule declares them in its `needs`."""


Window = tuple[datetime | None, datetime | None]
"""The progress window that ran out: (start, end = when the deadline passed)."""


class RolloutState(enum.StrEnum):
    """The verdict on one Rollout."""

    STUCK = "stuck"
    """Degraded for ProgressDeadlineExceeded while every pod of the current ReplicaSet is fine: a restart is safe."""
    DEGRADED = "degraded"
    """Degraded for a real reason (the reasons say which): never restart."""
    UNDETERMINED = "undetermined"
    """Degraded, but the input lacks what is needed to decide, or the Rollout is changing (the reasons say what)."""
    NOT_DEGRADED = "not-degraded"
    """Not Degraded at all."""


@dataclass(frozen=True)
class PodSummary:
    """One pod of the current ReplicaSet."""

    name: str
    phase: str
    ready: bool
    restarts: int
    problem: str | None
    """What keeps it from counting as fine, e.g. `CrashLoopBackOff: back-off 5m0s restarting failed container=api
    ... (last exit: Error, exit code 1)`; None when it is Running and Ready."""


@dataclass(frozen=True)
class RolloutVerdict:
    """The decision on one Rollout, with what it rests on."""

    namespace: str
    name: str
    state: RolloutState
    summary: str
    reasons: tuple[str, ...]
    """DEGRADED: the real reasons; STUCK: the checks that passed; UNDETERMINED: what is missing or changing."""
    message: str
    since: datetime | None
    desired: int
    pod_hash: str | None
    pods: tuple[PodSummary, ...]
    restart_pending: bool
    restart_at: datetime | None
    resource_version: str | None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (for the audit trail)."""
        return {
            "namespace": self.namespace, "name": self.name, "state": self.state.value, "summary": self.summary,
            "reasons": list(self.reasons), "message": self.message, "since": format_time(self.since),
            "desired": self.desired, "pod_hash": self.pod_hash,
            "pods": [{"name": p.name, "phase": p.phase, "ready": p.ready, "restarts": p.restarts,
                      "problem": p.problem} for p in self.pods],
            "restart_pending": self.restart_pending, "restart_at": format_time(self.restart_at),
            "resource_version": self.resource_version,
        }


class RolloutInputs(NamedTuple):
    """The objects related to a Rollout in its namespace; None for a kind the input does not hold there."""

    replicasets: list[dict[str, Any]] | None
    pods: list[dict[str, Any]] | None
    analysis_runs: list[dict[str, Any]] | None


def rollouts(snap: Snapshot) -> list[Obj]:
    """Every argoproj.io Rollout of the snapshot, by namespace and name."""
    return sorted(snap.of_kind("Rollout", ROLLOUT_GROUP), key=lambda o: (o.namespace, o.name))


def rollout_inputs(snap: Snapshot, rollout: Obj) -> RolloutInputs:
    """The ReplicaSets, pods and AnalysisRuns of the Rollout's namespace (unfiltered: `assess_rollout` keeps the
    Rollout's own). A kind is None, "not known", when the collection could not read it, or when the snapshot has
    none of it in that namespace and does not say it listed that kind cluster-wide (a live collection records the
    kinds it listed in `bundle.yaml` `options.needs`, and the kinds the cluster does not serve in `absent`):
    a bundle made with `kubectl get` for some kinds only proves nothing about the others."""
    refused = {entry.get("need") for entry in snap.unread}
    listed = {str(kind) for kind in as_list(mapping(snap.meta.get("options")).get("needs"))}
    absent = [str(entry) for entry in as_list(snap.meta.get("absent"))]

    def of(kind: str, group: str) -> list[dict[str, Any]] | None:
        need = f"{group}/{kind}" if group else kind
        if f"kind:{need}" in refused or (group and f"group:{group}" in refused):
            return None
        found = snap.of_kind(kind, group, rollout.namespace)
        if found:
            return [o.raw for o in found]
        not_served = any(a.startswith(f"{kind} ({group}/") for a in absent) if group else False
        return [] if need in listed or not_served else None

    return RolloutInputs(of("ReplicaSet", "apps"), of("Pod", ""), of("AnalysisRun", ROLLOUT_GROUP))


def assess(snap: Snapshot, rollout: Obj) -> RolloutVerdict:
    """`assess_rollout` over the snapshot's objects."""
    return assess_rollout(rollout.raw, *rollout_inputs(snap, rollout))


def controllers(snap: Snapshot) -> list[Component]:
    """The Argo Rollouts controllers found in the snapshot (`knowledge/components.yaml`, product argo-rollouts)."""
    return [c for c in snap.components if c.product == "argo-rollouts"]


def controller_version(snap: Snapshot) -> str | None:
    """The Argo Rollouts controller's version (its image tag) when the snapshot shows exactly one."""
    versions = {c.version for c in controllers(snap) if c.version}
    return versions.pop() if len(versions) == 1 else None


def duration(delta: timedelta) -> str:
    """`45 s`, `12 min`, `2 h 14 min`, `3 d 4 h`: how long, to the unit that matters."""
    seconds = max(0, int(delta.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min" if minutes else f"{secs} s"


# -- the decision --------------------------------------------------------------------------------------------------
def assess_rollout(rollout: Mapping[str, Any], replicasets: Sequence[Mapping[str, Any]] | None,
                   pods: Sequence[Mapping[str, Any]] | None,
                   analysis_runs: Sequence[Mapping[str, Any]] | None) -> RolloutVerdict:
    """Pure. Related objects may include unrelated ones of the same namespace: it keeps those owned by the Rollout
    and labelled `rollouts-pod-template-hash=<currentPodHash>`. None means "not known" (UNDETERMINED when needed);
    an empty list means "there are none"."""
    return _Assessment(rollout, replicasets, pods, analysis_runs).verdict()


class _Assessment:
    def __init__(self, rollout: Mapping[str, Any], replicasets: Sequence[Mapping[str, Any]] | None,
                 pods: Sequence[Mapping[str, Any]] | None, analysis_runs: Sequence[Mapping[str, Any]] | None) -> None:
        self.raw = rollout
        self.meta = mapping(rollout.get("metadata"))
        self.spec = mapping(rollout.get("spec"))
        self.status = mapping(rollout.get("status"))
        self.name = str(self.meta.get("name") or "")
        self.namespace = str(self.meta.get("namespace") or "")
        self.uid = str(self.meta.get("uid") or "")
        self.pod_hash = str(self.status.get("currentPodHash") or "") or None
        self.desired = as_int(self.spec.get("replicas"), 1)
        self.conditions = [mapping(c) for c in as_list(self.status.get("conditions"))]
        self.progressing = next((c for c in self.conditions if c.get("type") == "Progressing"), {})
        self.message = str(self.status.get("message") or self.progressing.get("message") or "")
        self.restart_at = parse_time(self.spec.get("restartAt"))
        restarted_at = parse_time(self.status.get("restartedAt"))
        asked = self.spec.get("restartAt") not in (None, "")  # one whose time cannot be read is pending too
        self.restart_pending = asked and (self.restart_at is None or self.restart_at != restarted_at)
        self.replicasets = None if replicasets is None else [r for r in replicasets if self._current_rs(r)]
        self.rs = self.replicasets[0] if self.replicasets else None
        self.rs_name = str(mapping(self.rs.get("metadata")).get("name") or "") if self.rs else ""
        self.pods = None if pods is None else [p for p in pods if self._current_pod(p)]
        self.runs = None if analysis_runs is None else [a for a in analysis_runs if self._current_run(a)]
        self.window = self._window()
        self.summaries = [_pod_summary(p, self.window) for p in self.pods or []]

    # -- what belongs to the Rollout's current pod template
    def _owned(self, obj: Mapping[str, Any]) -> bool | None:
        """True/False when the object has owners, None when it has none."""
        owners = [mapping(o) for o in as_list(mapping(obj.get("metadata")).get("ownerReferences"))]
        if not owners:
            return None
        return any(o.get("kind") == "Rollout" and (o.get("uid") == self.uid if self.uid and o.get("uid")
                                                   else o.get("name") == self.name) for o in owners)

    def _hash_of(self, obj: Mapping[str, Any]) -> str | None:
        labels = mapping(mapping(obj.get("metadata")).get("labels"))
        value = labels.get(HASH_LABEL)
        return str(value) if value else None

    def _current_rs(self, rs: Mapping[str, Any]) -> bool:
        return (self.pod_hash is not None and self._hash_of(rs) == self.pod_hash
                and _namespace(rs) == self.namespace and self._owned(rs) is not False)

    def _current_pod(self, pod: Mapping[str, Any]) -> bool:
        if self.pod_hash is None or self._hash_of(pod) != self.pod_hash or _namespace(pod) != self.namespace:
            return False
        owners = [mapping(o) for o in as_list(mapping(pod.get("metadata")).get("ownerReferences"))]
        if not owners:
            return True
        return any(o.get("kind") == "ReplicaSet" and o.get("name") == self.rs_name for o in owners) if self.rs_name \
            else any(o.get("kind") == "ReplicaSet" for o in owners)

    def _current_run(self, run: Mapping[str, Any]) -> bool:
        return (self.pod_hash is not None and self._hash_of(run) == self.pod_hash
                and _namespace(run) == self.namespace and self._owned(run) is not False)

    def _window(self) -> Window:
        """The progress window that ran out: from the Progressing condition's last update minus the deadline, to
        that update. A container that restarted inside it counts as restarting (it may be why the deadline passed);
        one that restarted after it and is ready again did not cause the deadline."""
        updated = parse_time(self.progressing.get("lastUpdateTime")) or parse_time(
            self.progressing.get("lastTransitionTime"))
        if updated is None:
            return None, None
        seconds = as_int(self.spec.get("progressDeadlineSeconds"), DEFAULT_DEADLINE_SECONDS)
        if seconds <= 0:  # a deadline the controller rejects (InvalidSpec): every earlier restart counts
            return None, updated
        try:
            return shift(updated, -timedelta(seconds=seconds)), updated
        except OverflowError:  # an int64 of seconds is past what a timedelta holds
            return None, updated

    # -- facts about the Rollout
    def degraded(self) -> bool:
        phase = self.status.get("phase")
        if phase:
            return bool(phase == "Degraded")
        return any(c.get("type") == "InvalidSpec" or c.get("reason") in (ABORTED, DEADLINE) for c in self.conditions)

    def deadline(self) -> bool:
        return self.message.startswith(DEADLINE) or (
            self.progressing.get("reason") == DEADLINE and self.progressing.get("status") == "False")

    def since(self) -> datetime | None:
        if self.progressing.get("status") == "False":
            return parse_time(self.progressing.get("lastTransitionTime"))
        invalid = next((c for c in self.conditions if c.get("type") == "InvalidSpec"), None)
        return parse_time(invalid.get("lastTransitionTime")) if invalid else None

    def uses_analysis(self) -> bool:
        strategy = mapping(self.spec.get("strategy"))
        canary, blue_green = mapping(strategy.get("canary")), mapping(strategy.get("blueGreen"))
        steps = [mapping(s) for s in as_list(canary.get("steps"))]
        return bool(canary.get("analysis") or blue_green.get("prePromotionAnalysis")
                    or blue_green.get("postPromotionAnalysis") or any(s.get("analysis") for s in steps)
                    or any(mapping(s.get("experiment")).get("analyses") for s in steps))

    def rollout_reasons(self) -> list[str]:
        """Real reasons that the Rollout itself shows, whatever its pods do."""
        reasons = []
        for cond in self.conditions:
            if cond.get("type") == "InvalidSpec":
                reasons.append(f"InvalidSpec: {cond.get('message') or 'the spec is invalid'}")
            elif cond.get("type") == "ReplicaFailure" and cond.get("status") == "True":
                reasons.append(f"ReplicaFailure: {cond.get('message') or cond.get('reason') or ''}".rstrip(": "))
        if self.message.startswith("InvalidSpec") and not any(r.startswith("InvalidSpec") for r in reasons):
            detail = self.message.removeprefix("InvalidSpec").lstrip(": ")
            reasons.append(f"InvalidSpec: {detail or 'the spec is invalid (the status names no condition)'}")
        if self.abort_lifted():
            pass
        elif self.status.get("abort") or self.progressing.get("reason") == ABORTED or self.message.startswith(ABORTED):
            when = format_time(parse_time(self.status.get("abortedAt")))
            text = self.message if self.message.startswith(ABORTED) else (
                f"{ABORTED}: {self.progressing.get('message') or self.message}".rstrip(": "))
            reasons.append(f"aborted{' at ' + when if when else ''} ({text})")
        if self.spec.get("paused"):
            reasons.append("paused by hand (spec.paused: true): the controller makes no progress until it is resumed")
        pauses = [mapping(p) for p in as_list(self.status.get("pauseConditions"))]
        if pauses:
            listed = ", ".join(f"{p.get('reason') or 'paused'}" + (
                f" since {format_time(parse_time(p.get('startTime')))}" if parse_time(p.get("startTime")) else "")
                for p in pauses)
            reasons.append(f"paused by the controller ({listed}): it waits to be promoted or resumed")
        reasons.extend(self.analysis_reasons())
        return reasons

    def abort_lifted(self) -> str | None:
        """What lifts an abort the controller has not processed yet: a retry (status.abort cleared, what `kubectl
        argo rollouts retry` and Argo CD's retry action do) or a full promotion (status.promoteFull)."""
        aborted = self.progressing.get("reason") == ABORTED or self.message.startswith(ABORTED) or bool(
            self.status.get("abort"))
        if not aborted:
            return None
        if "abort" in self.status and not self.status.get("abort"):
            return "a retry is pending: status.abort was cleared but the controller has not yet replaced the aborted "
        if self.status.get("promoteFull"):
            return "a full promotion is pending: status.promoteFull is set but the controller has not yet replaced "
        return None

    def current_run_names(self) -> set[str]:
        """The AnalysisRuns the Rollout's status names as its current ones."""
        canary, blue_green = mapping(self.status.get("canary")), mapping(self.status.get("blueGreen"))
        refs = [canary.get("currentStepAnalysisRunStatus"), canary.get("currentBackgroundAnalysisRunStatus"),
                blue_green.get("prePromotionAnalysisRunStatus"), blue_green.get("postPromotionAnalysisRunStatus")]
        return {str(mapping(r).get("name")) for r in refs if mapping(r).get("name")}

    def analysis_reasons(self) -> list[str]:
        if not self.runs:
            return []
        named = self.current_run_names()
        runs = [r for r in self.runs if str(mapping(r.get("metadata")).get("name")) in named] if named else self.runs
        return [analysis_problem(r) for r in sorted(runs, key=_name)
                if mapping(r.get("status")).get("phase") in FAILED_ANALYSIS]

    def in_progress(self) -> list[str]:
        """What the Rollout is in the middle of, which a restart would not move on: an update not promoted yet (the
        stable ReplicaSet is not the current one), an analysis, experiment or pause step, a measurement running."""
        found: list[str] = []
        stable = str(self.status.get("stableRS") or "")
        strategy = mapping(self.spec.get("strategy"))
        if stable and self.pod_hash and stable != self.pod_hash:
            how = ("canary" if strategy.get("canary") is not None else
                   "blue-green" if strategy.get("blueGreen") is not None else "")
            found.append(
                f"a {how + ' ' if how else ''}update is under way: stable ReplicaSet {self.name}-{stable} still serves "
                f"and {self.name}-{self.pod_hash} is the new one; a restart would evict the stable pods too and not "
                f"move the update on: promote it when the new pods are good (kubectl argo rollouts promote "
                f"{self.name} -n {self.namespace}) or abort it (kubectl argo rollouts abort {self.name} -n "
                f"{self.namespace})")
        steps = as_list(mapping(strategy.get("canary")).get("steps"))
        index = as_int(self.status.get("currentStepIndex"), -1)
        step = mapping(steps[index]) if 0 <= index < len(steps) else {}
        kind = next((k for k in ("analysis", "experiment", "pause") if k in step), None)
        if kind is not None:
            found.append(f"it is at step {index} of {len(steps)} ({kind}), where the controller waits and never "
                         "times it out")
        experiment = mapping(self.status.get("canary")).get("currentExperiment")
        if experiment:
            found.append(f"Experiment {experiment} of the current revision is running")
        for run in sorted(self.runs or [], key=_name):
            phase = str(mapping(run.get("status")).get("phase") or "")
            if phase in RUNNING_ANALYSIS and (_name(run) in self.current_run_names() or not self.current_run_names()):
                found.append(f"AnalysisRun {_name(run)} of the current revision is "
                             f"{phase or 'not started'}: the Rollout is mid-analysis")
        return found

    def generation_lag(self) -> str | None:
        observed = str(self.status.get("observedGeneration") or "")
        generation = self.meta.get("generation")
        number = as_int(observed, -1)
        if number >= 0 and generation is not None and number != as_int(generation, number):
            return (f"the controller has not yet observed generation {generation} of the Rollout (observed "
                    f"{observed}): its status may be stale")
        return None

    # -- the verdict
    def verdict(self) -> RolloutVerdict:
        if not self.degraded():
            phase = str(self.status.get("phase") or "not Degraded")
            said = str(self.status.get("message") or "")
            return self._make(RolloutState.NOT_DEGRADED, f"{phase}{': ' + said if said else ''}", [])
        real = self.rollout_reasons()
        if real:
            return self._make(RolloutState.DEGRADED, f"Degraded: {real[0]}", real + self.pod_reasons()[0])
        lifted = self.abort_lifted()
        if lifted:
            pending = f"{lifted}the aborted condition ({self.message or self.progressing.get('message')})"
            return self._make(RolloutState.UNDETERMINED, f"Degraded ({ABORTED}) but {pending}", [pending])
        if not self.deadline():
            return self._make(RolloutState.UNDETERMINED, f"Degraded for a reason argo-doctor does not know: "
                              f"{self.message or 'no message'}", [f"unknown Degraded reason: {self.message}"])
        missing = self.missing()
        if missing:
            return self._make(RolloutState.UNDETERMINED, f"Degraded ({DEADLINE}) but the input lacks "
                              + "; ".join(missing), [f"missing: {m}" for m in missing])
        pod_real, changing = self.pod_reasons()
        if pod_real:
            return self._make(RolloutState.DEGRADED, f"Degraded ({DEADLINE}): {pod_real[0]}", pod_real)
        changing[:0] = self.in_progress()
        lag = self.generation_lag()
        if lag:
            changing.insert(0, lag)
        if self.restart_pending:
            asked = format_time(self.restart_at) or f"{self.spec.get('restartAt')!r}, a time that cannot be read"
            changing.insert(0, f"a restart is already pending (spec.restartAt {asked}, "
                               f"status.restartedAt {self.status.get('restartedAt') or 'unset'}): wait for it")
        if changing:
            return self._make(RolloutState.UNDETERMINED, f"Degraded ({DEADLINE}) but {changing[0]}", changing)
        ready = len(self.summaries) - sum(1 for p in self.pods or [] if _finished(p))
        pods = "the only pod" if ready == 1 else f"all {ready} pods"
        summary = (f"Degraded ({DEADLINE}) although {pods} of ReplicaSet {self.rs_name} "
                   f"{'is' if ready == 1 else 'are'} ready and available")
        return self._make(RolloutState.STUCK, summary, self.checks_passed())

    def missing(self) -> list[str]:
        missing = []
        if self.pod_hash is None:
            missing.append("status.currentPodHash (the current pod template is unknown)")
        if self.replicasets is None:
            missing.append(f"the ReplicaSets of namespace {self.namespace}")
        elif self.pod_hash is not None and self.rs is None:
            missing.append(f"the ReplicaSet of pod hash {self.pod_hash}")
        if self.pods is None:
            missing.append(f"the pods of namespace {self.namespace}")
        if self.runs is None and self.uses_analysis():
            missing.append(f"the AnalysisRuns of namespace {self.namespace} (the Rollout uses analysis)")
        return missing

    def pod_reasons(self) -> tuple[list[str], list[str]]:
        """(real reasons, signs of change) from the current ReplicaSet and its pods; empty when they are unknown."""
        if self.rs is None or self.pods is None:
            return [], []
        real: list[str] = []
        changing: list[str] = []
        spec, status = mapping(self.rs.get("spec")), mapping(self.rs.get("status"))
        wanted = as_int(spec.get("replicas"), 1)
        have, ready = as_int(status.get("replicas")), as_int(status.get("readyReplicas"))
        available = as_int(status.get("availableReplicas"))
        done = {id(p) for p in self.pods if _finished(p)}
        active = [s for s, p in zip(self.summaries, self.pods, strict=True)
                  if not _terminating(p) and id(p) not in done]
        fine = [s for s in active if s.problem is None]
        replaced = len(fine) >= wanted > 0  # a pod that ended (evicted, say) beside enough ready replacements
        for summary, pod in zip(self.summaries, self.pods, strict=True):
            kind = _pod_kind(pod, self.window)
            if kind == "real" and not (replaced and id(pod) in done):
                real.append(f"pod {summary.name}: {summary.problem}")
            elif kind == "changing":
                changing.append(f"pod {summary.name}: {summary.problem}")
        failure = next((mapping(c) for c in as_list(status.get("conditions"))
                        if mapping(c).get("type") == "ReplicaFailure" and mapping(c).get("status") == "True"), None)
        if failure is not None:
            why = failure.get("message") or failure.get("reason")
            real.append(f"ReplicaSet {self.rs_name} cannot create pods: {why}")
        if wanted == 0:
            changing.append(f"the current ReplicaSet {self.rs_name} is scaled to 0: there is no pod to judge")
        elif real and len(fine) < wanted:
            real.append(f"{len(fine)} of {wanted} pods of ReplicaSet {self.rs_name} ready")
        elif not real and len(active) < wanted:
            if have >= wanted:
                changing.append(f"the input holds {len(active)} of the {wanted} pods of ReplicaSet {self.rs_name}")
            else:
                real.append(f"only {len(fine)} of {wanted} pods of ReplicaSet {self.rs_name} exist and are ready "
                            f"(the ReplicaSet has {have})")
        elif not real and not (ready == available == wanted):
            changing.append(f"ReplicaSet {self.rs_name} reports {ready} ready and {available} available of {wanted} "
                            "(its status lags behind its pods, or minReadySeconds has not passed)")
        return real, changing

    def checks_passed(self) -> list[str]:
        ended = [s for s, p in zip(self.summaries, self.pods or [], strict=False) if _finished(p)]
        ready = len(self.summaries) - len(ended)
        checks = [
            f"{self.message or DEADLINE}",
            f"ReplicaSet {self.rs_name} (pod hash {self.pod_hash}): {ready} of {ready} pods Running and Ready, "
            "ready = available = desired"
            + ("".join(f"; pod {s.name} ended ({s.problem}) and was replaced" for s in ended)),
            "no pod waiting, pending, terminating, or restarting during the progress window",
            "not aborted, not paused, no InvalidSpec condition, no update, step or measurement under way",
            "no failed, errored or inconclusive AnalysisRun for the current pod hash" if self.runs is not None
            else "no AnalysisRun in the input (the Rollout uses no analysis)",
            "no restart pending",
        ]
        return checks

    def _make(self, state: RolloutState, summary: str, reasons: Iterable[str]) -> RolloutVerdict:
        return RolloutVerdict(
            namespace=self.namespace, name=self.name, state=state, summary=summary, reasons=tuple(reasons),
            message=self.message, since=self.since(), desired=self.desired, pod_hash=self.pod_hash,
            pods=tuple(self.summaries), restart_pending=self.restart_pending, restart_at=self.restart_at,
            resource_version=str(self.meta.get("resourceVersion")) if self.meta.get("resourceVersion") else None,
        )


# -- pods ----------------------------------------------------------------------------------------------------------
def _namespace(obj: Mapping[str, Any]) -> str:
    return str(mapping(obj.get("metadata")).get("namespace") or "")


def _name(obj: Mapping[str, Any]) -> str:
    return str(mapping(obj.get("metadata")).get("name") or "")


def _terminating(pod: Mapping[str, Any]) -> bool:
    return bool(mapping(pod.get("metadata")).get("deletionTimestamp"))


def _finished(pod: Mapping[str, Any]) -> bool:
    """Whether a pod has ended for good (Failed, e.g. evicted, or Succeeded): its ReplicaSet replaces it."""
    return not _terminating(pod) and mapping(pod.get("status")).get("phase") in ("Failed", "Succeeded")


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    status = mapping(pod.get("status"))
    ready = next((mapping(c) for c in as_list(status.get("conditions")) if mapping(c).get("type") == "Ready"), None)
    if ready is not None:
        return ready.get("status") == "True"
    statuses = [mapping(c) for c in as_list(status.get("containerStatuses"))]
    return bool(statuses) and all(c.get("ready") for c in statuses)


def _last_exit(container: Mapping[str, Any]) -> str:
    last = mapping(mapping(container.get("lastState")).get("terminated"))
    if not last:
        return ""
    text = f"last exit: {last.get('reason') or 'terminated'}, exit code {last.get('exitCode')}"
    if last.get("message"):
        text += f": {str(last['message']).strip()}"
    finished = format_time(parse_time(last.get("finishedAt")))
    return text + (f", at {finished}" if finished else "")


def _container_problem(container: Mapping[str, Any], init: bool) -> str | None:
    state = mapping(container.get("state"))
    waiting, terminated = mapping(state.get("waiting")), mapping(state.get("terminated"))
    who = f"{'init ' if init else ''}container {container.get('name')}"
    if waiting:
        reason = str(waiting.get("reason") or "Waiting")
        restarts = as_int(container.get("restartCount"))
        last = _last_exit(container)
        if reason == "CrashLoopBackOff":  # its message is the kubelet's back-off boilerplate: the last exit says more
            details = [who, f"{restarts} restart{'s' if restarts != 1 else ''}"] + ([last] if last else [])
            return f"{reason} ({', '.join(details)})"
        text = f"{reason} ({who})"
        if waiting.get("message"):
            text += f": {str(waiting['message']).strip()}"
        return text + (f" ({last})" if last else "")
    if terminated and (not init or as_int(terminated.get("exitCode")) != 0):
        text = f"{terminated.get('reason') or 'Terminated'} ({who}), exit code {terminated.get('exitCode')}"
        return text + (f": {str(terminated['message']).strip()}" if terminated.get("message") else "")
    if init and not terminated and not container.get("ready"):
        return f"{who} has not completed"
    return None


def _recent_restart(container: Mapping[str, Any], window: Window) -> str | None:
    restarts = as_int(container.get("restartCount"))
    if not restarts:
        return None
    finished = parse_time(mapping(mapping(container.get("lastState")).get("terminated")).get("finishedAt"))
    start, end = window
    if finished is not None and ((start is not None and finished < start) or (end is not None and finished > end)):
        return None
    return (f"container {container.get('name')} restarted {restarts} time{'s' if restarts != 1 else ''} "
            f"({_last_exit(container) or 'when is unknown'})")


def _pod_problem(pod: Mapping[str, Any], window: Window) -> tuple[str | None, str]:
    """(the pod's problem, its kind: "ok", "real" for a reason the Rollout cannot progress, "changing" for a pod
    in transition or restarted recently)."""
    meta, status = mapping(pod.get("metadata")), mapping(pod.get("status"))
    phase = str(status.get("phase") or "Unknown")
    if meta.get("deletionTimestamp"):
        when = format_time(parse_time(meta.get("deletionTimestamp")))
        return f"Terminating (deletion requested {when})", "changing"
    if phase == "Failed":
        detail = ": ".join(str(x) for x in (status.get("reason"), status.get("message")) if x)
        return f"Failed{': ' + detail if detail else ''}", "real"
    if phase == "Succeeded":
        return "Succeeded: its containers exited", "real"
    scheduled = next((mapping(c) for c in as_list(status.get("conditions"))
                      if mapping(c).get("type") == "PodScheduled"), {})
    if scheduled.get("status") == "False":
        reason = scheduled.get("reason") or "Unschedulable"
        return f"{reason}: {scheduled.get('message') or 'not scheduled'}", "real"
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for container in (mapping(c) for c in as_list(status.get(key))):
            problem = _container_problem(container, init)
            if problem:
                return problem, "real"
    if phase != "Running":
        return f"{phase} (no container is running yet)", "real"
    if not _pod_ready(pod):
        ready = next((mapping(c) for c in as_list(status.get("conditions")) if mapping(c).get("type") == "Ready"), {})
        if ready.get("status") == "Unknown":  # the node controller's mark when the kubelet stops reporting
            detail = ready.get("message") or ready.get("reason") or "its node stopped reporting its status"
            return f"Ready Unknown: {detail}", "changing"
        detail = ready.get("message") or "its Ready condition is False"
        return f"Running but not Ready: {detail}", "real"
    for container in (mapping(c) for c in as_list(status.get("containerStatuses"))):
        restarted = _recent_restart(container, window)
        if restarted:
            return restarted, "changing"
    return None, "ok"


def _pod_kind(pod: Mapping[str, Any], window: Window) -> str:
    return _pod_problem(pod, window)[1]


def _pod_summary(pod: Mapping[str, Any], window: Window) -> PodSummary:
    status = mapping(pod.get("status"))
    restarts = sum(as_int(mapping(c).get("restartCount")) for c in as_list(status.get("containerStatuses")))
    return PodSummary(name=_name(pod), phase=str(status.get("phase") or "Unknown"), ready=_pod_ready(pod),
                      restarts=restarts, problem=_pod_problem(pod, window)[0])


# -- analysis ------------------------------------------------------------------------------------------------------
def metric_query(metric: Mapping[str, Any]) -> str | None:
    """What a metric measures: the provider's query (Prometheus, Datadog, New Relic, Wavefront, Graphite, InfluxDB,
    SkyWalking), a web metric's URL, or the provider's name."""
    provider = mapping(metric.get("provider"))
    for name, config in provider.items():
        config = mapping(config)
        if config.get("query"):
            return f"{name}: {' '.join(str(config['query']).split())}"
        queries = mapping(config.get("queries"))
        if queries:
            return f"{name}: " + "; ".join(f"{k}={' '.join(str(v).split())}" for k, v in queries.items())
        if config.get("url"):
            return f"{name}: {config['url']}"
        return str(name)
    return None


def analysis_problem(run: Mapping[str, Any]) -> str:
    """`AnalysisRun web-6d4b9-3 Failed: metric success-rate Failed (...)`, with each failing metric, its message,
    last value and query."""
    status = mapping(run.get("status"))
    spec_metrics = {str(mapping(m).get("name")): mapping(m) for m in as_list(mapping(run.get("spec")).get("metrics"))}
    dry_run = {str(mapping(d).get("metricName")) for d in as_list(mapping(run.get("spec")).get("dryRun"))}
    parts = []
    for result in (mapping(r) for r in as_list(status.get("metricResults"))):
        name = str(result.get("name") or "")
        if result.get("phase") not in FAILED_ANALYSIS or name in dry_run or "*" in dry_run:
            continue
        text = f"metric {name} {result.get('phase')}"
        details = []
        if result.get("message"):
            details.append(str(result["message"]).strip())
        measurements = [mapping(m) for m in as_list(result.get("measurements"))]
        failing = [m for m in measurements if m.get("phase") == result.get("phase")] or measurements
        if failing and failing[-1].get("value") is not None:
            details.append(f"last {str(result.get('phase')).lower()} value {failing[-1].get('value')}")
        counts = [f"{key} {result[key]}" for key in ("failed", "error", "inconclusive") if as_int(result.get(key))]
        if counts:
            details.append(", ".join(counts))
        query = metric_query(spec_metrics.get(name, {}))
        if query:
            details.append(f"query {query}")
        parts.append(text + (f" ({'; '.join(details)})" if details else ""))
    head = f"AnalysisRun {_name(run)} {status.get('phase')}"
    if status.get("message"):
        head += f": {str(status['message']).strip()}"
    return head + (" — " + "; ".join(parts) if parts else "")
