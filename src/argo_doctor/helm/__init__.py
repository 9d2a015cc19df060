"""Static analysis of Helm charts for template functions whose output changes on every render.

Under Argo CD a manifest-cache miss re-runs `helm template`; a chart that generates a CA, a
certificate or a password at render time then yields a new Secret / `caBundle` with no new
commit, and automated sync applies it. `analyse_chart` finds those calls without running helm, in a chart
that `sources.charts` read; `scan_chart` reads and analyses one for `helm-check`.
"""

from __future__ import annotations

from argo_doctor.helm.functions import FunctionInfo, nondeterministic_functions
from argo_doctor.helm.model import ChartReport, NondeterministicUse, Switch
from argo_doctor.helm.scan import analyse_chart, scan_chart

__all__ = [
    "ChartReport",
    "FunctionInfo",
    "NondeterministicUse",
    "Switch",
    "analyse_chart",
    "nondeterministic_functions",
    "scan_chart",
]
