"""node-clock-skew: a node whose clock is off against the API server's.

Offsets come from `argo_doctor.facts.clock` (Leases, Node heartbeats, kubelet Events, optional probes),
with their uncertainty. A node is reported when even the most favourable end of its offset's
range is beyond the threshold; the severity grows with the offset. One info finding lists every
node's estimate, so that nodes in sync and nodes with too few samples are stated, not implied.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.facts.clock import ClockEstimate
from argo_doctor.model import Finding, Needs, Ref, Remediation, Severity

DEFAULT_THRESHOLD = 1.0
DOCS = (
    "https://kubernetes.io/docs/concepts/architecture/leases/#node-heart-beats",
    "https://chrony-project.org/doc/4.5/chronyc.html",
    "https://www.freedesktop.org/software/systemd/man/latest/systemd-timesyncd.service.html",
)


def severity_for(offset: float) -> Severity:
    """High from a minute (JWTs and TLS checks with the usual 30-60 s leeway fail), medium from
    ten seconds, low below."""
    size = abs(offset)
    if size >= 60:
        return Severity.HIGH
    if size >= 10:
        return Severity.MEDIUM
    return Severity.LOW


class NodeClockSkew(Analyzer):
    """Nodes whose clock is off."""

    id = "node-clock-skew"
    title = "Node clock is off"
    needs = Needs(frozenset({"coordination.k8s.io/Lease", "Node"}), events=True)
    options: ClassVar[dict[str, str]] = {
        "threshold": f"seconds of offset beyond which a node is reported (default {DEFAULT_THRESHOLD:g})",
        "min-samples": "samples a node needs before its offset is stated (default 2)",
    }

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per skewed node, and one summary of every node."""
        threshold = ctx.option(self.id, "threshold", DEFAULT_THRESHOLD)
        clocks = ctx.clocks()
        if not clocks:
            return
        skewed = []
        for estimate in clocks.values():
            bounds = estimate.bounds()
            if bounds is not None and min(abs(bounds[0]), abs(bounds[1])) > threshold and bounds[0] * bounds[1] > 0:
                skewed.append(estimate)
                yield self._skewed(estimate, threshold)
        yield self._summary(clocks, skewed, threshold)

    def _skewed(self, estimate: ClockEstimate, threshold: float) -> Finding:
        assert estimate.offset is not None
        node = estimate.node
        return Finding(
            rule=self.id,
            severity=severity_for(estimate.offset),
            title=f"Node {node} clock is {abs(estimate.offset):.0f} s {'ahead' if estimate.offset > 0 else 'behind'}",
            summary=(
                f"Node {node}'s clock is {estimate.describe()}, beyond the {threshold:g} s threshold. Measured from "
                "times the node wrote (Lease renewals, status heartbeats, kubelet events) against the times the "
                "API server stamped on the same writes. Everything on this node that signs or checks time-bound "
                "credentials is affected: JWTs it signs (GitHub App, OIDC client assertions) look expired or "
                "issued in the future to their verifiers, certificates look not yet valid or expired, and its "
                "logs are out of order with the rest of the cluster. A clock this far off means time "
                "synchronisation is not running on the node."
            ),
            objects=[Ref("v1", "Node", "", node)],
            evidence=estimate.evidence(),
            remediation=Remediation(
                text=(
                    "Configure time synchronisation on the node (chrony or systemd-timesyncd, pointed at your "
                    "cloud's time service, e.g. 169.254.169.123 on AWS), then check it: `chronyc tracking` "
                    "(System time offset near 0) or `timedatectl show-timesync --all` / `timedatectl status` "
                    "('System clock synchronized: yes'). Fix the node image or its bootstrap so new nodes get it too."
                ),
                command=f"kubectl debug node/{node} -it --image=busybox -- chroot /host timedatectl status",
                docs=DOCS,
            ),
        )

    def _summary(self, clocks: dict[str, ClockEstimate], skewed: list[ClockEstimate], threshold: float) -> Finding:
        names = {e.node for e in skewed}
        lines = []
        for estimate in clocks.values():
            if not estimate.known:
                lines.append(f"{estimate.node}: {estimate.describe()}")
            else:
                verdict = "skewed" if estimate.node in names else "in sync"
                lines.append(f"{estimate.node}: {verdict}, {estimate.describe()}")
        unknown = [e for e in clocks.values() if not e.known]
        summary = f"Clock offsets of {len(clocks)} node(s) against the API server (threshold {threshold:g} s): "
        summary += "; ".join(lines) + "."
        if unknown:
            summary += (
                " Nodes marked unknown had too few samples in the input (Lease, status heartbeat, kubelet events) "
                "to say anything: they are not known to be in sync. Check them on the node (`timedatectl status`)."
            )
        return Finding(
            rule=self.id,
            severity=Severity.INFO,
            title=f"Node clocks: {len(skewed)} skewed, {len(clocks) - len(skewed) - len(unknown)} in sync, "
            f"{len(unknown)} unknown",
            summary=summary,
            objects=[Ref("v1", "Node", "", n) for n in clocks],
            evidence=[],
            remediation=Remediation(text=_summary_fix(clocks, skewed), docs=DOCS[:1]),
        )


def _summary_fix(clocks: dict[str, ClockEstimate], skewed: list[ClockEstimate]) -> str:
    """What to do after the summary: nothing for nodes in sync, the per-node findings of skewed ones, and what a
    node of unknown offset lacks."""
    unknown = [e.node for e in clocks.values() if not e.known]
    in_sync = len(clocks) - len(skewed) - len(unknown)
    parts = []
    if skewed:
        parts.append("See the node-clock-skew findings of the skewed nodes.")
    elif in_sync:
        parts.append("Nothing to do for the nodes in sync.")
    if unknown:
        whose = ("No node's clock offset could be measured" if len(unknown) == len(clocks) else
                 f"The clock offset of {', '.join(unknown)} could not be measured")
        parts.append(
            f"{whose}: the input holds too few times a node wrote with the API "
            "server's stamp on the same write. Add them to the input: the node Leases (`kubectl get lease -n "
            "kube-node-lease -o yaml`, with managedFields) and the Nodes (`kubectl get nodes -o yaml`, "
            "with managedFields), or the kubelets' Events, or run `argo-doctor collect`, which also probes the "
            "kubelets' clocks; or check the clocks on the nodes (`timedatectl status`).")
    return " ".join(parts)
