"""The GitHub App JWT arithmetic: what a clock offset does to the JWT Argo CD signs.

Argo CD authenticates GitHub Apps through bradleyfalzon/ghinstallation, whose app JWT carries
iat = now − 30 s (truncated to the second) and exp = iat + 2 min, by the signing host's clock
(`appsTransport.go`). GitHub rejects an exp that is not in its future, an exp more than 10 minutes
ahead, and an iat in its future (docs: "Generating a JSON Web Token for a GitHub App"; github/docs
PR #4156). With offset = signer clock − GitHub clock, as GitHub sees it the JWT has
exp − now ≈ 90 s + offset and iat − now ≈ offset − 30 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

IAT_BACKDATE = 30
LIFETIME = 120
GITHUB_MAX_LIFETIME = 600

EXPIRED_TEXT = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the "
    "assertion expires"
)
TOO_FAR_TEXT = "'Expiration time' claim ('exp') is too far in the future"
IAT_TEXT = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"

BEHIND_LIMIT = -(LIFETIME - IAT_BACKDATE)  # −90 s: exp lands in GitHub's past
AHEAD_LIMIT = IAT_BACKDATE  # +30 s: iat lands in GitHub's future
TOO_FAR_LIMIT = GITHUB_MAX_LIFETIME - (LIFETIME - IAT_BACKDATE)  # +510 s: exp beyond GitHub's 10 minutes


class Verdict(Enum):
    """What GitHub makes of a JWT signed with a given clock offset."""

    ACCEPTED = "accepted"
    EXPIRED = "expired"
    IAT_IN_FUTURE = "iat-in-future"
    EXP_TOO_FAR = "exp-too-far"


@dataclass(frozen=True)
class Window:
    """The JWT as GitHub sees it, for one clock offset (seconds, signer − GitHub)."""

    offset: float

    @property
    def exp_in(self) -> float:
        """Seconds from GitHub's now to exp (negative: already expired)."""
        return LIFETIME - IAT_BACKDATE + self.offset

    @property
    def iat_in(self) -> float:
        """Seconds from GitHub's now to iat (positive: issued in the future)."""
        return self.offset - IAT_BACKDATE

    @property
    def verdict(self) -> Verdict:
        """GitHub's answer."""
        if self.exp_in <= 0:
            return Verdict.EXPIRED
        if self.exp_in > GITHUB_MAX_LIFETIME:
            return Verdict.EXP_TOO_FAR
        if self.iat_in > 0:
            return Verdict.IAT_IN_FUTURE
        return Verdict.ACCEPTED

    @property
    def github_error(self) -> str | None:
        """GitHub's error text for this verdict, None when accepted."""
        return {
            Verdict.EXPIRED: EXPIRED_TEXT,
            Verdict.EXP_TOO_FAR: TOO_FAR_TEXT,
            Verdict.IAT_IN_FUTURE: IAT_TEXT,
            Verdict.ACCEPTED: None,
        }[self.verdict]

    def explain(self) -> str:
        """One sentence of arithmetic."""
        return (
            f"with the signer's clock {abs(self.offset):.0f} s {'ahead of' if self.offset > 0 else 'behind'} "
            f"GitHub's, the JWT arrives with iat {_rel(self.iat_in)} and exp {_rel(self.exp_in)} "
            "by GitHub's clock"
        )


def _rel(seconds: float) -> str:
    if abs(seconds) < 0.5:
        return "now"
    return f"{abs(seconds):.0f} s {'in the future' if seconds > 0 else 'in the past'}"


def verdicts(low: float, high: float) -> set[Verdict]:
    """Every verdict an offset in [low, high] can produce."""
    points = {low, high} | {p for p in (BEHIND_LIMIT, AHEAD_LIMIT, TOO_FAR_LIMIT) if low <= p <= high}
    found = {Window(p).verdict for p in points}
    for edge in (BEHIND_LIMIT + 0.001, AHEAD_LIMIT + 0.001, TOO_FAR_LIMIT + 0.001):
        if low <= edge <= high:
            found.add(Window(edge).verdict)
    return found
