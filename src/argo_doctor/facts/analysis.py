"""What an Argo Rollouts AnalysisRun that did not succeed says about the release.

From Argo Rollouts' analysis controller (analysis/analysis.go, utils/evaluate/evaluate.go): a measurement is Failed
when the failure condition held (or the success condition did not), Inconclusive when neither did, and Error when it
could not be made (the provider failed, returned nothing, or the condition could not be evaluated); a metric is
Failed when `failed > failureLimit` (0), Inconclusive when `inconclusive > inconclusiveLimit` (0), Error when
`consecutiveError > consecutiveErrorLimit` (4); the run takes its worst metric (Failed, then Error, then
Inconclusive), dry-run metrics aside. A Failed run judged the release; an Error run did not measure it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argo_doctor import knowledge
from argo_doctor.sources.objects import as_int, as_list, mapping

KINDS = {"Failed": "failed", "Error": "errored", "Inconclusive": "inconclusive"}
"""The outcome of a run by its phase."""


@dataclass(frozen=True)
class MetricOutcome:
    """One metric of a run that did not succeed: its phase, provider, query and conditions, its last values and
    message, and for an Error the known cause of its message (None when unknown)."""

    name: str
    phase: str
    provider: str
    query: str
    condition: str
    values: tuple[str, ...]
    message: str
    counts: str
    cause: knowledge.KnownError | None

    def describe(self) -> str:
        """`metric success-rate (prometheus) Failed: values 0.81, 0.79 against successCondition result[0] >= 0.95`."""
        text = f"metric {self.name} ({self.provider}) {self.phase}"
        details = []
        if self.values:
            details.append(f"last {'value' if len(self.values) == 1 else 'values'} {', '.join(self.values)}")
        if self.condition:
            details.append(f"against {self.condition}")
        if self.message:
            details.append(f"\"{self.message}\"")
        if self.counts:
            details.append(self.counts)
        return text + (": " + "; ".join(details) if details else "")


@dataclass(frozen=True)
class AnalysisOutcome:
    """A run that did not succeed: `kind` failed (the release was judged bad), errored (it was not measured) or
    inconclusive (neither condition held), with its metrics and the templates it was made from."""

    run: str
    kind: str
    templates: tuple[str, ...]
    metrics: tuple[MetricOutcome, ...]

    def verdict(self) -> str:
        """What the run says about the release, in one sentence."""
        metrics = "; ".join(m.describe() for m in self.metrics)
        source = f" (AnalysisTemplate {', '.join(self.templates)})" if self.templates else ""
        if self.kind == "failed":
            return f"AnalysisRun {self.run}{source} judged the new version bad: {metrics}."
        if self.kind == "errored":
            causes = [m.cause.explanation for m in self.metrics if m.cause is not None]
            return (f"AnalysisRun {self.run}{source} could not measure the new version, so it says nothing about it "
                    f"(the release may be fine): {metrics}." + (f" {causes[0]}" if causes else ""))
        return (f"AnalysisRun {self.run}{source} was inconclusive: neither its success nor its failure condition "
                f"held: {metrics}.")


def outcome(run: Mapping[str, Any], rollout: Mapping[str, Any] | None = None) -> AnalysisOutcome | None:
    """The outcome of a Failed, Error or Inconclusive run (None for any other phase), with the templates the
    Rollout names for it (by the run's rollout-type and step-index labels)."""
    status, spec = mapping(run.get("status")), mapping(run.get("spec"))
    kind = KINDS.get(str(status.get("phase") or ""))
    if kind is None:
        return None
    dry = [str(mapping(d).get("metricName") or "") for d in as_list(spec.get("dryRun"))]
    specs = {str(mapping(m).get("name")): mapping(m) for m in as_list(spec.get("metrics"))}
    metrics = []
    for result in (mapping(r) for r in as_list(status.get("metricResults"))):
        name = str(result.get("name") or "")
        if str(result.get("phase") or "") not in KINDS or result.get("dryRun") is True or _dry(name, dry):
            continue
        metrics.append(_metric(result, specs.get(name, {})))
    labels = mapping(mapping(run.get("metadata")).get("labels"))
    return AnalysisOutcome(str(mapping(run.get("metadata")).get("name") or ""), kind,
                           templates_of(rollout, labels) if rollout is not None else (), tuple(metrics))


def _dry(name: str, rules: list[str]) -> bool:
    """Whether a metric is in dry-run: each rule is an unanchored regular expression (utils/analysis/helpers.go
    GetDryRunMetrics, regexp.MatchString); one that does not compile matches nothing."""
    for rule in rules:
        try:
            if rule and re.search(rule, name):
                return True
        except re.error:
            continue
    return False


def _metric(result: dict[str, Any], metric: dict[str, Any]) -> MetricOutcome:
    phase = str(result.get("phase") or "")
    measurements = [mapping(m) for m in as_list(result.get("measurements"))]
    alike = [m for m in measurements if str(m.get("phase") or "") == phase] or measurements
    values = tuple(str(m.get("value")) for m in alike[-3:] if m.get("value") not in (None, ""))
    message = next((str(m.get("message")).strip() for m in reversed(alike) if m.get("message")), "") or \
        str(result.get("message") or "").strip()
    provider = next(iter(mapping(metric.get("provider"))), "unknown provider")
    config = mapping(mapping(metric.get("provider")).get(provider))
    query = " ".join(str(config.get("query") or config.get("url") or "").split())
    conditions = [f"{key} {metric[key]}" for key in ("successCondition", "failureCondition") if metric.get(key)]
    counts = ", ".join(f"{key} {result[key]}" for key in ("failed", "error", "inconclusive")
                       if as_int(result.get(key)))
    cause = next((e for e in knowledge.analysis_errors() if e.pattern.search(message)), None) \
        if phase == "Error" else None
    return MetricOutcome(str(result.get("name") or ""), phase, provider, query, " and ".join(conditions), values,
                         message, counts, cause)


def templates_of(rollout: Mapping[str, Any], labels: Mapping[str, Any]) -> tuple[str, ...]:
    """The AnalysisTemplates the Rollout names for a run of the given type (`rollout-type`: Step, Background,
    PrePromotion, PostPromotion) and step (`step-index`)."""
    strategy = mapping(mapping(rollout.get("spec")).get("strategy"))
    canary, blue_green = mapping(strategy.get("canary")), mapping(strategy.get("blueGreen"))
    kind = labels.get("rollout-type")
    if kind == "Step":
        steps = as_list(canary.get("steps"))
        index = as_int(labels.get("step-index"), -1)
        analysis = mapping(mapping(steps[index]).get("analysis")) if 0 <= index < len(steps) else {}
    else:
        analysis = mapping({"Background": canary.get("analysis"),
                            "PrePromotion": blue_green.get("prePromotionAnalysis"),
                            "PostPromotion": blue_green.get("postPromotionAnalysis")}.get(str(kind)))
    return tuple(str(mapping(t).get("templateName")) for t in as_list(analysis.get("templates"))
                 if mapping(t).get("templateName"))
