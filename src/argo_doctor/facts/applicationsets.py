"""ApplicationSets: the Applications each owns and what its controller may do to them.

The effective policy is the controller's (`--policy`, ARGOCD_APPLICATIONSET_CONTROLLER_POLICY, default sync) unless
policy override is on (`--enable-policy-override`, on by default when no controller policy is set) and the
ApplicationSet sets `syncPolicy.applicationsSync` (applicationset/utils/policy.go); sync and create-delete let it
delete Applications, and an Application generated without `preserveResourcesOnDeletion` carries
`resources-finalizer.argocd.argoproj.io`, so deleting it deletes its resources (applicationset/utils/utils.go)."""

from __future__ import annotations

from dataclasses import dataclass

from argo_doctor.facts.installation import CONTAINER_HINTS, main_container, resolve
from argo_doctor.model import Evidence
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import mapping

POLICIES = ("create-only", "create-update", "create-delete", "sync")
DELETING = ("create-delete", "sync")
FINALIZER = "resources-finalizer.argocd.argoproj.io"


@dataclass(frozen=True)
class Policy:
    """What the controller may do to an ApplicationSet's Applications, and where that was read."""

    name: str
    source: str
    evidence: tuple[Evidence, ...]
    preserve: bool
    """`syncPolicy.preserveResourcesOnDeletion`: generated Applications carry no resources finalizer."""

    @property
    def deletes(self) -> bool:
        return self.name in DELETING


def policy_of(snap: Snapshot, appset: Obj) -> Policy:
    """The effective policy of an ApplicationSet (the controller's settings read as it reads them)."""
    sync = mapping(appset.spec.get("syncPolicy"))
    own = str(sync.get("applicationsSync") or "")
    controller = snap.component("applicationset-controller")
    container = main_container(snap, controller, CONTAINER_HINTS.get("applicationset-controller", "")) \
        if controller is not None else None
    evidence: list[Evidence] = []
    policy, override, source = "", True, "the controller's default"
    if container is not None:
        setting = resolve(snap, container, "policy", "ARGOCD_APPLICATIONSET_CONTROLLER_POLICY", "")
        policy = (setting.value or "").strip()
        evidence += setting.evidence
        allowed = resolve(snap, container, "enable-policy-override",
                          "ARGOCD_APPLICATIONSET_CONTROLLER_ENABLE_POLICY_OVERRIDE", None, boolean=True)
        override = (allowed.value or "").lower() == "true" if allowed.explicit and allowed.value else policy == ""
        source = f"the controller's policy ({setting.source})" if policy else source
    if own in POLICIES and override:
        return Policy(own, "the ApplicationSet's syncPolicy.applicationsSync", tuple(evidence),
                      bool(sync.get("preserveResourcesOnDeletion")))
    return Policy(policy if policy in POLICIES else "sync", source, tuple(evidence),
                  bool(sync.get("preserveResourcesOnDeletion")))

