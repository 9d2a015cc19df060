"""Output of `argo-doctor fix rollout-restart`: each Rollout's decision and the patch it sends or would send."""

from __future__ import annotations

import json
from typing import Any

from argo_doctor.remediate.restarter import Outcome, Result
from argo_doctor.sources.redact import clean


def _command(outcome: Outcome) -> str | None:
    if outcome.patch is None or "/" not in outcome.rollout:
        return None
    namespace, name = outcome.rollout.split("/", 1)
    return f"kubectl argo rollouts restart {name} -n {namespace}"


def decisions_json(result: Result, applied: bool) -> dict[str, Any]:
    """Every decision with its patch, the verdict it rests on and what the API answered."""
    decisions = []
    for outcome in result.outcomes:
        verdict = outcome.verdict
        decisions.append({
            **outcome.as_json(),
            "policy": outcome.policy or None,
            "verdict": verdict.state.value if verdict else None,
            "patch": outcome.patch,
            "command": _command(outcome),
            "answer": outcome.answer,
        })
    return clean({"applied": applied, "decisions": decisions, "reason": result.reason})


def decisions_text(result: Result, applied: bool) -> str:
    """One block per Rollout: its action and reason, then the patch; every text redacted, no control characters."""
    result = clean(result, human=True)
    lines = [] if applied else ["dry run: nothing is written without --apply"]
    if result.reason:
        lines.append(result.reason)
    if not result.outcomes and not result.reason:
        lines.append("no Rollout found")
    for outcome in result.outcomes:
        lines.append(f"{outcome.rollout}: {outcome.action}: {outcome.reason}")
        if outcome.patch is not None:
            lines.append(f"  patch (merge): {json.dumps(outcome.patch, separators=(',', ':'))}")
            lines.append(f"  same as: {_command(outcome)}")
        if outcome.answer:
            lines.append(f"  API: {outcome.answer}")
    return "\n".join(lines)
