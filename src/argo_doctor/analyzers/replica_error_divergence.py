"""replica-error-divergence: the same error on some replicas of a workload, none on the others.

Every error-level log line (logrus text or JSON) is reduced to a signature: its message and
`error` field with numbers, hex ids and UUIDs blanked. Per workload with several replicas
(Deployment, StatefulSet, Rollout) and container, a signature that appears on some replicas while
the other replicas' logs are clean points at something local to those replicas: their node (its
clock, network path, kernel), their mounted files, or their own state.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural
from argo_doctor.model import Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.logs import LogRecord, LogSignature

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Rollout")
MAX_SIGNATURES_PER_CONTAINER = 500
DEFAULT_MIN_COUNT = 3
_VOLATILE = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)


_SIGNATURE_INPUT = 4096
"""Characters of a message normalised: the signature keeps 300, so a 1 MiB line costs no more than a short one."""


def _error_of(record: LogRecord) -> str:
    return record.fields.get("error") or record.fields.get("grpc.error") or ""  # v3 logs gRPC errors as grpc.error


def error_signature(record: LogRecord) -> str:
    """The message and error of a log line with volatile parts blanked."""
    text = record.message[:_SIGNATURE_INPUT]
    if _error_of(record):
        text += " | " + _error_of(record)[:_SIGNATURE_INPUT]
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text.strip()[:300]


@dataclass
class _Seen:
    count: int
    first: datetime | None
    last: datetime | None
    example: LogRecord


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None or (b is not None and b < a) else a


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None or (b is not None and b > a) else a


class ReplicaErrorDivergence(Analyzer):
    """The same error on a subset of a workload's replicas."""

    id = "replica-error-divergence"
    title = "Errors on some replicas only"
    needs = Needs()
    signatures = ("generic.error-text", "generic.error-json")
    options: ClassVar[dict[str, str]] = {
        "min-count": f"occurrences of an error before it counts (default {DEFAULT_MIN_COUNT})",
    }

    def __init__(self) -> None:
        # (namespace, pod, container) -> signature -> what was seen
        self._seen: dict[tuple[str, str, str], dict[str, _Seen]] = defaultdict(dict)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Count the error by pod, container and signature."""
        if (record.level or "") not in ("error", "fatal", "panic"):
            return
        file = record.file
        per_pod = self._seen[(file.namespace, file.pod, file.container)]
        key = error_signature(record)
        seen = per_pod.get(key)
        if seen is None:
            if len(per_pod) < MAX_SIGNATURES_PER_CONTAINER:
                per_pod[key] = _Seen(1, record.time, record.time, record)
            return
        seen.count += 1
        seen.first = _earliest(seen.first, record.time)
        seen.last = _latest(seen.last, record.time)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per workload, container and set of affected replicas."""
        min_count = int(ctx.option(self.id, "min-count", DEFAULT_MIN_COUNT))
        for (workload, container), pods in sorted(_replicas(ctx.snap).items(), key=lambda kv: str(kv[0][0].ref)):
            if len(pods) < 2:
                continue
            by_signature: dict[str, dict[str, _Seen]] = defaultdict(dict)
            for pod in pods:
                for key, seen in self._seen.get((pod.namespace, pod.name, container), {}).items():
                    by_signature[key][pod.name] = seen
            groups: dict[frozenset[str], list[tuple[str, dict[str, _Seen]]]] = defaultdict(list)
            for key, per_pod in by_signature.items():
                total = sum(s.count for s in per_pod.values())
                if total >= min_count and len(per_pod) < len(pods):
                    groups[frozenset(per_pod)].append((key, per_pod))
            for affected, signatures in groups.items():
                yield self._finding(ctx, workload, container, pods, affected, signatures)

    def _finding(
        self, ctx: Context, workload: Obj, container: str, pods: list[Obj], affected: frozenset[str],
        signatures: list[tuple[str, dict[str, _Seen]]],
    ) -> Finding:
        signatures.sort(key=lambda item: -sum(s.count for s in item[1].values()))
        bad = [p for p in pods if p.name in affected]
        clean = [p for p in pods if p.name not in affected]
        clocks = ctx.clocks()
        lines, evidence = [], []
        for pod in bad:
            node = pod.node_name or "unknown node"
            counts = [seen[pod.name] for _, seen in signatures]
            total = sum(s.count for s in counts)
            first = min((s.first for s in counts if s.first), default=None)
            last = max((s.last for s in counts if s.last), default=None)
            clock = clocks.get(pod.node_name)
            clock_note = f", node clock {clock.describe()}" if clock is not None and clock.known else ""
            window = f" between {first:%Y-%m-%d %H:%M:%S} and {last:%H:%M:%S} (pod clock)" if first and last else ""
            lines.append(f"{pod.name} on {node}: {plural(total, 'error')}{window}{clock_note}")
            evidence.append(object_evidence(pod, ".spec.nodeName", f"{pod.name} runs on {node}"))
            evidence.append(log_evidence(counts[0].example))
        clean_text = ", ".join(f"{p.name} on {p.node_name or 'unknown node'}" for p in clean)
        example = next(iter(signatures[0][1].values())).example
        top = example.message + (f": {_error_of(example)}" if _error_of(example) else "")
        summary = (
            f"{plural(len(bad), 'replica')} of the {len(pods)} of {workload.kind} {workload.namespace}/{workload.name} "
            f"(container {container}) {'logs' if len(bad) == 1 else 'log'} an error the other replicas never log: "
            f"{'; '.join(lines)}. "
            f"Clean: {clean_text}. The error, as the first of them logged it: \"{top[:400]}\""
        )
        if len(signatures) > 1:
            summary += f" (and {len(signatures) - 1} more error signature(s) on the same replicas)"
        summary += (
            ". Replicas run the same image and configuration, so the difference lies in what they do not share: "
            "their node (clock, network path, kernel), their local state or their mounted files."
        )
        skewed = [p.node_name for p in bad if (c := clocks.get(p.node_name)) is not None and c.known
                  and c.offset is not None and abs(c.offset) > 1]
        if skewed:
            summary += f" The clock of {', '.join(sorted(set(skewed)))} is off: see node-clock-skew."
        return Finding(
            rule=self.id,
            severity=Severity.MEDIUM,
            title=f"{workload.name}: errors on {len(bad)} of {len(pods)} replicas only ({', '.join(sorted(affected))})",
            summary=summary,
            objects=[workload.ref, *(p.ref for p in bad)],
            evidence=evidence,
            remediation=Remediation(
                text=(
                    "Compare the failing replicas with the clean ones where they differ: the node (its clock "
                    "and time sync, DNS, egress route), then the pod (restarts, mounted Secrets). Deleting the pod "
                    "moves it but hides the cause; cordon the node first if the node is the difference."
                ),
                command=f"kubectl -n {workload.namespace} get pods -o wide | grep {workload.name}",
            ),
        )


def _replicas(snap: Snapshot) -> dict[tuple[Obj, str], list[Obj]]:
    """(workload, container) -> the workload's pods whose logs of that container are in the input."""
    found: dict[tuple[Obj, str], list[Obj]] = defaultdict(list)
    for log_file in snap.log_files:
        if log_file.previous:
            continue
        pod = snap.get("Pod", log_file.pod, log_file.namespace, "")
        workload = snap.workload_of(pod) if pod is not None else None
        if pod is None or workload is None or workload.kind not in WORKLOAD_KINDS:
            continue
        pods = found[(workload, log_file.container)]
        if pod not in pods:
            pods.append(pod)
    return found


