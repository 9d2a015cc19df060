"""The report of `argo-doctor github-app check`: aligned text lines or JSON, every string redacted."""

from __future__ import annotations

from typing import Any

from argo_doctor.github.app import CheckResult
from argo_doctor.sources.redact import clean


def result_json(result: CheckResult) -> dict[str, Any]:
    """The result as the JSON `github-app check -o json` prints, every string redacted."""
    def rounded(value: float | None, digits: int) -> float | None:
        return None if value is None else round(value, digits)

    window = None
    if result.iat_in is not None and result.exp_in is not None:
        window = {"iatInSeconds": round(result.iat_in, 1), "expInSeconds": round(result.exp_in, 1)}
    return clean({
        "url": result.url,
        "status": result.status,
        "githubMessage": result.github_message,
        "clockOffset": result.clock_offset,
        "serverClockOffset": rounded(result.server_offset, 3),
        "serverClockOffsetBound": rounded(result.server_offset_bound, 3),
        "jwt": {"iat": result.jwt_iat, "exp": result.jwt_exp, "asSeenByGitHub": window},
        "verdict": result.verdict,
        "error": result.error,
    })


def result_text(result: CheckResult) -> str:
    """The result as aligned `key  value` lines, redacted and without control characters."""
    result = clean(result, human=True)
    lines = [("request", f"POST {result.url}"), ("status", str(result.status or "-")),
             ("github says", result.github_message or "-")]
    if result.server_offset is not None and result.server_offset_bound is not None:
        way = "ahead of" if result.server_offset > 0 else "behind"
        lines.append(("local clock", f"{abs(result.server_offset):.1f} s {way} GitHub's "
                                     f"(± {result.server_offset_bound:.1f} s, from the Date header)"))
    if result.clock_offset:
        lines.append(("signed as", f"a clock {result.clock_offset:+.0f} s off the local one"))
    if result.iat_in is not None and result.exp_in is not None:
        lines.append(("JWT at GitHub", f"iat {result.iat_in:+.0f} s, exp {result.exp_in:+.0f} s from GitHub's now "
                                       "(GitHub wants iat <= 0 < exp <= 600)"))
    lines.append(("verdict", result.verdict))
    width = max(len(key) for key, _ in lines)
    return "\n".join(f"{key.ljust(width)}  {value}" for key, value in lines)
