"""controller-sharding: application controller shards that disagree, leave a cluster to nobody, or carry most of the
load.

With several controller replicas each cluster belongs to one shard (controller/sharding/sharding.go): its Secret's
`shard` when below the replica count, else by the algorithm (`legacy`: FNV-32a of the cluster Secret's uid modulo the
replicas; `round-robin`: its rank among the clusters sorted by uid; the in-cluster destination without a Secret is
shard 0). The shards are computed here for legacy and round-robin (consistent-hashing depends on the live load, and is
not), with the Applications and resources each holds; `Ignoring cluster` lines from every controller pod of the input
say a cluster nobody handles.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural
from argo_doctor.facts.clusters import IN_CLUSTER, cluster_secrets, destination_server, servers_by_name
from argo_doctor.facts.installation import CONTAINER_HINTS, Setting, main_container, resolve, secrets_in_input
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.argocd_secrets import KEY
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping

DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/high_availability/#argocd-application-controller",)
SKIP_RECONCILE = "argocd.argoproj.io/skip-reconcile"
"""A cluster Secret annotated so is ignored by every shard on purpose (controller/sharding/cache.go)."""
SKEW = 2.0
"""A shard holding this many times its fair share of Applications (and most of them) is reported."""


@dataclass
class _Shard:
    clusters: list[str] = field(default_factory=list)
    apps: int = 0
    resources: int = 0


def fnv32a(text: str) -> int:
    """FNV-1a, 32 bits (Go's hash/fnv New32a)."""
    value = 2166136261
    for byte in text.encode():
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value


class ControllerSharding(Analyzer):
    """Application controller shards that disagree, leave a cluster to nobody, or carry most of the load."""

    id = "controller-sharding"
    title = "Application controller shards are misconfigured or unbalanced"
    signatures = ("argocd.ignoring-cluster",)
    needs = Needs(frozenset({"Secret", "argoproj.io/Application", "apps/StatefulSet"}), metrics=True)

    def __init__(self) -> None:
        self._ignored: dict[str, dict[str, LogRecord]] = defaultdict(dict)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep, per cluster, the controller pods that log they ignore it (with their last such line)."""
        if match is not None:
            self._ignored[match.group("server").rstrip("/")][record.file.pod] = record

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        controller = ctx.snap.component("application-controller")
        if controller is None or controller.workload is None:
            return
        workload = controller.workload
        replicas = as_int(workload.spec.get("replicas"))
        replicas = 1 if replicas is None else replicas
        container = main_container(ctx.snap, controller, CONTAINER_HINTS.get("application-controller", ""))
        if container is None:
            return
        told = resolve(ctx.snap, container, None, "ARGOCD_CONTROLLER_REPLICAS", None)
        algorithm = resolve(ctx.snap, container, "sharding-method", "ARGOCD_CONTROLLER_SHARDING_ALGORITHM", "legacy")
        dynamic = resolve(ctx.snap, container, None, "ARGOCD_ENABLE_DYNAMIC_CLUSTER_DISTRIBUTION", "false")
        if dynamic.value == "true":
            return  # the Deployment's replicas and a shard ConfigMap decide: not computed here
        told_count = _count(told.value)
        if replicas >= 2 and told.known and told_count is None:
            yield _replicas_told(workload, replicas, told, (
                f"{replicas} controller replicas, none told to shard: each processes every cluster",
                "without ARGOCD_CONTROLLER_REPLICAS: each pod then takes itself for the only one (\"Processing all "
                "cluster shards\") and reconciles and syncs every Application, so they work the same clusters twice "
                "and their syncs overlap", "or scale it to one replica"))
            return
        if told_count is not None and told_count != replicas:
            yield _replicas_told(workload, replicas, told, (
                f"Controller shards disagree: {replicas} replicas, ARGOCD_CONTROLLER_REPLICAS={told.value}",
                f"but tells them there are {told.value} (ARGOCD_CONTROLLER_REPLICAS, {told.source}): each pod "
                "computes the clusters it owns from that number, so clusters are processed twice or by nobody",
                f"or scale the {workload.kind} to {told.value}"))
        pods = {p.name for p in controller.pods}
        skipped = {str(mapping(s.raw.get(KEY)).get("server") or "").rstrip("/") for s in cluster_secrets(ctx.snap)
                   if s.annotations.get(SKIP_RECONCILE, "").lower() == "true"}
        for server, lines in self._ignored.items():
            if pods and pods <= set(lines) and server not in skipped:
                yield _nobody(workload, server, list(lines.values()))
        if replicas < 2 or told_count != replicas:
            return
        yield from _balance(ctx, workload, replicas, str(algorithm.value or "legacy"), algorithm.evidence)


def _replicas_told(workload: Obj, replicas: int, told: Setting, words: tuple[str, str, str]) -> Finding:
    """The controller's replicas against what its pods are told (ARGOCD_CONTROLLER_REPLICAS): title, what happens,
    and the other way out."""
    title, happens, other = words
    return Finding(
        rule="controller-sharding", severity=Severity.HIGH, title=title,
        summary=f"{workload.kind} {workload.namespace}/{workload.name} runs {plural(replicas, 'replica')} {happens}.",
        objects=[workload.ref],
        evidence=[object_evidence(workload, ".spec.replicas", f"replicas: {replicas}"), *told.evidence],
        remediation=Remediation(
            text=f"Set ARGOCD_CONTROLLER_REPLICAS to {replicas} on the controller ({other}); the two must always "
                 "change together.",
            command=f"kubectl -n {workload.namespace} set env {workload.kind.lower()}/{workload.name} "
                    f"ARGOCD_CONTROLLER_REPLICAS={replicas}", docs=DOCS))


def _nobody(workload: Obj, server: str, lines: list[LogRecord]) -> Finding:
    return Finding(
        rule="controller-sharding", severity=Severity.HIGH,
        title=f"No controller shard handles cluster {server}",
        summary=(f"Every application controller pod of the input logs `Ignoring cluster {server}`: no shard owns "
                 "the cluster, so its Applications are never refreshed or synced."),
        objects=[workload.ref],
        evidence=[log_evidence(r) for r in lines[:4]],
        remediation=Remediation(text="Check ARGOCD_CONTROLLER_REPLICAS against the replicas, and the cluster "
                                     "Secret's `shard` (below the replica count).", docs=DOCS))


def _balance(ctx: Context, workload: Obj, replicas: int, algorithm: str,
             algorithm_evidence: tuple[Evidence, ...]) -> Iterable[Finding]:
    """Shard assignments (legacy, round-robin) with their load; one finding for explicit shards out of range and one
    for a shard that carries most of the load."""
    secrets = cluster_secrets(ctx.snap)
    if not secrets_in_input(ctx.snap, workload.namespace):
        return  # where each cluster goes depends on its Secret
    by_server = {str(mapping(s.raw.get(KEY)).get("server") or "").rstrip("/"): s for s in secrets}
    names = servers_by_name(ctx.snap)
    ranked = sorted(s.uid or "" for s in secrets)
    if IN_CLUSTER not in by_server and ctx.snap.settings.cm.get("cluster.inClusterEnabled", "true") != "false":
        ranked.insert(0, "")  # ListClusters adds the in-cluster cluster, id "", when no Secret describes it
    shards = [_Shard() for _ in range(replicas)]
    out_of_range = []
    if algorithm not in ("legacy", "round-robin"):
        return
    if any(not s.uid for s in secrets):
        return  # a Secret without its uid (a hand-written manifest) cannot be placed
    for app in ctx.snap.applications():
        server = destination_server(app, names)
        secret = by_server.get(server)
        if secret is None and server != IN_CLUSTER:
            return  # a destination the input has no Secret of: its shard is not known
        number, ignored = _shard_of(secret, algorithm, replicas, ranked)
        if ignored and secret is not None and secret not in out_of_range:
            out_of_range.append(secret)
        shard = shards[number]
        if server not in shard.clusters:
            shard.clusters.append(server)
        shard.apps += 1
        shard.resources += len(as_list(app.status.get("resources")))
    for secret in out_of_range:
        facts = mapping(secret.raw.get(KEY))
        yield Finding(
            rule="controller-sharding", severity=Severity.LOW,
            title=f"Cluster Secret {secret.name} asks for shard {facts.get('shard')} of {replicas}",
            summary=(f"Cluster Secret {secret.namespace}/{secret.name} ({facts.get('server')}) sets shard "
                     f"{facts.get('shard')}, and the controller runs {plural(replicas, 'replica')} (shards 0 to "
                     f"{replicas - 1}): Argo CD puts the cluster on shard 0 (\"Using shard 0\")."),
            objects=[secret.ref, workload.ref],
            evidence=[object_evidence(secret, f".{KEY}.shard", f"shard {facts.get('shard')}"),
                      object_evidence(workload, ".spec.replicas", f"replicas: {replicas}")],
            remediation=Remediation(text=f"Set the Secret's shard below {replicas}, or remove it.", docs=DOCS))
    total = sum(s.apps for s in shards)
    busiest = max(range(replicas), key=lambda i: shards[i].apps)
    if total >= 2 * replicas and shards[busiest].apps >= SKEW * total / replicas and shards[busiest].apps > total / 2:
        table = "; ".join(f"shard {i}: {plural(s.apps, 'Application')}, {plural(s.resources, 'resource')}, "
                          f"{plural(len(s.clusters), 'cluster')}" for i, s in enumerate(shards))
        load, load_evidence = _queues(ctx, f"{workload.name}-{busiest}")
        yield Finding(
            rule="controller-sharding", severity=Severity.MEDIUM,
            title=f"Controller shard {busiest} carries {shards[busiest].apps} of {total} Applications",
            summary=(f"With {replicas} controller replicas and the {algorithm} algorithm, clusters are assigned so: "
                     f"{table}. Shard {busiest} ({workload.name}-{busiest}) does most of the work while the others "
                     "idle; sharding moves whole clusters, so a cluster with most Applications stays on one shard."
                     + (f" Its metrics: {load}." if load else "")),
            objects=[workload.ref, *(by_server[c].ref for c in shards[busiest].clusters if c in by_server)],
            evidence=[object_evidence(workload, ".spec.replicas", f"replicas: {replicas}"), *algorithm_evidence,
                      *load_evidence],
            remediation=Remediation(
                text="Spread the clusters: pin them with the `shard` field of their cluster Secrets, or use the "
                     "round-robin or consistent-hashing algorithm (controller.sharding.algorithm in "
                     "argocd-cmd-params-cm); when one cluster holds most Applications, more replicas do not help, "
                     "raise the controller's processors (controller.status.processors, controller.operation.processors)"
                     " instead.", docs=DOCS))


QUEUES = ("app_reconciliation_queue", "app_operation_processing_queue")
"""The controller's work queues (controller/appcontroller.go), whose depth workqueue_depth reports."""


def _queues(ctx: Context, pod: str) -> tuple[str, list[Evidence]]:
    """The queue depths and mean reconciliation time in the metrics file of one controller pod (a file named after
    it, `metrics/<pod>.prom`); "" when the input has none."""
    said, evidence = [], []
    seconds = count = 0.0
    for sample in ctx.snap.metrics(("workqueue_depth", "argocd_app_reconcile_sum", "argocd_app_reconcile_count")):
        if sample.location.rsplit("/", 1)[-1].split(".", 1)[0] != pod:
            continue
        if sample.name == "workqueue_depth" and sample.labels.get("name") in QUEUES:
            said.append(f"{sample.labels['name']} depth {sample.value:g}")
            evidence.append(Evidence("metric", sample.location, f"workqueue_depth{{name={sample.labels['name']}}} "
                                                                f"{sample.value:g}"))
        elif sample.name == "argocd_app_reconcile_sum":
            seconds += sample.value
        elif sample.name == "argocd_app_reconcile_count":
            count += sample.value
    if count:
        said.append(f"reconciliations take {seconds / count:.1f} s on average (argocd_app_reconcile)")
    return "; ".join(said), evidence


def _count(text: str | None) -> int | None:
    """A non-negative integer setting, None when absent or not one."""
    text = (text or "").strip()
    return int(text) if text.isdecimal() and text.isascii() else None


def _shard_of(secret: Obj | None, algorithm: str, replicas: int, ranked: list[str]) -> tuple[int, bool]:
    """The shard of a destination's cluster (0 for one without a Secret), and whether its Secret names a shard out
    of range (which Argo CD ignores for the algorithm's)."""
    if secret is None:
        return 0, False
    given = _count(str(mapping(secret.raw.get(KEY)).get("shard") or ""))
    if given is not None:
        return (given, False) if given < replicas else (0, True)  # out of range: "Using shard 0" (cache.go)
    uid = secret.uid or ""
    return (fnv32a(uid) % replicas if uid else 0) if algorithm == "legacy" else ranked.index(uid) % replicas, False
