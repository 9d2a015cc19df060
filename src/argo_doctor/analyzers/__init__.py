"""Analyzers: one module per failure pattern, and the registry that lists them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from argo_doctor.errors import ConfigError
from argo_doctor.facts.clock import MIN_SAMPLES, ClockEstimate, estimate_clocks
from argo_doctor.facts.webhooks import CallFailure, call_failures
from argo_doctor.health import HealthAssessor
from argo_doctor.helm import ChartReport, NondeterministicUse, analyse_chart
from argo_doctor.model import Finding, Needs
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.audit import AuditEvent
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import mapping

BASE_NEEDS = Needs(frozenset({"apps/Deployment", "apps/StatefulSet", "apps/ReplicaSet", "apps/DaemonSet", "Pod",
                                "ConfigMap"}))
"""What every rule reads through the Snapshot: the workloads and pods that tell the components, and the Argo CD
settings."""


@dataclass
class Context:
    """What an analyzer gets: the snapshot, the shared health assessor, rule options (`--option
    RULE.KEY=VALUE`) and results shared between analyzers, computed once."""

    snap: Snapshot
    health: HealthAssessor
    options: Mapping[str, str] = field(default_factory=dict)
    _clocks: dict[str, ClockEstimate] | None = None
    _charts: list[ChartReport] | None = None
    _failures: list[CallFailure] | None = None

    def option(self, rule: str, key: str, default: float) -> float:
        """A numeric rule option; ConfigError when it is not a number."""
        text = self.options.get(f"{rule}.{key}")
        if text is None:
            return default
        try:
            return float(text.removesuffix("s"))
        except ValueError:
            raise ConfigError(f"option {rule}.{key}={text!r} is not a number") from None

    def chart_reports(self) -> list[ChartReport]:
        """Every Helm chart under the input's `repo/` folders, analysed once."""
        if self._charts is None:
            self._charts = [analyse_chart(chart) for chart in self.snap.charts]
        return self._charts

    def chart_for(self, app: Obj) -> ChartReport | None:
        """The chart in `repo/` that an Application's source path points at."""
        path = str(mapping(app.spec.get("source")).get("path") or "").strip("/")
        if not path:
            return None
        for report in self.chart_reports():
            parts = report.path.parts
            if "repo" in parts and "/".join(parts[len(parts) - parts[::-1].index("repo"):]) == path:
                return report
        return None

    def chart_uses(self, app: Obj) -> list[NondeterministicUse]:
        """Non-deterministic template calls of the Application's chart, if the chart is in the input."""
        report = self.chart_for(app)
        return list(report.uses) if report is not None else []

    def webhook_failures(self) -> list[CallFailure]:
        """Failures to call webhooks seen in Events and Workflow nodes (computed once)."""
        if self._failures is None:
            self._failures = call_failures(self.snap)
        return self._failures

    def clocks(self) -> dict[str, ClockEstimate]:
        """Every node's clock offset estimate (computed on first use)."""
        if self._clocks is None:
            min_samples = int(self.option("node-clock-skew", "min-samples", MIN_SAMPLES))
            self._clocks = estimate_clocks(self.snap, min_samples)
        return self._clocks


class Analyzer:
    """One failure pattern. Subclasses set `id`, `title` and `signatures` (ids of rows in
    `knowledge/log_signatures.yaml`), collect log matches in `on_log`, and yield findings in
    `analyze`. An instance lives for one scan; analyzers never do I/O."""

    id: ClassVar[str]
    title: ClassVar[str]
    signatures: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[dict[str, str]] = {}
    """Options the rule takes through `--option RULE.KEY=VALUE`: key → what it means."""
    audit: ClassVar[bool] = False
    """Whether the rule reads the audit log: the engine streams it once to every rule that does."""
    needs: ClassVar[Needs] = Needs()
    """What the rule reads beyond the Snapshot's basics and its log signatures; a live source collects only the
    union of what the selected rules need."""

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Receive one log line that matched one of `signatures`."""

    def on_audit(self, event: AuditEvent) -> None:
        """Receive one audit record (rules with `audit = True`)."""

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """Yield the findings of this pattern."""
        raise NotImplementedError


def all_analyzers() -> list[type[Analyzer]]:
    """Every registered analyzer class, in a stable order."""
    from argo_doctor.analyzers import (
        app_deletion_stuck,
        app_unhealthy,
        applicationset_deleted_apps,
        applicationset_error,
        applicationset_rollout_stuck,
        argocd_rbac_policy,
        auto_sync_without_change,
        cluster_credentials_expired,
        collector_permission_missing,
        component_known_bug,
        controller_sharding,
        cronworkflow_not_firing,
        deprecated_api_caller,
        events_eventbus_unhealthy,
        events_eventsource_failing,
        events_sensor_not_triggering,
        github_app_token_clock,
        helm_nondeterministic_render,
        image_updater_failing,
        manifest_generation_failed,
        node_clock_skew,
        operation_stuck,
        out_of_sync_writer,
        progressing_forever,
        rbac_missing,
        rbac_overbroad,
        redis_unreachable,
        replica_error_divergence,
        rollout_analysis_inconclusive,
        rollout_degraded,
        rollout_stuck_degraded,
        rollout_traffic_routing,
        shared_resource,
        sso_login_failed,
        sync_failed,
        webhook_blast_radius,
        webhook_ca_mismatch,
        workflow_pending,
        workload_degraded,
    )

    return [
        github_app_token_clock.GithubAppTokenClock,
        node_clock_skew.NodeClockSkew,
        replica_error_divergence.ReplicaErrorDivergence,
        auto_sync_without_change.AutoSyncWithoutChange,
        helm_nondeterministic_render.HelmNondeterministicRender,
        deprecated_api_caller.DeprecatedApiCaller,
        webhook_blast_radius.WebhookBlastRadius,
        webhook_ca_mismatch.WebhookCaMismatch,
        app_unhealthy.AppUnhealthy,
        sync_failed.SyncFailed,
        manifest_generation_failed.ManifestGenerationFailed,
        operation_stuck.OperationStuck,
        app_deletion_stuck.AppDeletionStuck,
        shared_resource.SharedResource,
        progressing_forever.ProgressingForever,
        out_of_sync_writer.OutOfSyncWriter,
        rollout_stuck_degraded.RolloutStuckDegraded,
        rollout_degraded.RolloutDegraded,
        rollout_analysis_inconclusive.RolloutAnalysisInconclusive,
        rollout_traffic_routing.RolloutTrafficRouting,
        workload_degraded.WorkloadDegraded,
        cronworkflow_not_firing.CronWorkflowNotFiring,
        workflow_pending.WorkflowPending,
        rbac_missing.RbacMissing,
        rbac_overbroad.RbacOverbroad,
        argocd_rbac_policy.ArgocdRbacPolicy,
        cluster_credentials_expired.ClusterCredentialsExpired,
        redis_unreachable.RedisUnreachable,
        sso_login_failed.SsoLoginFailed,
        controller_sharding.ControllerSharding,
        applicationset_deleted_apps.ApplicationSetDeletedApps,
        applicationset_error.ApplicationSetError,
        applicationset_rollout_stuck.ApplicationSetRolloutStuck,
        image_updater_failing.ImageUpdaterFailing,
        events_eventbus_unhealthy.EventsEventBusUnhealthy,
        events_eventsource_failing.EventsEventSourceFailing,
        events_sensor_not_triggering.EventsSensorNotTriggering,
        collector_permission_missing.CollectorPermissionMissing,
        component_known_bug.ComponentKnownBug,
    ]
