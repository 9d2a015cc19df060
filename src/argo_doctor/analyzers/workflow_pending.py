"""workflow-pending: an Argo Workflow that waits and does not start, and what holds it.

From the workflow-controller (workflow/controller/controller.go, operator.go, workflow/sync): a Workflow postponed by
the controller's `parallelism` or `namespaceParallelism` ("Workflow processing has been postponed because too many
workflows are already running"), one waiting for a semaphore or mutex ("Waiting for <lock> lock. Lock status: n/m",
the holders in `status.synchronization`), or a step whose pod the API server refuses for a ResourceQuota (transient:
the node stays Pending with `exceeded quota` and the controller retries until a deadline) or cannot be scheduled.
Reported once the Workflow has waited `min-minutes` (10).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import ClassVar

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import age, object_evidence
from argo_doctor.facts.installation import config_data
from argo_doctor.facts.workflows import WORKFLOW_GROUP
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

DOCS = ("https://argo-workflows.readthedocs.io/en/latest/parallelism/",
        "https://argo-workflows.readthedocs.io/en/latest/synchronization/")
POSTPONED = "postponed because too many workflows are already running"
LOCK = re.compile(r"Waiting for (?P<lock>\S+) lock(?: \([^)]*\))?\. Lock status: (?P<a>\d+)/(?P<b>\d+)")
QUOTA = re.compile(r"exceeded quota: (?P<quota>[\w.-]+)")
NAMESPACE_LIMIT = "workflows.argoproj.io/parallelism-limit"
CONTROLLER_CONFIG = "workflow-controller-configmap"
ACTIVE = ("Pending", "Running")
STALE_AFTER = 300
"""Seconds after its end a holder still named by a waiter is a lost lock, not the waiter's next reconcile to come."""


class WorkflowPending(Analyzer):
    """Workflows that wait and do not start."""

    id = "workflow-pending"
    title = "Workflow waits and does not start"
    options: ClassVar[dict[str, str]] = {"min-minutes": "report a Workflow that has waited this long (10)"}
    needs = Needs(frozenset({"argoproj.io/Workflow", "ConfigMap", "Namespace", "ResourceQuota", "Pod"}))

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        now = ctx.snap.reference_time
        wait = ctx.option(self.id, "min-minutes", 10.0)
        workflows = ctx.snap.of_kind("Workflow", WORKFLOW_GROUP)
        for wf in sorted(workflows, key=lambda w: (w.namespace, w.name)):
            if wf.status.get("phase") in ("", None, *ACTIVE):
                finding = self._workflow(ctx, wf, workflows, now, wait * 60)
                if finding is not None:
                    yield finding

    def _workflow(self, ctx: Context, wf: Obj, workflows: list[Obj], now: datetime, wait: float) -> Finding | None:
        """What holds the Workflow (itself postponed or locked) or one of its steps, once that has waited `wait`
        seconds: a step's wait counts from the step's own start."""
        message = str(wf.status.get("message") or "")
        since = parse_time(wf.status.get("startedAt")) or wf.created
        nodes = [(node_id, mapping(n)) for node_id, n in mapping(wf.status.get("nodes")).items()]
        if POSTPONED in message or LOCK.search(message):
            if since is None or (now - since).total_seconds() < wait:
                return None
            waited = age((now - since).total_seconds() / 60)
            locked = LOCK.search(message)
            return self._locked(ctx, wf, locked, waited, now) if locked else \
                self._postponed(ctx, wf, workflows, waited)
        pending = []
        for node_id, node in nodes:
            started = parse_time(node.get("startedAt"))
            if node.get("phase") == "Pending" and node.get("message") and started is not None and \
                    (now - started).total_seconds() >= wait:
                pending.append((node_id, node, age((now - started).total_seconds() / 60)))
        locked_node = next(((n, m, w) for _, n, w in pending if (m := LOCK.search(str(n.get("message"))))), None)
        if locked_node is not None:
            return self._locked(ctx, wf, locked_node[1], locked_node[2], now)
        pods = [(i, n, w) for i, n, w in pending if n.get("type") == "Pod"]
        if not pods:
            return None
        node_id, node, waited = pods[0]
        text = str(node.get("message"))
        evidence = [object_evidence(wf, f".status.nodes.{node_id}", f"{node.get('displayName') or node_id} Pending: "
                                                                    f"{text}")]
        quota = QUOTA.search(text)
        if quota is not None:
            obj = ctx.snap.get("ResourceQuota", quota["quota"], wf.namespace, "")
            used = ""
            if obj is not None:
                hard, spent = mapping(obj.status.get("hard")), mapping(obj.status.get("used"))
                used = "; ".join(f"{k} {spent.get(k, '?')} of {v}" for k, v in sorted(hard.items()))
                evidence.append(object_evidence(obj, ".status", used))
            return self._finding(wf, Severity.MEDIUM, f"ResourceQuota {quota['quota']}, which refuses its pods",
                                 f"Step {node.get('displayName') or node_id} has waited {waited}: the API server "
                                 f"refuses its pod for ResourceQuota {quota['quota']}" + (f" ({used})" if used else "")
                                 + "; the controller retries without end (a quota refusal is transient to it) until "
                                 "a deadline fails the step.", evidence,
                                 f"Free room in the quota (finished pods that podGC has not deleted count until they "
                                 f"are gone: kubectl -n {wf.namespace} get pods --field-selector=status.phase!="
                                 "Running), raise it, or lower the step's requests; give the template a "
                                 "pendingTimeout or the Workflow an activeDeadlineSeconds so that it does not wait "
                                 "for ever.")
        return self._finding(wf, Severity.MEDIUM, "a step's pod, which does not start",
                             f"Step {node.get('displayName') or node_id} has waited {waited}: {text}.", evidence,
                             "Fix what the pod's message says (its events tell more: kubectl describe pod).")

    def _postponed(self, ctx: Context, wf: Obj, workflows: list[Obj], waited: str) -> Finding:
        ns = wf.namespace
        running = [w for w in workflows if w.status.get("phase") == "Running"]
        here = [w for w in running if w.namespace == ns]
        settings, where = _limits(ctx, ns)
        limits = [f"{k} {v}" for k, v in settings.items() if v]
        oldest = sorted(here or running, key=lambda w: str(w.status.get("startedAt") or ""))[:3]
        evidence: list[Evidence] = [object_evidence(wf, ".status.message", str(wf.status.get("message")))]
        evidence.extend(where)
        evidence.extend(object_evidence(w, ".status.startedAt", f"Running since {w.status.get('startedAt')}")
                        for w in oldest)
        return self._finding(
            wf, Severity.MEDIUM, "the controller's parallelism limit",
            f"It has waited {waited}: the controller admits no more Workflows "
            + (f"({', '.join(limits)}; " if limits else "(the limit's setting is not in the input; ")
            + f"{len(here)} Running in namespace {ns}, {len(running)} in the input). It starts when one of them ends"
            + (": the oldest are " + ", ".join(f"{w.namespace}/{w.name}" for w in oldest) if oldest else "") + ".",
            evidence,
            "Find out why the running Workflows do not end (argo list --running), give them activeDeadlineSeconds, "
            f"or raise parallelism / namespaceParallelism in {CONTROLLER_CONFIG} (or the namespace's "
            f"{NAMESPACE_LIMIT} label).")

    def _locked(self, ctx: Context, wf: Obj, locked: re.Match[str], waited: str, now: datetime) -> Finding:
        lock = locked["lock"]
        holders = _holders(wf, lock)
        evidence: list[Evidence] = [object_evidence(wf, ".status.synchronization", f"waiting for {lock}; held by "
                                                                                    f"{', '.join(holders) or '?'}")]
        ended = []
        database = "(" in locked.group(0)  # `Waiting for X lock (sem/…)`: shared by controllers, maybe elsewhere
        for holder in holders:
            parts = holder.split("/")
            ns, name = (parts[0], parts[1]) if len(parts) >= 2 else (wf.namespace, parts[0])
            held = ctx.snap.get("Workflow", name, ns, WORKFLOW_GROUP)
            if held is None:
                continue  # not in the input: it may run in a namespace or cluster the input does not hold
            evidence.append(object_evidence(held, ".status.phase", str(held.status.get("phase") or "Pending")))
            finished = parse_time(held.status.get("finishedAt"))
            if not database and held.status.get("phase") not in ACTIVE and finished is not None and \
                    (now - finished).total_seconds() > STALE_AFTER:
                ended.append(f"{ns}/{name} ({held.status.get('phase')} at {held.status.get('finishedAt')})")
        why = (f"It has waited {waited} for {lock} (lock status {locked['a']}/{locked['b']}), held by "
               f"{', '.join(holders) or 'a holder the status does not name'}.")
        if ended:
            why += (f" The holder {', '.join(ended)} has ended, yet the lock is still held: the controller lost track "
                    "of it (a restart, a Workflow deleted while it held it).")
        return self._finding(wf, Severity.HIGH if ended else Severity.MEDIUM,
                             f"lock {lock}" + (" held by a Workflow that ended" if ended else ""), why,
                             evidence,
                             "Restart the workflow-controller to rebuild the locks from the running Workflows "
                             "(kubectl -n <its namespace> rollout restart deployment/workflow-controller)." if ended
                             else "Let the holder finish, or give it an activeDeadlineSeconds; raise the semaphore's "
                                  "limit (its ConfigMap key) if more should run at once.")

    def _finding(self, wf: Obj, severity: Severity, what: str, why: str, evidence: list[Evidence],
                 fix: str) -> Finding:
        ns, name = wf.namespace, wf.name
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Workflow {name} waits for {what}",
            summary=f"Workflow {ns}/{name} ({wf.status.get('phase') or 'Pending'}) waits. {why}",
            objects=[wf.ref],
            evidence=evidence,
            remediation=Remediation(text=fix, command=f"argo get {name} -n {ns}", docs=DOCS),
        )


def _limits(ctx: Context, namespace: str) -> tuple[dict[str, str], list[Evidence]]:
    """The controller's parallelism settings (its ConfigMap, the namespace's label), with where they were read."""
    found: dict[str, str] = {}
    evidence: list[Evidence] = []
    config = ctx.snap.config_map(CONTROLLER_CONFIG)
    if config is not None:
        data = config_data(config)
        for key in ("parallelism", "namespaceParallelism"):
            if data.get(key):
                found[key] = data[key].strip()
        if found:
            evidence.append(object_evidence(config, ".data", ", ".join(f"{k}: {v}" for k, v in found.items())))
    ns = ctx.snap.get("Namespace", namespace, "", "")
    if ns is not None and ns.labels.get(NAMESPACE_LIMIT):
        found["namespace label"] = ns.labels[NAMESPACE_LIMIT]
        evidence.append(object_evidence(ns, ".metadata.labels", f"{NAMESPACE_LIMIT}: {ns.labels[NAMESPACE_LIMIT]}"))
    return found, evidence


def _holders(wf: Obj, lock: str) -> list[str]:
    """The holders `status.synchronization` names for the lock the Workflow waits for."""
    sync = mapping(wf.status.get("synchronization"))
    holders: list[str] = []
    for entry in as_list(mapping(sync.get("mutex")).get("waiting")):
        entry = mapping(entry)
        if entry.get("mutex") == lock and entry.get("holder"):
            holders.append(str(entry["holder"]))
    for entry in as_list(mapping(sync.get("semaphore")).get("waiting")):
        entry = mapping(entry)
        if entry.get("semaphore") == lock:
            holders.extend(str(h) for h in as_list(entry.get("holders")))
    return list(dict.fromkeys(holders))
