"""github-app-token-clock: repo-server replicas that cannot get a GitHub App token because their
node's clock breaks the JWT they sign.

Joins the replicas that log `could not refresh installation id N's token` with the clock offset
of their node (`argo_doctor.facts.clock`) and the JWT arithmetic of `argo_doctor.github.jwt_window`. When every
replica fails, the clock is not the cause and the finding points at the credentials instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, plural
from argo_doctor.facts.clock import ClockEstimate
from argo_doctor.github.jwt_window import AHEAD_LIMIT, BEHIND_LIMIT, TOO_FAR_LIMIT, Verdict, Window, verdicts
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature

_STATUS = re.compile(r'received non 2xx response status \\?"(?P<status>\d{3}[^"\\]*)')
REPLICA_COMPONENT = "repo-server"
DOCS = (
    "https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/"
    "generating-a-json-web-token-jwt-for-a-github-app",
    "https://github.com/bradleyfalzon/ghinstallation/blob/v2.11.0/appsTransport.go",
    "https://argo-cd.readthedocs.io/en/stable/user-guide/private-repositories/#github-app-credential",
)


@dataclass
class _Failures:
    count: int = 0
    first: LogRecord | None = None
    last: LogRecord | None = None
    installations: set[str] = field(default_factory=set)
    statuses: set[str] = field(default_factory=set)


class GithubAppTokenClock(Analyzer):
    """GitHub App token refresh failing because of a node's clock."""

    id = "github-app-token-clock"
    title = "GitHub App token refresh fails"
    needs = Needs(frozenset({"coordination.k8s.io/Lease", "Node"}), events=True)
    signatures = ("github.installation-token-refresh",)

    def __init__(self) -> None:
        self._failures: dict[tuple[str, str], _Failures] = {}

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Count token refresh failures per pod."""
        failures = self._failures.setdefault((record.file.namespace, record.file.pod), _Failures())
        failures.count += 1
        if failures.first is None:
            failures.first = record
        failures.last = record
        if match is not None:
            failures.installations.add(match.group("installation"))
        status = _STATUS.search(record.raw)
        if status:
            failures.statuses.add(status.group("status"))

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per repo-server workload whose replicas fail token refresh."""
        snap = ctx.snap
        logged = {(f.namespace, f.pod) for f in snap.log_files if not f.previous}
        for component in snap.components:
            if component.name != REPLICA_COMPONENT:
                continue
            observed = [p for p in component.pods if (p.namespace, p.name) in logged]
            failing = [p for p in observed if (p.namespace, p.name) in self._failures]
            if not failing:
                continue
            if len(failing) == len(observed):
                yield self._every_replica(ctx, component.workload, failing)
            else:
                yield from self._some_replicas(ctx, component.workload, observed, failing)

    def _failure_evidence(self, pod: Obj) -> list[Evidence]:
        failures = self._failures[(pod.namespace, pod.name)]
        records = [failures.first] if failures.first is failures.last else [failures.first, failures.last]
        return [log_evidence(r) for r in records if r is not None]

    def _describe(self, pod: Obj) -> str:
        failures = self._failures[(pod.namespace, pod.name)]
        status = f" ({', '.join(sorted(failures.statuses))})" if failures.statuses else ""
        return f"{pod.name} on {pod.node_name or 'an unknown node'}: {plural(failures.count, 'failure')}{status}"

    def _every_replica(self, ctx: Context, workload: Obj | None, failing: list[Obj]) -> Finding:
        clocks = ctx.clocks()
        nodes = [clocks.get(p.node_name) for p in failing]
        in_sync = [e for e in nodes if e is not None and e.known and not _breaks(e)]
        clock_note = (
            f" The clocks of {len(in_sync)} of their {len(failing)} nodes are measured in sync with the API server."
            if in_sync else ""
        )
        installations = sorted({i for p in failing for i in self._failures[(p.namespace, p.name)].installations})
        evidence = [e for p in failing for e in self._failure_evidence(p)]
        only = len(failing) == 1
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title="GitHub App token refresh fails on " + ("the only repo-server replica" if only else
                                                         f"all {len(failing)} repo-server replicas"),
            summary=(
                ("The only repo-server replica in the input" if only else f"Every one of the {len(failing)} "
                 "repo-server replicas") + f" fails to get an installation token for installation "
                f"{', '.join(installations) or '(unknown)'}: " + "; ".join(self._describe(p) for p in failing)
                + "." + clock_note + (
                    " A failure shared by every replica does not come from one node's clock: the GitHub App "
                    "credentials are the likely cause (a rotated or wrong private key, a wrong app or installation "
                    "id, an app uninstalled from the organisation), or GitHub itself."
                    if not only else " With a single replica the failures cannot be compared across nodes."
                )
            ),
            objects=[workload.ref] if workload is not None else [p.ref for p in failing],
            evidence=evidence,
            remediation=Remediation(
                text=(
                    "Check the repository credentials: githubAppID, githubAppInstallationID and githubAppPrivateKey "
                    "of the repository (or repo-creds) Secret against the app's settings on GitHub, and that the "
                    "app is still installed. `argo-doctor github-app check` requests a token with the same JWT "
                    "Argo CD builds and prints GitHub's own message, which Argo CD does not log."
                ),
                command="argo-doctor github-app check --app-id APP_ID --installation-id INSTALLATION_ID "
                "--private-key key.pem",
                docs=DOCS,
            ),
        )

    def _some_replicas(
        self, ctx: Context, workload: Obj | None, observed: list[Obj], failing: list[Obj]
    ) -> Iterable[Finding]:
        clocks = ctx.clocks()
        clean = [p for p in observed if p not in failing]
        for pod in failing:
            estimate = clocks.get(pod.node_name)
            bounds = estimate.bounds() if estimate is not None else None
            possible = verdicts(*bounds) if bounds is not None else set()
            if estimate is None or not possible:
                yield self._unknown_clock(pod, estimate, observed, failing, "too few clock samples")
            elif Verdict.ACCEPTED not in possible:
                yield self._clock_cause(pod, estimate, observed, failing, clean, clocks)
            elif len(possible) > 1:
                yield self._unknown_clock(pod, estimate, observed, failing, "an offset whose uncertainty straddles "
                                          "the JWT's limit")
            else:
                yield self._not_clock(pod, estimate, observed, failing)

    def _flapping(self, observed: list[Obj], failing: list[Obj]) -> str:
        return (
            f" Argo CD sends each repository request to one of the {len(observed)} repo-server replicas; "
            f"{len(failing)} of them {'fails' if len(failing) == 1 else 'fail'} and the others succeed, so the "
            "repository shows connected on one refresh and failed on the next."
        )

    def _clock_cause(
        self, pod: Obj, estimate: ClockEstimate, observed: list[Obj], failing: list[Obj], clean: list[Obj],
        clocks: dict[str, ClockEstimate],
    ) -> Finding:
        assert estimate.offset is not None
        window = Window(estimate.offset)
        node = pod.node_name
        behind = estimate.offset < 0
        limit = (
            f"a node more than {-BEHIND_LIMIT} s behind sends an exp already in GitHub's past" if behind else
            f"a node more than {AHEAD_LIMIT} s ahead sends an iat in GitHub's future, and more than {TOO_FAR_LIMIT} s "
            "ahead an exp beyond GitHub's 10-minute limit"
        )
        clean_clocks = [
            f"{p.name} on {p.node_name}: {clocks[p.node_name].describe()}"
            for p in clean if p.node_name in clocks and clocks[p.node_name].known
        ]
        summary = (
            f"Replica {self._describe(pod)}. Its node {node} has its clock {estimate.describe()}. Argo CD's GitHub "
            "App client (ghinstallation) signs the app JWT with the node's clock: iat = now − 30 s and "
            f"exp = iat + 2 min, so exp is 90 s after the node's now; {limit}. Here, {window.explain()}, and GitHub "
            f"answers 401 \"{window.github_error}\" (Argo CD logs only the status line)."
            + self._flapping(observed, failing)
        )
        if clean_clocks:
            summary += " The replicas that succeed run on nodes in sync: " + "; ".join(clean_clocks) + "."
        evidence = self._failure_evidence(pod) + estimate.evidence()[:3]
        return Finding(
            rule=self.id,
            severity=Severity.CRITICAL if window.verdict is not Verdict.ACCEPTED else Severity.HIGH,
            title=f"{pod.name} cannot get GitHub App tokens: node {node}'s clock is {abs(estimate.offset):.0f} s "
            f"{'behind' if behind else 'ahead'}, so its JWT "
            + ("has already expired for GitHub" if window.verdict is Verdict.EXPIRED else
               "is issued in GitHub's future" if window.verdict is Verdict.IAT_IN_FUTURE else
               "expires too far in the future for GitHub"),
            summary=summary,
            objects=[pod.ref, *([Ref("v1", "Node", "", node)] if node else [])],
            evidence=evidence,
            remediation=Remediation(
                text=(
                    f"Configure time synchronisation on {node} (chrony or systemd-timesyncd) and check it with "
                    "`chronyc tracking` or `timedatectl status` ('System clock synchronized: yes'). Until then, "
                    f"cordon {node} and delete {pod.name} so that it runs on a node in sync. `argo-doctor github-app "
                    f"check --clock-offset {estimate.offset:.0f}` reproduces GitHub's answer from any machine."
                ),
                command=f"kubectl cordon {node} && kubectl -n {pod.namespace} delete pod {pod.name}",
                docs=DOCS,
            ),
        )

    def _not_clock(self, pod: Obj, estimate: ClockEstimate, observed: list[Obj], failing: list[Obj]) -> Finding:
        return Finding(
            rule=self.id,
            severity=Severity.MEDIUM,
            title=f"{pod.name} fails GitHub App token refresh, but its node's clock is in sync",
            summary=(
                f"Replica {self._describe(pod)}. Its node's clock is {estimate.describe()}: within the JWT's window "
                f"({BEHIND_LIMIT} s to +{AHEAD_LIMIT} s), so the clock does not explain it."
                + self._flapping(observed, failing)
                + " Look at what this replica does not share with the others: its egress path or proxy to GitHub, "
                "or a stale copy of the credentials."
            ),
            objects=[pod.ref],
            evidence=self._failure_evidence(pod) + estimate.evidence()[:2],
            remediation=Remediation(
                text="Compare the failing replica's network path and environment with a succeeding one's.",
                command=f"kubectl -n {pod.namespace} describe pod {pod.name}",
                docs=DOCS,
            ),
        )

    def _unknown_clock(
        self, pod: Obj, estimate: ClockEstimate | None, observed: list[Obj], failing: list[Obj], why: str
    ) -> Finding:
        node = pod.node_name or "its node"
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"{pod.name} fails GitHub App token refresh; the clock of {node} is unknown",
            summary=(
                f"Replica {self._describe(pod)}; other replicas succeed." + self._flapping(observed, failing)
                + f" The input gives {node} {why} ({estimate.describe() if estimate else 'no samples'}), too little "
                f"to say whether its clock breaks the JWT (it does when more than {-BEHIND_LIMIT} s behind or "
                f"{AHEAD_LIMIT} s ahead)."
            ),
            objects=[pod.ref],
            evidence=self._failure_evidence(pod),
            remediation=Remediation(
                text=f"Check the clock of {node} (`timedatectl status`); include its Lease and kubelet events in the "
                "bundle so the offset can be measured.",
                command=f"kubectl debug node/{node} -it --image=busybox -- chroot /host timedatectl status",
                docs=DOCS,
            ),
        )


def _breaks(estimate: ClockEstimate) -> bool:
    """Whether every offset the estimate allows makes GitHub reject the JWT."""
    bounds = estimate.bounds()
    return bounds is not None and Verdict.ACCEPTED not in verdicts(*bounds)
