"""Restart stuck Rollouts: read what the verdict needs, decide, re-check on a fresh read, patch, record.

`fix rollout-restart` and `serve` both go through `Restarter`, and it decides with `facts.rollouts.assess_rollout`,
the code that the `rollout-stuck-degraded` rule explains with. Every decision is taken inside the audit store's
`exclusive()` section, so replicas of the service sharing one store never decide on the same Rollout at once,
and the restart patch carries the Rollout's resourceVersion, so a change between read and write is a 409 and a
new decision, never a second restart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

from argo_doctor.errors import ArgoDoctorError
from argo_doctor.facts.rollouts import RolloutVerdict, assess_rollout
from argo_doctor.remediate.decide import HOUR, Decision, decide
from argo_doctor.remediate.kube import (
    KubeClient,
    KubeError,
    application_path,
    events_path,
    related_paths,
    rollout_path,
)
from argo_doctor.remediate.policy import Policy
from argo_doctor.remediate.store import AuditEntry, AuditStore, StoreError
from argo_doctor.sources.redact import clean
from argo_doctor.timeutil import format_time

ATTEMPTS = 3
HASH_LABEL = "rollouts-pod-template-hash"
EVENT_REASON = "ArgoDoctorRestart"


class Unavailable(ArgoDoctorError):
    """The API or the audit store could not be reached: nothing was decided, and a retry may help."""


@dataclass(frozen=True)
class Notification:
    """What Argo CD Notifications sends about an Application (its destination namespace in `namespace`)."""

    app: str
    app_namespace: str
    project: str | None = None
    namespace: str | None = None
    health: str | None = None
    revision: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Outcome:
    """The final result for one Rollout: `restarted`, `dry-run`, `skipped` or `failed`."""

    rollout: str
    action: str
    reason: str
    policy: str = ""
    patch: dict[str, Any] | None = None
    verdict: RolloutVerdict | None = None
    answer: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The service's answer for this Rollout."""
        return {"rollout": self.rollout, "action": self.action, "reason": self.reason}


@dataclass
class Result:
    """Every Rollout decided for one request, and why none was when the request itself was refused."""

    outcomes: list[Outcome] = field(default_factory=list)
    reason: str | None = None


class _Plan(NamedTuple):
    """A restart decided on a read of the Rollout, to be sent if the Rollout has not changed since."""

    rollout: dict[str, Any]
    verdict: RolloutVerdict
    decision: Decision


NOT_FOUND = "the Rollout does not exist"


class Restarter:
    """Decides and acts on Rollouts through one client, one policy and (optionally) one audit store."""

    def __init__(self, client: KubeClient, policy: Policy, store: AuditStore | None, *, source: str,
                 instance: str, dry_run: bool | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.client = client
        self.policy = policy
        self.store = store
        self.source = source
        self.instance = instance
        self.dry_run = policy.dry_run if dry_run is None else dry_run
        self.clock = clock
        self._restarts: dict[str, datetime] = {}

    def notify(self, note: Notification) -> Result:
        """Decide on every Rollout that the notified Application manages."""
        context = note.raw or {"app": note.app, "appNamespace": note.app_namespace}
        started = time.perf_counter()
        if not self.policy.application_allowed(note.app_namespace, note.app):
            return self._refused(f"application {note.app_namespace}/{note.app} is not in allow.applications",
                                 "application not allowed", context, started)
        try:
            app = self.client.get(application_path(note.app_namespace, note.app))
        except KubeError as exc:
            if exc.retryable:
                raise Unavailable(str(exc)) from None
            return self._refused(f"cannot read the Application: {exc.reason}", "allowed", context, started)
        targets = _rollouts_of(app)
        if not targets:
            return self._refused(f"Application {note.app_namespace}/{note.app} manages no Rollout", "allowed",
                                 context, started)
        return Result([self._decide(namespace or note.namespace or "", name, context)
                       for namespace, name in targets])

    def rollouts(self, namespace: str | None, *, app: tuple[str, str] | None = None,
                 name: str | None = None) -> Result:
        """Decide on the Rollouts of a namespace (None: of every namespace the policy allows), of an Application
        (`(namespace, name)`) there, or one by name."""
        context: dict[str, Any] = {"namespace": namespace or "*", "app": "/".join(app) if app else None,
                                   "name": name}
        if namespace is not None and not self.policy.namespace_allowed(namespace):
            return self._refused(f"namespace {namespace} is not in the policy's allow.namespaces",
                                 "namespace not allowed", context, time.perf_counter())
        if app is not None and not self.policy.application_allowed(*app):
            return self._refused(f"application {'/'.join(app)} is not in the policy's allow.applications",
                                 "application not allowed", context, time.perf_counter())
        try:
            if name is not None and namespace is not None:
                keys = [(namespace, name)]
            elif app is not None:
                managed = self.client.get(application_path(*app))
                default = namespace or _destination_namespace(managed)  # where Argo CD puts a namespaced resource
                keys = [(ns or default, n) for ns, n in _rollouts_of(managed)
                        if namespace is None or (ns or namespace) == namespace]
            else:
                listed = self.client.get(rollout_path(namespace))
                keys = sorted((str(_meta(item).get("namespace") or namespace), str(_meta(item).get("name")))
                              for item in _items(listed))
                if namespace is None:  # every namespace: those the policy allows
                    keys = [(ns, n) for ns, n in keys if self.policy.namespace_allowed(ns)]
        except KubeError as exc:
            raise Unavailable(str(exc)) from None
        outcomes = []
        for ns, n in keys:  # one Rollout the API failed on does not hide what was done to the others
            try:
                outcomes.append(self._decide(ns, n, context))
            except Unavailable as exc:
                outcomes.append(Outcome(f"{ns}/{n}", "failed", str(exc)))
        return Result(outcomes)

    def _decide(self, namespace: str, name: str, context: dict[str, Any]) -> Outcome:
        """One Rollout: a first look without the lock, which decides every Rollout that is not stuck; the lock,
        a fresh read and the patch only for a stuck one."""
        key = f"{namespace}/{name}"
        started = time.perf_counter()
        if not self.policy.namespace_allowed(namespace):  # never read
            outcome = Outcome(key, "skipped", f"namespace {namespace} is not in allow.namespaces",
                              "namespace not allowed")
            return self._record(outcome, context, started)
        try:
            first = self._look(namespace, name, locked=False)
            if isinstance(first, Outcome):
                return self._record(first, context, started)
            with self.store.exclusive() if self.store else nullcontext():
                return self._record(self._attempts(namespace, name), context, started)
        except KubeError as exc:
            outcome = Outcome(key, "failed", str(exc))
            self._record(outcome, context, started)
            if exc.retryable:
                raise Unavailable(str(exc)) from None
            return outcome
        except StoreError as exc:  # the lock could not be taken or kept
            raise Unavailable(str(exc)) from None

    def _look(self, namespace: str, name: str, *, locked: bool,
              answers: tuple[str, ...] = ()) -> Outcome | _Plan | None:
        """Read the Rollout and decide: an Outcome when nothing is to be done, a _Plan when a restart is (only
        `locked`), None when it is stuck and the decision is to be taken under the lock."""
        key = f"{namespace}/{name}"
        try:
            rollout = self.client.get(rollout_path(namespace, name))
        except KubeError as exc:
            if exc.status == 404:
                return Outcome(key, "skipped", NOT_FOUND)
            raise
        verdict = self._verdict(namespace, rollout)
        # Without the history (cooldown, cap), a skip stays a skip: only what could be restarted takes the lock.
        decision = decide(verdict, self.policy, now=self.clock(), last_restart=None, restarts_last_hour=0,
                          dry_run=self.dry_run)
        if decision.action != "skipped":
            if not locked:
                return None
            decision = self._policy_decision(verdict)
        if decision.action == "restart":
            return _Plan(rollout, verdict, decision)
        action = "dry-run" if decision.action == "dry-run" else "skipped"
        return Outcome(key, action, decision.reason, decision.policy, decision.patch, verdict,
                       "; ".join(answers) or None)

    def _attempts(self, namespace: str, name: str) -> Outcome:
        """Under the lock: read, decide, re-read, patch; again after a 409 or a change between the reads."""
        key = f"{namespace}/{name}"
        answers: list[str] = []
        for _ in range(ATTEMPTS):
            decided = self._look(namespace, name, locked=True, answers=tuple(answers))
            if isinstance(decided, Outcome):
                return decided
            assert decided is not None, "a locked look always decides"
            rollout, verdict, decision = decided
            fresh = self.client.get(rollout_path(namespace, name))
            if _version(fresh) != _version(rollout):
                answers.append(f"changed between reads ({_version(rollout)} → {_version(fresh)}); decided again")
                continue
            try:
                patched = self.client.patch(rollout_path(namespace, name), decision.patch or {})
            except KubeError as exc:
                if exc.status == 409:
                    answers.append(exc.reason)
                    continue
                landed = self._landed(namespace, name, decision) if exc.status is None else None
                if landed is None:
                    raise
                patched = landed
                answers.append(f"{exc.reason}; a re-read shows the patch applied")
            self._restarts[key] = self.clock()
            answers.append(f"200 OK, resourceVersion {_version(patched)}")
            answers.append(self._event(namespace, name, patched, decision, verdict))
            return Outcome(key, "restarted", decision.reason, decision.policy, decision.patch, verdict,
                           "; ".join(answers))
        return Outcome(key, "skipped", f"the Rollout changed on each of {ATTEMPTS} attempts; left alone",
                       "allowed", None, None, "; ".join(answers))

    def _landed(self, namespace: str, name: str, decision: Decision) -> dict[str, Any] | None:
        """After a PATCH without an answer: the Rollout if it carries our restartAt, else None."""
        wanted = (decision.patch or {}).get("spec", {}).get("restartAt")
        try:
            now = self.client.get(rollout_path(namespace, name))
        except KubeError:
            return None
        spec = now.get("spec")
        return now if isinstance(spec, dict) and spec.get("restartAt") == wanted else None

    def _verdict(self, namespace: str, rollout: dict[str, Any]) -> RolloutVerdict:
        """The rule's verdict from the Rollout and the objects of its current pod hash, read now."""
        pod_hash = _status(rollout).get("currentPodHash")
        related: dict[str, list[dict[str, Any]] | None] = dict.fromkeys(("replicasets", "pods", "analysisruns"))
        if isinstance(pod_hash, str) and pod_hash and _status(rollout).get("phase") in ("Degraded", None):
            params = {"labelSelector": f"{HASH_LABEL}={pod_hash}"}
            for kind, path in related_paths(namespace).items():
                try:
                    related[kind] = _items(self.client.get(path, params))
                except KubeError as exc:
                    if exc.retryable:
                        raise
                    related[kind] = [] if exc.status == 404 else None
        return assess_rollout(rollout, related["replicasets"], related["pods"], related["analysisruns"])

    def _policy_decision(self, verdict: RolloutVerdict) -> Decision:
        now = self.clock()
        key = f"{verdict.namespace}/{verdict.name}"
        if self.store is None:  # `fix` without --audit-db: what this run did
            last = self._restarts.get(key)
            count = sum(1 for when in self._restarts.values() if when > now - HOUR)
        else:
            try:
                last = self.store.last_restart(key)
                count = self.store.restarts_since(now - HOUR)
            except StoreError as exc:
                raise Unavailable(str(exc)) from None
        return decide(verdict, self.policy, now=now, last_restart=last, restarts_last_hour=count,
                      dry_run=self.dry_run)

    def _event(self, namespace: str, name: str, rollout: dict[str, Any], decision: Decision,
               verdict: RolloutVerdict) -> str:
        """A Normal Event on the Rollout, so `kubectl describe` shows who restarted it; a failure is only noted."""
        stamp = format_time(self.clock().replace(microsecond=0))
        meta = _meta(rollout)
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "namespace": namespace,
                               "name": name, "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
            "reason": EVENT_REASON, "type": "Normal", "action": "Restart",
            "message": clean(f"argo-doctor set spec.restartAt={(decision.patch or {}).get('spec', {}).get('restartAt')}"
                             f": {verdict.summary}")[:1024],
            "source": {"component": "argo-doctor"}, "reportingComponent": "argo-doctor",
            "reportingInstance": self.instance, "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }
        try:
            self.client.create(events_path(namespace), event)
        except KubeError as exc:
            return f"event not created: {exc.reason}"
        return f"event {EVENT_REASON} created"

    def _refused(self, reason: str, outcome: str, context: dict[str, Any], started: float) -> Result:
        """A request decided before any Rollout was read; recorded like any decision."""
        return Result(reason=self._record(Outcome("", "skipped", reason, outcome), context, started).reason)

    def _record(self, outcome: Outcome, context: dict[str, Any], started: float) -> Outcome:
        """Write the decision to the audit trail, redacted as every output is (a Rollout's or an AnalysisRun's
        message may hold a URL with a password or a token); a failure makes the request retryable unless it
        restarted. The outcome returned is the redacted one, which the answer and the logs show."""
        outcome, context = clean(outcome), clean(context)
        if self.store is None:
            return outcome
        verdict = outcome.verdict
        entry = AuditEntry(
            time=self.clock(), source=self.source, instance=self.instance, rollout=outcome.rollout,
            action=outcome.action, reason=outcome.reason, notification=context,
            state=verdict.as_dict() if verdict else None, verdict=verdict.state.value if verdict else "",
            policy=outcome.policy, patch=outcome.patch, api_answer=outcome.answer,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        try:
            self.store.record(entry)
        except StoreError as exc:
            if outcome.action == "restarted":  # done already: the answer must not invite a retry
                return replace(outcome, reason=f"{outcome.reason} (audit record failed: {exc})")
            raise Unavailable(str(exc)) from None
        return outcome


def _destination_namespace(app: dict[str, Any]) -> str:
    """The namespace an Application deploys to (`spec.destination.namespace`); empty when it names none."""
    spec = app.get("spec")
    destination = spec.get("destination") if isinstance(spec, dict) else None
    found = destination.get("namespace") if isinstance(destination, dict) else None
    return str(found) if found else ""


def _rollouts_of(app: dict[str, Any]) -> list[tuple[str, str]]:
    """The Rollouts an Application lists in `status.resources`."""
    resources = _status(app).get("resources")
    found = []
    for res in resources if isinstance(resources, list) else []:
        if isinstance(res, dict) and res.get("kind") == "Rollout" and res.get("group") == "argoproj.io" \
                and isinstance(res.get("name"), str):
            found.append((str(res.get("namespace") or ""), res["name"]))
    return sorted(set(found))


def _items(doc: dict[str, Any]) -> list[dict[str, Any]]:
    items = doc.get("items")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _version(obj: dict[str, Any]) -> str | None:
    value = _meta(obj).get("resourceVersion")
    return str(value) if value is not None else None
