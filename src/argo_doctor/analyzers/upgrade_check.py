"""upgrade-check: the documented changes between the installed Argo CD and a target release that hit this
installation (knowledge/upgrades.yaml, from Argo CD's upgrading guides). Run by `argo-doctor upgrade-check --to`,
never by `scan`: it needs the target version. One finding per change that applies, with the evidence (the setting, the
policy line, the metric, the object); changes that do not apply are not listed; a change objects cannot show is
listed at info, to check by hand."""

from __future__ import annotations

from collections.abc import Iterable

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.facts.upgrades import PRODUCTS, hit, kinds_read, object_places, objects_of, version_text
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity


class UpgradeCheck(Analyzer):
    """Documented release changes that hit this installation on the way to a target release."""

    id = "upgrade-check"
    title = "A documented change of the target release hits this installation"
    needs = Needs(kinds_read())

    def __init__(self, targets: dict[str, knowledge.Version],
                 installed: dict[str, tuple[knowledge.Version, list[Evidence]]]) -> None:
        self.targets = targets
        """Each product's target release; a product without one: every later release it documents, at medium."""
        self.installed = installed
        """Each product's installed version, with the evidence of it (its images)."""

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        places: dict[str, Ref] | None = None
        for change in knowledge.upgrade_changes():
            if change.product not in self.installed:
                continue
            current, where = self.installed[change.product]
            target = self.targets.get(change.product)
            if not current < change.version <= (target or change.version):
                continue
            evidence = hit(ctx.snap, change)
            if evidence == []:
                continue
            if places is None:
                places = object_places(ctx.snap)
            product = PRODUCTS.get(change.product, change.product)
            unknown = evidence is None
            severity = Severity.INFO if unknown else Severity.HIGH if change.breaking else Severity.MEDIUM
            yield Finding(
                rule=self.id,
                severity=severity if target else min(severity, Severity.MEDIUM),
                title=f"{product} {version_text(change.version)}: {change.title}",
                summary=(f"Upgrading {product} from {version_text(current)} to "
                         + (f"{version_text(target)} crosses {version_text(change.version)}: " if target else
                            f"{version_text(change.version)} or later (no target given for it): ")
                         + change.explanation
                         + (" Whether it applies here cannot be told from the objects: check it by hand."
                            if unknown else "")),
                objects=objects_of(places, evidence or []),
                evidence=[*(e for e in evidence or [] if e.location), *where[:1]],
                remediation=Remediation(text=change.remediation,
                                        docs=tuple(s.strip().split()[0] for s in change.source.split(";"))),
            )
