"""rbac-missing: a permission that a component's configured mode needs, and that its ServiceAccount lacks.

- The Image Updater managing Applications through the Kubernetes API (v0.x `applications_api` unset or
  `kubernetes`; every v1.x): v0.x lists Applications in Argo CD's namespace (up to v0.14, which also gets them by
  name), in every namespace (v0.15, v0.16) or in `--application-namespace` (v0.17+, default every namespace), and
  writes them back with update; v1.x watches Applications and ImageUpdater resources where its cache looks (every
  namespace in v1.0 and v1.1; `--watch-namespaces`, default its own namespace, from v1.2) and updates the
  Applications in each ImageUpdater's `spec.namespace` (argocd-image-updater `pkg/argocd/argocd.go`, `cmd/run.go`).
- The Image Updater v0.x in Argo CD API mode (`applications_api: argocd`) without the token: ARGOCD_TOKEN unset, or
  the Secret key it comes from (`argocd-image-updater-secret` / `argocd.token`) absent.
- Git write-back with `git:secret:<ns>/<name>`: the updater gets that Secret (`pkg/argocd/gitcreds.go`).
- The Argo Rollouts controller without create on `pods/eviction` where Rollouts run (restarts evict pods,
  `rollout/restart.go`).

Permissions come from `facts.rbac`. When the input holds no RBAC objects, or the collection was refused them, or
the ServiceAccount is bound to a role absent from the input, the rule says it cannot decide (info) and lists what
to check; it never asserts a permission missing on incomplete input. A ServiceAccount that nothing in the input
binds is reported low: either the input lacks its bindings or the component has no permission at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence
from argo_doctor.facts.installation import (
    UPDATER_GROUP,
    UpdaterConfig,
    component_version,
    rollouts_namespaced,
    service_account,
    updater_config,
)
from argo_doctor.facts.rbac import RBAC_GROUP, RBAC_NEEDS, Grant, Permissions, allows, effective_permissions
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Component, Snapshot

DOCS = ("https://kubernetes.io/docs/reference/access-authn-authz/rbac/",)
UPDATER_DOCS = ("https://argocd-image-updater.readthedocs.io/en/stable/install/installation/",)
ROLLOUTS_DOCS = ("https://argo-rollouts.readthedocs.io/en/stable/features/restart/",)
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


@dataclass(frozen=True)
class Need:
    """One request a component makes: verb, API group, resource, namespace (None: cluster-wide), object name."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    name: str | None = None

    @property
    def resource_text(self) -> str:
        """`applications.argoproj.io`, `pods/eviction`, `imageupdaters.argocd-image-updater.argoproj.io`."""
        resource, _, sub = self.resource.partition("/")
        return (f"{resource}.{self.group}" if self.group else resource) + (f"/{sub}" if sub else "")

    @property
    def scope(self) -> str:
        """`cluster-wide` or `in <namespace>`."""
        return "cluster-wide" if self.namespace is None else f"in {self.namespace}"

    def __str__(self) -> str:
        name = f" {self.name}" if self.name else ""
        return f"{self.verb} {self.resource_text}{name} {self.scope}"

    def can_i(self, namespace: str, account: str) -> str:
        """The `kubectl auth can-i` command that checks it."""
        where = "--all-namespaces" if self.namespace is None else f"-n {self.namespace}"
        name = f"/{self.name}" if self.name else ""
        return (f"kubectl auth can-i {self.verb} {self.resource_text}{name} {where} "
                f"--as system:serviceaccount:{namespace}:{account}")


class RbacMissing(Analyzer):
    """Permissions a component's mode needs and its ServiceAccount lacks."""

    id = "rbac-missing"
    title = "A component lacks a permission its configured mode needs"
    needs = Needs(RBAC_NEEDS | {"Secret", "argoproj.io/Application", "argoproj.io/Rollout",
                                f"{UPDATER_GROUP}/ImageUpdater"})

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """At most one finding per Image Updater and Rollouts controller."""
        snap = ctx.snap
        for comp in snap.components:
            if comp.name == "image-updater":
                config = updater_config(snap, comp)
                if config is not None:
                    yield from self._updater(snap, comp, config)
            elif comp.name == "rollouts-controller":
                yield from self._rollouts(snap, comp)

    # -- the Image Updater ----------------------------------------------------------------------------------------

    def _updater(self, snap: Snapshot, comp: Component, config: UpdaterConfig) -> Iterable[Finding]:
        label = f"Image Updater {component_version(comp) or '(version unknown)'}"
        needs: list[Need] = []
        if config.kubernetes_mode:
            mode = "manages Applications through the Kubernetes API"
            scopes: Sequence[str | None] = [None] if config.scope is None else config.scope
            writes = config.targets or (tuple(config.scope) if config.scope else (snap.settings.namespace
                                                                                      or config.namespace,))
            if config.generation == "v1":
                for scope in scopes:
                    needs += [Need(v, "argoproj.io", "applications", scope) for v in ("list", "watch")]
                    needs += [Need(v, UPDATER_GROUP, "imageupdaters", scope) for v in ("list", "watch")]
            else:
                needs += [Need("list", "argoproj.io", "applications", scope) for scope in scopes]
                if config.version is None or config.version < (0, 15, 0):
                    needs += [Need("get", "argoproj.io", "applications", ns) for ns in writes]
            needs += [Need("update", "argoproj.io", "applications", ns) for ns in writes]
            why = (f"It looks for Applications in {config.scope_source} and writes image updates back with an "
                   "update of the Application")
        else:
            mode = "uses the Argo CD API"
            why = "It reads and updates Applications through the Argo CD API, which needs an Argo CD API token"
        for write_back in config.write_backs:
            if write_back.secret is not None:
                needs.append(Need("get", "", "secrets", write_back.secret[0], write_back.secret[1]))
        needs = list(dict.fromkeys(needs))
        token = None if config.kubernetes_mode else self._token_problem(config)
        secrets = sorted({f"{w.secret[0]}/{w.secret[1]}" for w in config.write_backs if w.secret is not None})
        if secrets:
            why += f"; its git write-back reads the credentials Secret {', '.join(secrets)}"
        write_back_evidence = tuple(object_evidence(w.source, w.path, f"write-back method: {w.written}")
                                    for w in config.write_backs if w.secret is not None)[:5]
        yield from self._check(snap, comp, label, (mode, why, ""), needs,
                               config.api.evidence + config.scope_evidence + write_back_evidence, token, UPDATER_DOCS)

    def _token_problem(self, config: UpdaterConfig) -> tuple[str, Severity, tuple[Evidence, ...]] | None:
        """What is wrong with the Argo CD API token of an updater in Argo CD API mode (None: it is configured)."""
        token = config.token
        if config.token_flag:
            return None
        if token is None or not token.explicit:
            return ("ARGOCD_TOKEN is not set (no env entry, no --argocd-auth-token flag): the updater calls the "
                    "Argo CD API without a token and every call is refused", Severity.MEDIUM,
                    token.evidence if token is not None else ())
        if token.source.startswith("Secret "):
            if token.present is None:
                return (f"the token comes from {token.source}, and the input holds no Secret of the namespace: "
                        "whether the key exists cannot be told", Severity.INFO, token.evidence)
            if not token.present:
                return (f"the token comes from {token.source} ({token.note}): ARGOCD_TOKEN is empty (with an "
                        "optional reference, as the upstream manifests have it; else the pod does not start) and "
                        "every Argo CD API call is refused", Severity.MEDIUM, token.evidence)
            return None
        if token.present is False:
            return ("ARGOCD_TOKEN is set to an empty value", Severity.MEDIUM, token.evidence)
        return None

    # -- the Rollouts controller ----------------------------------------------------------------------------------

    def _rollouts(self, snap: Snapshot, comp: Component) -> Iterable[Finding]:
        obj = comp.workload or (comp.pods[0] if comp.pods else None)
        if obj is None:
            return
        namespaced = rollouts_namespaced(snap, comp)
        rollout_ns = sorted({r.namespace for r in snap.of_kind("Rollout", "argoproj.io")})
        if namespaced:
            scopes: list[str | None] = [obj.namespace]
            where = f"namespaced mode (--namespaced): Rollouts of {obj.namespace}"
        elif rollout_ns:
            scopes = list(rollout_ns)
            where = f"Rollouts in {', '.join(rollout_ns)}"
        else:
            scopes = [None]
            where = "a cluster-wide installation"
        needs = [Need("create", "", "pods/eviction", scope) for scope in scopes]
        why = (f"It restarts Rollouts ({where}) by evicting their pods: `kubectl argo rollouts restart` and Argo CD's "
               "restart action set spec.restartAt, and the controller evicts the pods created before it")
        label = f"Argo Rollouts controller {comp.version or '(version unknown)'}"
        effect = ("each restart's eviction is refused (403 Forbidden): the old pods are never replaced and the "
                  "restart never completes")
        yield from self._check(snap, comp, label, ("restarts Rollouts by eviction", why, effect), needs, (), None,
                               ROLLOUTS_DOCS)

    # -- the check --------------------------------------------------------------------------------------------------

    def _check(self, snap: Snapshot, comp: Component, label: str, text: tuple[str, str, str], needs: list[Need],
               mode_evidence: tuple[Evidence, ...], token: tuple[str, Severity, tuple[Evidence, ...]] | None,
               docs: tuple[str, ...]) -> Iterable[Finding]:
        mode, why, effect = text
        obj = comp.workload or comp.pods[0]
        ns, account = obj.namespace, service_account(comp)
        path = ".spec.template.spec.serviceAccountName" if comp.workload is not None else ".spec.serviceAccountName"
        refs = [obj.ref, Ref("v1", "ServiceAccount", ns, account)]
        who = f"{label} ({obj.kind} {ns}/{obj.name}, ServiceAccount {ns}/{account})"
        base = [*mode_evidence, object_evidence(obj, path, f"serviceAccountName: {account}")]
        if token is not None:
            problem, severity, found = token
            yield Finding(
                rule=self.id, severity=severity,
                title=(f"{label} {ns}/{obj.name} uses the Argo CD API without a usable token" if severity >
                       Severity.INFO else f"Cannot tell whether {label} {ns}/{obj.name} has its Argo CD API token"),
                summary=f"{who} {mode}: {problem}.", objects=refs, evidence=[*base, *found],
                remediation=Remediation(
                    text=("Create an Argo CD account with the apiKey capability and RBAC on the Applications the "
                          "updater manages, generate a token (`argocd account generate-token --account "
                          "image-updater`) and store it in the Secret argocd-image-updater-secret under the key "
                          "argocd.token; or switch to the Kubernetes API mode (applications_api: kubernetes, the "
                          "default), which needs no token."),
                    command="kubectl get secret argocd-image-updater-secret -n " + ns + " -o jsonpath='{.data}' | "
                            "jq 'keys'",
                    docs=docs),
            )
        if not needs or not _has_rbac(snap):  # an input without RBAC objects (most bundles): nothing to say
            return
        undecided = _cannot_decide(snap)
        perms = effective_permissions(snap, ns, account)
        missing = [need for need in needs if allows(perms, need.verb, need.group, need.resource, need.namespace,
                                                    need.name) is None]
        unknown_roles = [n for n in perms.notes if "grants are unknown" in n]
        if undecided is None and not missing:
            return
        checks = needs if undecided is not None else missing
        commands = "; ".join(n.can_i(ns, account) for n in checks[:3])
        shown = "; ".join(str(n) for n in checks)
        if undecided is not None or unknown_roles:
            reason = undecided or ("it is bound to roles absent from the input (" + "; ".join(unknown_roles) + ")")
            yield Finding(
                rule=self.id, severity=Severity.INFO,
                title=f"Cannot tell whether {label} {ns}/{obj.name} has the permissions its mode needs",
                summary=(f"{who} {mode}. {why}. It needs: {shown}. Whether its ServiceAccount has them cannot be "
                         f"decided: {reason}."),
                objects=refs, evidence=base,
                remediation=Remediation(text="Check the permissions on the cluster (or add the RBAC objects to the "
                                             "input and scan again).", command=commands, docs=DOCS),
            )
            return
        partial = _partial_grants(perms, missing)
        severity = Severity.MEDIUM if perms.grants else Severity.LOW
        unbound = "" if perms.grants else (
            " No RoleBinding or ClusterRoleBinding in the input names this ServiceAccount: either the input lacks its "
            "bindings, or the component has no permission at all.")
        yield Finding(
            rule=self.id, severity=severity,
            title=f"{label} {ns}/{obj.name} may not {missing[0]}" + (
                f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
            summary=(f"{who} {mode}. {why}. The RBAC objects of the input do not let its ServiceAccount: {shown}; "
                     f"{effect or _effect(missing)}.{unbound}"),
            objects=refs,
            evidence=[*base, *partial],
            remediation=Remediation(
                text=("Grant the missing permissions to the ServiceAccount (the patch holds a minimal Role per "
                      "namespace, a ClusterRole for what is cluster-wide), or narrow the component's scope to where "
                      "it is granted" + (" (for a git credentials Secret: keep it where the ServiceAccount may read "
                                         "Secrets)" if any(n.resource == "secrets" for n in missing) else "") + "."),
                patch=_patch(ns, account, comp.name, missing), command=commands, docs=(*docs, *DOCS)),
        )


def _effect(missing: list[Need]) -> str:
    """What the refused requests break."""
    effects = []
    if any(n.resource in ("applications", "imageupdaters") for n in missing):
        effects.append("listing or updating Applications is refused (403 Forbidden), so their images are never "
                       "updated")
    if any(n.resource == "secrets" for n in missing):
        effects.append("reading the git credentials Secret is refused, so git write-back fails for the Applications "
                       "that use it")
    return "; ".join(effects) or "those requests are refused (403 Forbidden)"


def _cannot_decide(snap: Snapshot) -> str | None:
    """Why permissions cannot be decided from this input, or None."""
    refused = sorted({e.get("what", "") for e in snap.unread if e.get("need") in {f"kind:{k}" for k in RBAC_NEEDS}
                      and e.get("status") in ("401", "403")})
    if refused:
        return f"the collection was refused {', '.join(refused)}"
    return None


def _has_rbac(snap: Snapshot) -> bool:
    """Whether the input holds RBAC objects, or a live collection tried to read them."""
    return any(snap.of_kind(kind, RBAC_GROUP) for kind in RBAC_KINDS) or _cannot_decide(snap) is not None


def _partial_grants(perms: Permissions, missing: list[Need]) -> list[Evidence]:
    """What the ServiceAccount is granted on the same resources, with where (so the gap is visible)."""
    found: list[Evidence] = []
    seen: set[tuple[str, str]] = set()
    for need in missing:
        for grant in perms.grants:
            if grant.api_group in ("*", need.group) and grant.resource in ("*", need.resource):
                key = (grant.evidence_location, str(grant.namespace))
                if key not in seen:
                    seen.add(key)
                    found.append(Evidence("object", grant.evidence_location, _grant_text(grant)))
    return found[:10]


def _grant_text(grant: Grant) -> str:
    resource = f"{grant.resource}.{grant.api_group}" if grant.api_group else grant.resource
    names = f" (only {', '.join(grant.resource_names)})" if grant.resource_names else ""
    scope = "cluster-wide" if grant.namespace is None else f"in {grant.namespace}"
    return f"grants {', '.join(grant.verbs)} on {resource}{names} {scope} via {' → '.join(grant.via)}"


def _patch(namespace: str, account: str, component: str, missing: list[Need]) -> str:
    """Role(s) and ClusterRole with the missing rules, bound to the ServiceAccount."""
    scopes: dict[str | None, list[Need]] = {}
    for need in missing:
        scopes.setdefault(need.namespace, []).append(need)
    docs = []
    name = f"{component}-missing"
    for scope, items in scopes.items():
        rules: dict[tuple[str, str, str | None], list[str]] = {}
        for need in items:
            rules.setdefault((need.group, need.resource, need.name), []).append(need.verb)
        lines = []
        for (group, resource, object_name), verbs in rules.items():
            lines.append(f'- apiGroups: ["{group}"]\n  resources: ["{resource}"]\n'
                         + (f'  resourceNames: ["{object_name}"]\n' if object_name else "")
                         + f"  verbs: [{', '.join(dict.fromkeys(verbs))}]")
        kind = "ClusterRole" if scope is None else "Role"
        meta = f"  name: {name}" + ("" if scope is None else f"\n  namespace: {scope}")
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata:\n{meta}\nrules:\n"
                    + "\n".join(lines))
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}Binding\nmetadata:\n{meta}\n"
                    f"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: {kind}\n  name: {name}\n"
                    f"subjects:\n- kind: ServiceAccount\n  name: {account}\n  namespace: {namespace}")
    return "\n---\n".join(docs)
