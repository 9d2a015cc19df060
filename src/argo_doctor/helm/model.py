"""Results of the Helm chart scan."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Switch:
    """Values that keep a non-deterministic call out of the rendered output."""

    settings: tuple[tuple[str, str], ...]  # (("enableCertManager", "true"),) or (("webhookTLS.caCert", "<set>"), ...)
    text: str  # "set enableCertManager: true (now false)"


@dataclass(frozen=True)
class NondeterministicUse:
    """One non-deterministic template call reachable from one output template, and where it lands."""

    function: str  # "genCA"
    kind: str  # "random" | "time" | "lookup"
    call: str  # "templates/_helpers.tpl:12" (chart-relative path:line)
    via: tuple[str, ...]  # ("templates/webhook.yaml:30", "define chart.webhookCerts", ...)
    output: str  # "templates/webhook.yaml:30" (where it lands)
    resource_kind: str | None  # "Secret"
    resource_name: str | None
    field: tuple[str, ...]  # ("data",) / ("webhooks", "[]", "clientConfig", "caBundle")
    switches: tuple[Switch, ...]
    certain: bool = True
    """False when a condition around the call cannot be evaluated from values (`.Release`, `.Capabilities`,
    `lookup`, a template's output...): the call may be reached."""


@dataclass
class ChartReport:
    """Everything found in one chart."""

    path: Path
    name: str
    version: str | None
    uses: list[NondeterministicUse] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (location, message)
    render_diff: str | None = None  # unified diff of two `helm template` runs ("" = identical)
    helm_available: bool = False
