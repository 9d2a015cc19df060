"""collector-permission-missing: the live collection was refused part of what the rules read.

`collect` and `scan --live` record every request the API refused (401/403) in `bundle.yaml` under
`skipped`. This rule lists exactly what could not be read and which rules lost input because of it, so that a
rule with nothing to say for lack of input is not mistaken for a rule that found nothing. Low when only kinds that
Applications deploy were refused (their health and deprecated APIs are unchecked), medium otherwise. Requests that
failed for other reasons (timeouts, answers that are not JSON) are input problems, reported by the loader.
"""

from __future__ import annotations

from collections.abc import Iterable

from argo_doctor.analyzers import BASE_NEEDS, Analyzer, Context, all_analyzers
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity

REFUSED = {"401", "403"}
DOCS = ("https://kubernetes.io/docs/reference/access-authn-authz/rbac/",)


def lost_input(need: str, rule: type[Analyzer], declared: frozenset[str]) -> bool:
    """Whether a rule reads what one `skipped` record's `need` names; `declared` holds every kind some rule
    names (any other kind was read because an Application deploys it)."""
    needs: Needs = rule.needs
    kind = need.removeprefix("kind:")
    if need.startswith("kind:"):
        if kind in BASE_NEEDS.kinds or kind in needs.kinds or (kind == "Event" and needs.events):
            return True
        return kind not in declared and needs.app_resources
    if need == "logs":
        return bool(rule.signatures) or needs.failing_pod_logs
    if need == "metrics":
        return needs.metrics
    if need == "node-proxy":
        return "coordination.k8s.io/Lease" in needs.kinds
    return True  # version, discovery of a group: every rule may miss something


class CollectorPermissionMissing(Analyzer):
    """What a live collection was not allowed to read."""

    id = "collector-permission-missing"
    title = "The collector was not allowed to read part of the cluster"

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding listing every refused request and the rules that lost input."""
        refused = [entry for entry in ctx.snap.unread if entry.get("status") in REFUSED]
        if not refused:
            return
        others = [rule for rule in all_analyzers() if rule is not type(self)]
        declared = frozenset().union(*(rule.needs.kinds for rule in others))
        rules = sorted({rule.id for rule in others for entry in refused if lost_input(entry["need"], rule, declared)})
        whats = sorted({entry["what"] for entry in refused})
        shown = ", ".join(whats[:8]) + (f" and {len(whats) - 8} more" if len(whats) > 8 else "")
        # kinds no rule names were read only because Applications deploy them (health, deprecated APIs)
        deployed_only = all(e["need"].startswith("kind:") and e["need"][5:] not in declared | BASE_NEEDS.kinds
                            for e in refused)
        yield Finding(
            rule=self.id,
            severity=Severity.LOW if deployed_only else Severity.MEDIUM,
            title=f"The collector was refused {len(whats)} read{'s' if len(whats) != 1 else ''}: {shown}",
            summary=(
                f"The API refused {len(refused)} request(s) of the collection ({shown}). Rules that read that "
                f"input saw less than the cluster holds and may have missed problems: {', '.join(rules) or 'none'}. "
                "Absent findings from them do not mean the cluster is healthy."
            ),
            evidence=[Evidence("object", f"collection: {entry['request']}", f"{entry['what']}: "
                               f"{entry['reason']}") for entry in refused[:20]],
            remediation=Remediation(
                text=("Grant the collector's identity get/list on what is listed (deploy/collector-rbac.yaml holds "
                      "the minimal ClusterRole for a scan) and collect again; or run argo-doctor with an identity "
                      "that may read them."),
                command="kubectl auth can-i --list",
                docs=DOCS,
            ),
        )
