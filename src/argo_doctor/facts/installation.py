"""The installation map: every Argo component the snapshot holds, its version, replicas and nodes, its ServiceAccount,
the settings that decide how it integrates, and its integrations (what it talks to, through which API, with which
credentials), each with the evidence it comes from. No Secret value, token or header value is ever read into it:
Secrets and credential settings are named (Secret name, key name, header name) and their presence told.

What it relies on, read in the upstream sources:
- argocd-server (argo-cd `cmd/argocd-server/commands/argocd_server.go`, `util/settings/settings.go`): `--insecure`
  (env ARGOCD_SERVER_INSECURE, from `server.insecure` in argocd-cmd-params-cm) serves gRPC and HTTP without TLS on
  `--port` (8080); otherwise the certificate comes from the Secret `argocd-server-tls` (`tls.crt`), else from
  `argocd-secret` (`tls.crt`), else a self-signed one is generated and stored in argocd-secret.
- Redis (`util/cache/cache.go`): `--redis` (env REDIS_SERVER, `redis.server`), default `argocd-redis:6379`;
  `--sentinel` addresses; REDIS_PASSWORD; `--redis-use-tls`. Repo server address: `--repo-server` (env
  ARGOCD_SERVER_REPO_SERVER / ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER, `repo.server`), default
  `argocd-repo-server:8081`, TLS unless `--repo-server-plaintext`.
- Controller sharding (`common/common.go`): ARGOCD_CONTROLLER_REPLICAS, ARGOCD_CONTROLLER_SHARDING_ALGORITHM
  (`controller.sharding.algorithm`, default `legacy`), the StatefulSet's replicas.
- Image Updater v0.x (argocd-image-updater `cmd/run.go`, `pkg/argocd/argocd.go`, `pkg/argocd/update.go`,
  `pkg/argocd/gitcreds.go`, v0.12–v0.18): `--applications-api` (env APPLICATIONS_API, `applications_api` in
  argocd-image-updater-config) `kubernetes` (default) or `argocd`; the Argo CD API at `--argocd-server-addr` (env
  ARGOCD_SERVER, `argocd.server_addr`; default `argocd-server.<namespace>`), `--argocd-insecure`
  (`argocd.insecure`), `--argocd-plaintext` (`argocd.plaintext`), `--argocd-grpc-web` (`argocd.grpc_web`), token
  in env ARGOCD_TOKEN (Secret argocd-image-updater-secret key `argocd.token`) or `--argocd-auth-token`. Through
  the Kubernetes API it lists Applications in Argo CD's namespace (`--argocd-namespace`, else its own) up to
  v0.14, in every namespace in v0.15 and v0.16, in `--application-namespace` (default every namespace) from
  v0.17, and writes them back with update. Applications opt in with the annotation
  `argocd-image-updater.argoproj.io/image-list`; `write-back-method` is `argocd` (default) or `git[:<creds>]`
  with creds `repocreds` (default) or `secret:<namespace>/<name>`.
- Image Updater v1.x (`api/v1alpha1/imageupdater_types.go`, `cmd/run.go`, `config/install.yaml`): no Argo CD API
  mode; `ImageUpdater` resources (argocd-image-updater.argoproj.io/v1alpha1) name the Applications'
  namespace (`spec.namespace`), `applicationRefs` (namePattern, labelSelectors) and `writeBackConfig.method` (same
  syntax; `secret:<name>` allowed from v1.3). Its controller-runtime cache watches every namespace in v1.0 and
  v1.1; from v1.2 `--watch-namespaces` (env IMAGE_UPDATER_WATCH_NAMESPACES, `watch.namespaces`): empty = its own
  namespace, `*` = all, else a list.
- Notifications (notifications-engine `pkg/api/config.go`, `pkg/subscriptions`, `pkg/services/webhook.go`):
  `service.<type>[.<name>]`, `template.<name>` (per-service sections such as `webhook.<name>`),
  `trigger.<name>` (list of {when, send: [templates]}), `subscriptions`, `defaultTriggers[.<service>]`;
  annotations `notifications.argoproj.io/subscribe.<trigger>.<service>` and `.../subscriptions`. Argo Rollouts
  reads the same format from `argo-rollouts-notification-configmap`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

import yaml

from argo_doctor.facts.rbac import RBAC_NEEDS, Permissions, effective_permissions
from argo_doctor.knowledge import load_rows, parse_version
from argo_doctor.knowledge.components import component_rules
from argo_doctor.model import Evidence, Needs
from argo_doctor.snapshot import Component, Obj, Snapshot
from argo_doctor.sources import goyaml
from argo_doctor.sources.objects import AliasBomb, as_int, as_list, expanded_size, mapping

UPDATER_GROUP = "argocd-image-updater.argoproj.io"
UPDATER_PREFIX = "argocd-image-updater.argoproj.io/"
IMAGE_LIST = UPDATER_PREFIX + "image-list"
WRITE_BACK_METHOD = UPDATER_PREFIX + "write-back-method"
GIT_REPOSITORY = UPDATER_PREFIX + "git-repository"
UPDATER_CONFIG = "argocd-image-updater-config"
UPDATER_SECRET = "argocd-image-updater-secret"
SUBSCRIBE = "notifications.argoproj.io/subscribe."
SUBSCRIPTIONS = "notifications.argoproj.io/subscriptions"
CMD_PARAMS = "argocd-cmd-params-cm"
DEFAULT_REDIS = "argocd-redis:6379"
DEFAULT_REPO_SERVER = "argocd-repo-server:8081"
ROLLOUTS_NOTIFICATIONS = "argo-rollouts-notification-configmap"
ARGOCD_NOTIFICATIONS = "argocd-notifications-cm"
INSTALLATION_NEEDS = Needs(frozenset({
    "apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "apps/ReplicaSet", "Pod", "ConfigMap", "Secret", "Service",
    "argoproj.io/Application", "argoproj.io/AppProject", "argoproj.io/Rollout", f"{UPDATER_GROUP}/ImageUpdater",
    *RBAC_NEEDS,
}))
"""What `installation` and the permissions of the map read, for a live collection (`map --live`)."""
CONTAINER_HINTS = {
    "server": "argocd-server", "repo-server": "argocd-repo-server",
    "application-controller": "argocd-application-controller",
    "applicationset-controller": "argocd-applicationset-controller",
    "notifications-controller": "argocd-notifications-controller", "image-updater": "argocd-image-updater",
    "rollouts-controller": "argo-rollouts", "redis-ha": "redis", "redis-ha-haproxy": "haproxy",
}
"""The main container's name (or part of it) by component, where a pod has several."""
MAX_YAML_VALUE = 256 << 10
"""A ConfigMap value longer than this is not parsed as YAML (a notifications setting is a few lines)."""


@dataclass(frozen=True)
class Integration:
    """One way a component talks to something: the target (another component's workload name, `kubernetes-api`,
    `git`, `clients` for what calls the component, or `<service type>:<name>` for a notification service), the
    API and endpoint, the credentials used (names only), why, and where that was read."""

    target: str
    api: str
    auth: str
    purpose: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class InstalledComponent:
    """One component workload (or its pods, when the workload is not in the input) with how it integrates."""

    name: str
    namespace: str
    component: str
    product: str
    workload: Obj | None
    version: str | None
    replicas: int | None
    nodes: tuple[str, ...]
    service_account: str
    settings: Mapping[str, str]
    integrations: tuple[Integration, ...]


@dataclass(frozen=True)
class Setting:
    """A setting as the component resolves it: flag, else environment variable (literal, ConfigMap key or Secret
    key), else default. `value` is None for a value held in a Secret (never read) or not known; `present` tells,
    for a Secret key, whether it exists (None: the Secret is not in the input)."""

    value: str | None
    source: str
    evidence: tuple[Evidence, ...] = ()
    present: bool | None = None
    known: bool = True
    """False when the ConfigMap or Secret the value comes from is not in the input."""
    explicit: bool = True
    """False when the default applies."""
    note: str = ""
    """For a Secret key: `key present`, `key absent`, `Secret absent` or `Secret not in the input`."""


@dataclass(frozen=True)
class WriteBack:
    """How the Image Updater writes back updates for one Application (v0 annotation) or ImageUpdater entry (v1)."""

    source: Obj
    path: str
    applications: str
    method: str
    credentials: str
    secret: tuple[str, str] | None
    """(namespace, name) of the git credentials Secret, for `git:secret:...`."""
    written: str
    """The method as written (`git:secret:argocd/git-creds`): names only."""


@dataclass(frozen=True)
class UpdaterConfig:
    """The Image Updater's mode: generation, API used for Applications, Argo CD API settings, where it looks for
    Applications, the Applications or ImageUpdater resources it manages, and their write-back methods."""

    generation: str
    version: tuple[int, int, int] | None
    namespace: str
    api: Setting
    server: Setting | None
    insecure: Setting | None
    plaintext: Setting | None
    grpc_web: Setting | None
    token: Setting | None
    token_flag: bool
    scope: tuple[str, ...] | None
    """Namespaces it lists Applications in (v1: its cache watches); None for every namespace."""
    scope_source: str
    scope_evidence: tuple[Evidence, ...]
    targets: tuple[str, ...]
    """Namespaces of the Applications it manages (annotated Applications, v1 `spec.namespace`)."""
    managed: tuple[Obj, ...]
    write_backs: tuple[WriteBack, ...]

    @property
    def kubernetes_mode(self) -> bool:
        """Whether it reads and writes Applications through the Kubernetes API (v1: always)."""
        return self.generation == "v1" or (self.api.value or "kubernetes") == "kubernetes"


# -- evidence and small helpers --------------------------------------------------------------------


def evidence(obj: Obj, path: str, excerpt: str) -> Evidence:
    """Evidence pointing at a field of an object: `file:line Kind/ns/name .field.path`."""
    return Evidence("object", f"{obj.location} {obj.ref} {path}", excerpt)


def _key_path(key: str) -> str:
    return f".data.{key}" if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'.data["{key}"]'


def secret_keys(secret: Obj) -> set[str]:
    """The keys of a Secret (`data` and `stringData`); values are never read."""
    return {str(k) for k in (*mapping(secret.raw.get("data")), *mapping(secret.raw.get("stringData")))}


def config_data(cm: Obj) -> dict[str, str]:
    """A ConfigMap's `data` as strings (a key left empty in a manifest, null, as "")."""
    return {str(k): "" if v is None else str(v) for k, v in mapping(cm.raw.get("data")).items()}


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "yes")


def yaml_value(text: str) -> Any:
    """A ConfigMap value parsed as YAML, None when it is not YAML, too large, too deep or an alias bomb."""
    if len(text) > MAX_YAML_VALUE:
        return None
    try:
        value = goyaml.load(text)
        expanded_size(value)
    except (yaml.YAMLError, RecursionError, AliasBomb, ValueError):
        return None
    return value


_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?:[^@/?#]*@)?(?P<rest>[^?#\s]*)")


def safe_url(text: str) -> str:
    """A URL without its user information, query and fragment (which may hold credentials); a `$key` reference to
    the notifications Secret is kept as written."""
    text = text.strip()
    if text.startswith("$"):
        return text.split()[0]
    found = _URL.match(text)
    return f"{found.group('scheme')}{found.group('rest')}" if found else ""


def _host(address: str) -> str:
    """`argocd-redis-ha-haproxy.argocd.svc:6379` → `argocd-redis-ha-haproxy`."""
    address = re.sub(r"^[a-z]+://", "", address.strip())
    return address.split("/", 1)[0].rsplit(":", 1)[0].split(".", 1)[0]


@cache
def _catalogue() -> dict[str, dict[str, Any]]:
    return {str(row["component"]): row for row in load_rows("components.yaml")}


@cache
def _order() -> dict[str, int]:
    order: dict[str, int] = {}
    for rule in component_rules():
        order.setdefault(rule.component, len(order))
    return order


# -- containers: flags and environment -------------------------------------------------------------


@dataclass(frozen=True)
class Container:
    """The main container of a component: its object (workload or pod), field path and spec."""

    obj: Obj
    path: str
    spec: dict[str, Any]
    namespace: str

    @property
    def args(self) -> list[str]:
        """`command` then `args`, as strings."""
        return [str(a) for a in (*as_list(self.spec.get("command")), *as_list(self.spec.get("args")))]

    def flag(self, name: str, boolean: bool = False) -> tuple[str, str] | None:
        """(value, the argument as written) of `--name` (the last one wins, as with pflag); a boolean flag without
        `=value` is "true" and never takes the next argument."""
        found = None
        args = self.args
        prefix = f"--{name}"
        for i, arg in enumerate(args):
            if arg == prefix:
                if boolean:
                    found = ("true", arg)
                elif i + 1 < len(args):
                    found = (args[i + 1], f"{arg} {args[i + 1]}")
            elif arg.startswith(prefix + "="):
                found = (arg[len(prefix) + 1:], arg)
        return found

    def flags(self, name: str) -> list[str]:
        """Every value of a repeated flag (`--sentinel a --sentinel b`)."""
        values = []
        args = self.args
        for i, arg in enumerate(args):
            if arg == f"--{name}" and i + 1 < len(args):
                values.append(args[i + 1])
            elif arg.startswith(f"--{name}="):
                values.append(arg.split("=", 1)[1])
        return values

    def has_flag(self, name: str) -> bool:
        """Whether `--name` is given in any form."""
        return any(a == f"--{name}" or a.startswith(f"--{name}=") for a in self.args)

    def env(self, name: str) -> tuple[int, dict[str, Any]] | None:
        """(index, entry) of an environment variable."""
        found = None
        for i, entry in enumerate(as_list(self.spec.get("env"))):
            if isinstance(entry, dict) and entry.get("name") == name:
                found = (i, entry)
        return found


def main_container(snap: Snapshot, comp: Component, name_hint: str = "") -> Container | None:
    """The component's main container: the one named like the hint or the component, else the first."""
    if comp.workload is not None:
        obj = comp.workload
        spec = mapping(mapping(obj.spec.get("template")).get("spec"))
        base = ".spec.template.spec.containers"
    elif comp.pods:
        obj = comp.pods[0]
        spec = obj.spec
        base = ".spec.containers"
    else:
        return None
    containers = [c for c in as_list(spec.get("containers")) if isinstance(c, dict)]
    if not containers:
        return None
    hints = [h for h in (name_hint, obj.name) if h]
    index = next((i for h in hints for i, c in enumerate(containers) if str(c.get("name") or "") == h), None)
    if index is None:
        index = next((i for i, c in enumerate(containers) if name_hint and name_hint in str(c.get("name") or "")), 0)
    return Container(obj, f"{base}[{index}]", containers[index], obj.namespace)


def resolve(snap: Snapshot, container: Container, flag: str | None, env: str | None, default: str | None,
            boolean: bool = False, secret: bool = False) -> Setting:
    """A setting as the component reads it: the flag, else the environment variable (a literal, a ConfigMap key or
    a Secret key: presence only), else the default. With `secret`, a literal value is never put in the evidence."""
    obj, ns = container.obj, container.namespace
    if flag is not None:
        given = container.flag(flag, boolean)
        if given is not None:
            excerpt = f"--{flag} (value not shown)" if secret else given[1]
            return Setting(None if secret else given[0], f"flag --{flag}",
                           (evidence(obj, f"{container.path}.args", excerpt),))
    found = container.env(env) if env else None
    if found is None:
        what = " and ".join(x for x in (f"no --{flag} flag" if flag else "", f"no {env} variable" if env else "") if x)
        return Setting(default, "default", (evidence(obj, container.path, f"{what}: default {default or 'unset'}"),),
                       explicit=False)
    index, entry = found
    env_path = f"{container.path}.env[{index}]"
    if "value" in entry:
        value = str(entry.get("value") or "")
        excerpt = f"{env}=(value not shown)" if secret else f"{env}={value}"
        return Setting(None if secret else value, f"env {env}", (evidence(obj, env_path, excerpt),),
                       present=bool(value) if secret else None)
    source = mapping(entry.get("valueFrom"))
    cm_ref, secret_ref = mapping(source.get("configMapKeyRef")), mapping(source.get("secretKeyRef"))
    if cm_ref:
        cm_name, key = str(cm_ref.get("name") or ""), str(cm_ref.get("key") or "")
        where = f"ConfigMap {cm_name} key {key}"
        ref_evidence = evidence(obj, env_path, f"{env} from {where}")
        cm = snap.get("ConfigMap", cm_name, ns, "")
        if cm is None:
            return Setting(default, f"{where} (ConfigMap not in the input)", (ref_evidence,), known=False,
                           explicit=False)
        data = config_data(cm)
        if key not in data:
            return Setting(default, f"default ({cm_name} has no key {key})",
                           (ref_evidence, evidence(cm, ".data", f"no key {key}")), explicit=False)
        value = data[key]
        excerpt = f"{key}: (value not shown)" if secret else f"{key}: {value}"
        return Setting(None if secret else value, where, (ref_evidence, evidence(cm, _key_path(key), excerpt)))
    if secret_ref:
        name, key = str(secret_ref.get("name") or ""), str(secret_ref.get("key") or "")
        where = f"Secret {name} key {key}"
        ref_evidence = evidence(obj, env_path, f"{env} from {where}")
        present, secret_evidence, note = secret_key_presence(snap, ns, name, key)
        return Setting(None, where, (ref_evidence, *secret_evidence), present=present, known=present is not None,
                       note=note)
    return Setting(None, f"env {env} ({', '.join(source) or 'no value'})", (evidence(obj, env_path, str(env)),),
                   known=False)


def secrets_in_input(snap: Snapshot, namespace: str) -> bool:
    """Whether the input holds Secrets of a namespace (else the absence of one proves nothing)."""
    refused = any(e.get("need") == "kind:Secret" for e in snap.unread)
    return not refused and any(True for _ in snap.of_kind("Secret", "", namespace))


def secret_key_presence(snap: Snapshot, namespace: str, name: str, key: str
                        ) -> tuple[bool | None, tuple[Evidence, ...], str]:
    """Whether a Secret holds a key: True, False (the Secret lacks it, or is absent while the namespace's Secrets are
    in the input), None (cannot tell); with the evidence and a note (`key present`, `key absent`, `Secret absent`,
    `Secret not in the input`). The value is never read."""
    secret = snap.get("Secret", name, namespace, "")
    if secret is None:
        if secrets_in_input(snap, namespace):
            return False, (), "Secret absent"
        return None, (), "Secret not in the input"
    if key in secret_keys(secret):
        return True, (evidence(secret, _key_path(key), f"key {key} present (value not shown)"),), "key present"
    return False, (evidence(secret, ".data", f"no key {key}"),), "key absent"


# -- the components --------------------------------------------------------------------------------


def installation(snap: Snapshot) -> list[InstalledComponent]:
    """Every component workload of the snapshot with its integrations, in catalogue order, then by namespace and
    name."""
    found = [_installed(snap, comp) for comp in snap.components]
    found = [_resolve_targets(snap, comp, found) for comp in found]
    order = _order()
    return sorted(found, key=lambda c: (order.get(c.component, len(order)), c.namespace, c.name))


def component_permissions(snap: Snapshot, components: Sequence[InstalledComponent]
                          ) -> dict[tuple[str, str], Permissions]:
    """(namespace, name) of each component → the effective permissions of its ServiceAccount (facts.rbac)."""
    by_account: dict[tuple[str, str], Permissions] = {}
    result = {}
    for comp in components:
        account = (comp.namespace, comp.service_account)
        if account not in by_account:
            by_account[account] = effective_permissions(snap, *account)
        result[(comp.namespace, comp.name)] = by_account[account]
    return result


def _pod_spec(comp: Component) -> dict[str, Any]:
    if comp.workload is not None:
        return mapping(mapping(comp.workload.spec.get("template")).get("spec"))
    return comp.pods[0].spec if comp.pods else {}


def service_account(comp: Component) -> str:
    """The ServiceAccount of a component's pods (`default` when unset)."""
    spec = _pod_spec(comp)
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def component_version(comp: Component) -> str | None:
    """The image tag, else the `app.kubernetes.io/version` label (of the workload, its pod template or a pod), else
    the image digest."""
    if comp.version:
        return comp.version
    labels: list[Mapping[str, str]] = []
    if comp.workload is not None:
        labels.append(comp.workload.labels)
        labels.append(mapping(mapping(mapping(comp.workload.spec.get("template")).get("metadata")).get("labels")))
    labels.extend(p.labels for p in comp.pods)
    for found in labels:
        version = found.get("app.kubernetes.io/version")
        if version:
            return str(version)
    if comp.image and "@" in comp.image:
        return comp.image.split("@", 1)[1]
    return None


def _replicas(comp: Component) -> int | None:
    workload = comp.workload
    if workload is None:
        return len(comp.pods) or None
    if workload.kind == "DaemonSet":
        desired = workload.status.get("desiredNumberScheduled")
        return as_int(desired) if desired is not None else None
    replicas = workload.spec.get("replicas")
    return as_int(replicas, 1) if replicas is not None else 1


@dataclass
class _Build:
    snap: Snapshot
    comp: Component
    container: Container | None
    namespace: str
    settings: dict[str, str] = field(default_factory=dict)
    integrations: list[Integration] = field(default_factory=list)

    def add(self, target: str, api: str, auth: str, purpose: str, found: Iterable[Evidence] = ()) -> None:
        self.integrations.append(Integration(target, api, auth, purpose, tuple(found)))


def _installed(snap: Snapshot, comp: Component) -> InstalledComponent:
    obj = comp.workload or (comp.pods[0] if comp.pods else None)
    namespace = obj.namespace if obj is not None else ""
    build = _Build(snap, comp, main_container(snap, comp, _container_hint(comp.name)), namespace)
    builders = {
        "server": _server, "repo-server": _repo_server, "application-controller": _application_controller,
        "applicationset-controller": _applicationset_controller, "notifications-controller": _notifications_controller,
        "image-updater": _image_updater, "rollouts-controller": _rollouts_controller,
        "redis-ha-haproxy": _redis_haproxy, "redis-ha": _redis_ha, "events-eventsource": _events_generated,
        "events-sensor": _events_generated,
    }
    if comp.name != "image-updater":  # the updater's API use depends on its mode
        _kubernetes_api(build)
    builder = builders.get(comp.name)
    if builder is not None and build.container is not None:
        builder(build)
    name = comp.workload.name if comp.workload is not None else (comp.pods[0].name if comp.pods else comp.name)
    return InstalledComponent(
        name=name, namespace=namespace, component=comp.name, product=comp.product, workload=comp.workload,
        version=component_version(comp), replicas=_replicas(comp),
        nodes=tuple(sorted({p.node_name for p in comp.pods if p.node_name})),
        service_account=service_account(comp), settings=dict(build.settings),
        integrations=tuple(build.integrations),
    )


def _container_hint(component: str) -> str:
    return CONTAINER_HINTS.get(component, "")


def _template_labels(comp: InstalledComponent) -> Mapping[str, str]:
    if comp.workload is None:
        return {}
    return mapping(mapping(mapping(comp.workload.spec.get("template")).get("metadata")).get("labels"))


def _resolve_targets(snap: Snapshot, comp: InstalledComponent, found: Sequence[InstalledComponent]
                     ) -> InstalledComponent:
    """Targets named by a Service (`argocd-redis-ha`) become the workload name of the component whose pods that
    Service selects (`argocd-redis-ha-server`), so that the map draws the arrow to it."""
    names = {c.name for c in found}
    changed = []
    for item in comp.integrations:
        target = item.target
        service = None if target in names or ":" in target else snap.get("Service", target, comp.namespace, "")
        selector = mapping(service.spec.get("selector")) if service is not None else {}
        if selector:
            match = next((c for c in found if c.namespace == comp.namespace and c is not comp
                          and all(_template_labels(c).get(k) == v for k, v in selector.items())), None)
            if match is not None:
                item = replace(item, target=match.name)
        changed.append(item)
    return replace(comp, integrations=tuple(changed))


def _automount(build: _Build) -> bool:
    value = _pod_spec(build.comp).get("automountServiceAccountToken")
    return value is not False


def _kubernetes_api(build: _Build) -> None:
    """The component's own use of the Kubernetes API, with its ServiceAccount, from the catalogue."""
    purpose = _catalogue().get(build.comp.name, {}).get("kubernetes_api")
    account = service_account(build.comp)
    obj = build.comp.workload or (build.comp.pods[0] if build.comp.pods else None)
    if not _automount(build):
        build.settings["automountServiceAccountToken"] = "false"
        return
    if not purpose or obj is None:
        return
    path = ".spec.template.spec.serviceAccountName" if build.comp.workload is not None else ".spec.serviceAccountName"
    build.add("kubernetes-api", "Kubernetes API (HTTPS, in-cluster)", f"ServiceAccount {build.namespace}/{account}",
              str(purpose), [evidence(obj, path, f"serviceAccountName: {account}")])


def _redis(build: _Build) -> None:
    """The Redis cache an Argo CD component uses (`util/cache/cache.go`)."""
    snap, container = build.snap, build.container
    assert container is not None
    sentinels = container.flags("sentinel")
    address = resolve(snap, container, "redis", "REDIS_SERVER", DEFAULT_REDIS)
    password = resolve(snap, container, None, "REDIS_PASSWORD", None, secret=True)
    tls = container.has_flag("redis-use-tls")
    found = [*address.evidence]
    if sentinels:
        target = _host(sentinels[0])
        api = f"Redis through Sentinel {', '.join(sentinels)}" + (" over TLS" if tls else "")
    else:
        target = _host(address.value or DEFAULT_REDIS)
        api = f"Redis {address.value or DEFAULT_REDIS}" + (" over TLS" if tls else " (plain TCP)")
    if password.source.startswith("Secret "):
        auth = f"password from {password.source}" + _presence(password)
        found.extend(password.evidence)
    elif password.explicit:
        auth = f"password from {password.source}"
    else:
        auth = "none"
    build.settings["redis"] = address.value or DEFAULT_REDIS
    build.add(target, api, auth, "cache (manifests, app state, cluster info)", found)


def _presence(setting: Setting) -> str:
    return f" ({setting.note})" if setting.note and setting.note != "key present" else ""


def _repo_server_link(build: _Build, env: str, plaintext_env: str) -> None:
    snap, container = build.snap, build.container
    assert container is not None
    address = resolve(snap, container, "repo-server", env, DEFAULT_REPO_SERVER)
    plaintext = resolve(snap, container, "repo-server-plaintext", plaintext_env, "false", boolean=True)
    strict = container.has_flag("repo-server-strict-tls")
    mode = "plaintext" if _truthy(plaintext.value) else ("TLS, verified" if strict else "TLS, certificate not verified")
    build.add(_host(address.value or DEFAULT_REPO_SERVER), f"gRPC {address.value or DEFAULT_REPO_SERVER} ({mode})",
              "none (in-cluster gRPC, no client authentication)", "manifest generation",
              [*address.evidence, *plaintext.evidence])


def _server(build: _Build) -> None:
    snap, container, ns = build.snap, build.container, build.namespace
    assert container is not None
    insecure = resolve(snap, container, "insecure", "ARGOCD_SERVER_INSECURE", None, boolean=True)
    if not insecure.explicit and container.env("ARGOCD_SERVER_INSECURE") is None:
        params = snap.get("ConfigMap", CMD_PARAMS, ns, "")
        if params is not None and "server.insecure" in config_data(params):
            value = config_data(params)["server.insecure"]
            insecure = Setting(value, f"ConfigMap {CMD_PARAMS} key server.insecure",
                               (evidence(params, _key_path("server.insecure"), f"server.insecure: {value}"),))
    port = container.flag("port")
    listen = port[0] if port else "8080"
    build.settings["server.insecure"] = "true" if _truthy(insecure.value) else "false"
    endpoints = _service_ports(snap, build.comp, ns)
    where = f" (Service {endpoints})" if endpoints else ""
    if _truthy(insecure.value):
        build.settings["tls"] = "none (insecure: TLS terminated in front of the server, if at all)"
        api = f"gRPC + HTTP without TLS on :{listen}{where}"
        found = list(insecure.evidence)
    else:
        tls, found = _server_certificate(snap, ns)
        build.settings["tls"] = tls
        api = f"gRPC + HTTPS on :{listen}{where}, {tls}"
        found = [*insecure.evidence, *found]
    build.add("clients", api, "Argo CD local accounts, SSO (Dex or OIDC) and API tokens",
              "UI, CLI, API and gRPC-web clients", found)
    _repo_server_link(build, "ARGOCD_SERVER_REPO_SERVER", "ARGOCD_SERVER_REPO_SERVER_PLAINTEXT")
    _redis(build)


def _server_certificate(snap: Snapshot, ns: str) -> tuple[str, list[Evidence]]:
    """Where argocd-server takes its TLS certificate from (`util/settings/settings.go`); key presence only."""
    for name in ("argocd-server-tls", "argocd-secret"):
        present, found, _ = secret_key_presence(snap, ns, name, "tls.crt")
        if present:
            return f"certificate from Secret {name} (tls.crt)", list(found)
    if secrets_in_input(snap, ns):
        secret = snap.get("Secret", "argocd-secret", ns, "")
        absent = [evidence(secret, ".data", "no key tls.crt")] if secret is not None else []
        return ("self-signed certificate generated at start-up (no tls.crt in argocd-server-tls or argocd-secret)",
                absent)
    return "certificate source unknown (the input holds no Secret of the namespace)", []


def _service_ports(snap: Snapshot, comp: Component, ns: str) -> str:
    """`argocd-server 80→8080, 443→8080`: the Services that select the component's pods, with their ports."""
    labels: Mapping[str, str] = {}
    if comp.workload is not None:
        labels = mapping(mapping(mapping(comp.workload.spec.get("template")).get("metadata")).get("labels"))
    elif comp.pods:
        labels = comp.pods[0].labels
    parts = []
    for service in snap.of_kind("Service", "", ns):
        if service.name.endswith("-metrics"):
            continue
        selector = mapping(service.spec.get("selector"))
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            continue
        ports = []
        for port in as_list(service.spec.get("ports")):
            port = mapping(port)
            target = port.get("targetPort")
            ports.append(f"{port.get('port')}→{target}" if target not in (None, port.get("port")) else
                         str(port.get("port")))
        parts.append(f"{service.name} {', '.join(ports)}")
    return "; ".join(parts)


def _repo_server(build: _Build) -> None:
    _redis(build)
    build.add("git", "Git and Helm repositories (HTTPS, SSH)", "repository credentials from Argo CD repository Secrets",
              "fetch sources and render manifests")


def _application_controller(build: _Build) -> None:
    snap, container, comp = build.snap, build.container, build.comp
    assert container is not None
    replicas = _replicas(comp)
    declared = resolve(snap, container, None, "ARGOCD_CONTROLLER_REPLICAS", None)
    algorithm = resolve(snap, container, "sharding-method", "ARGOCD_CONTROLLER_SHARDING_ALGORITHM", "legacy")
    dynamic = resolve(snap, container, None, "ARGOCD_ENABLE_DYNAMIC_CLUSTER_DISTRIBUTION", "false")
    build.settings["replicas"] = str(replicas) if replicas is not None else "unknown"
    if declared.value is not None:
        build.settings["ARGOCD_CONTROLLER_REPLICAS"] = declared.value
    build.settings["controller.sharding.algorithm"] = algorithm.value or "legacy"
    if _truthy(dynamic.value):
        build.settings["dynamic cluster distribution"] = "true"
    shards = as_int(declared.value, 0) if declared.value is not None else None
    if shards is not None and replicas is not None and shards != replicas and not _truthy(dynamic.value):
        build.settings["sharding"] = (f"ARGOCD_CONTROLLER_REPLICAS={shards} but {replicas} replicas run: clusters are "
                                      "assigned to shards that do not exist, or replicas stay idle")
    elif replicas and replicas > 1:
        build.settings["sharding"] = f"{replicas} shards, clusters assigned by {algorithm.value or 'legacy'}"
    _repo_server_link(build, "ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER",
                      "ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_PLAINTEXT")
    _redis(build)


def _applicationset_controller(build: _Build) -> None:
    _repo_server_link(build, "ARGOCD_APPLICATIONSET_CONTROLLER_REPO_SERVER",
                      "ARGOCD_APPLICATIONSET_CONTROLLER_REPO_SERVER_PLAINTEXT")


def _redis_haproxy(build: _Build) -> None:
    build.add("argocd-redis-ha", "Redis 6379 and Sentinel 26379 (plain TCP)", "none",
              "route clients to the current Redis master")


def _redis_ha(build: _Build) -> None:
    spec = _pod_spec(build.comp)
    names = [str(mapping(c).get("name") or "") for c in as_list(spec.get("containers"))]
    build.settings["containers"] = ", ".join(n for n in names if n)


def _events_generated(build: _Build) -> None:
    obj = build.comp.workload or (build.comp.pods[0] if build.comp.pods else None)
    if obj is None:
        return
    for key in ("eventsource-name", "sensor-name"):
        value = obj.labels.get(key)
        if value:
            build.settings[key] = value


# -- notifications ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotificationService:
    """One notification service of a notifications ConfigMap: names and URL only, never a header value."""

    name: str
    type: str
    url: str
    headers: tuple[str, ...]
    basic_auth: bool
    secret_refs: tuple[str, ...]
    """`$key` references to the notifications Secret in the service's settings (key names)."""
    key: str
    triggers: tuple[str, ...]


def notification_services(snap: Snapshot, cm: Obj, subscribed_kind: tuple[str, str]) -> list[NotificationService]:
    """The services of a notifications ConfigMap with the triggers that use them: through subscriptions
    (annotations on `subscribed_kind` (group, kind) objects, the `subscriptions` key, default triggers) and
    through templates that hold a section for the service."""
    data = config_data(cm)
    services: dict[str, tuple[str, str]] = {}
    for key in data:
        parts = key.split(".")
        if parts[0] == "service" and len(parts) in (2, 3):
            services[parts[-1]] = (parts[1], key)
    triggers = {key.split(".", 1)[1]: yaml_value(value) for key, value in data.items() if key.startswith("trigger.")}
    templates = {key.split(".", 1)[1]: yaml_value(value) for key, value in data.items()
                 if key.startswith("template.")}
    defaults = [str(t) for t in as_list(yaml_value(data.get("defaultTriggers", "")))]
    service_defaults = {key.split(".", 1)[1]: [str(t) for t in as_list(yaml_value(value))]
                        for key, value in data.items() if key.startswith("defaultTriggers.")}
    used: dict[str, set[str]] = {name: set() for name in services}

    def subscribe(trigger: str, service: str) -> None:
        if service not in used:
            return
        used[service].update([trigger] if trigger else service_defaults.get(service) or defaults)

    for sub in as_list(yaml_value(data.get("subscriptions", ""))):
        sub = mapping(sub)
        for recipient in as_list(sub.get("recipients")):
            for trigger in [str(t) for t in as_list(sub.get("triggers"))] or [""]:
                subscribe(trigger, str(recipient).split(":", 1)[0])
    group, kind = subscribed_kind
    subscribers = [*snap.of_kind(kind, group)]
    if kind == "Application":  # Argo CD reads subscriptions from AppProjects too
        subscribers += snap.of_kind("AppProject", group)
    for obj in subscribers:
        for key, value in obj.annotations.items():
            if key.startswith(SUBSCRIBE):
                parts = key[len(SUBSCRIBE):].split(".")
                subscribe(parts[0] if len(parts) >= 2 else "", parts[1] if len(parts) >= 2 else parts[0])
            elif key.startswith(SUBSCRIPTIONS):
                for sub in as_list(yaml_value(value)):
                    sub = {str(k).lower(): v for k, v in mapping(sub).items()}
                    for dest in as_list(sub.get("destinations")):
                        dest = {str(k).lower(): v for k, v in mapping(dest).items()}
                        for trigger in [str(t) for t in as_list(sub.get("trigger"))] or [""]:
                            subscribe(trigger, str(dest.get("service") or ""))
    for trigger, conditions in triggers.items():
        sent = {str(t) for c in as_list(conditions) for t in as_list(mapping(c).get("send"))}
        for template in sent:
            body = mapping(templates.get(template))
            for name, (service_type, _) in services.items():
                if name in mapping(body.get(service_type)) or (name == service_type and service_type in body):
                    used[name].add(trigger)
    result = []
    for name, (service_type, key) in sorted(services.items()):
        config = mapping(yaml_value(data[key]))
        url = next((safe_url(str(config[k])) for k in ("url", "apiURL", "address", "server") if config.get(k)), "")
        headers = tuple(str(mapping(h).get("name") or "") for h in as_list(config.get("headers")))
        refs = tuple(sorted(set(re.findall(r"\$([\w-]+)", data[key]))))
        result.append(NotificationService(name, service_type, url, tuple(h for h in headers if h),
                                          bool(mapping(config.get("basicAuth"))), refs, key,
                                          tuple(sorted(used[name]))))
    return result


def _notifications(build: _Build, cm: Obj, secret_name: str, subscribed_kind: tuple[str, str]) -> None:
    services = notification_services(build.snap, cm, subscribed_kind)
    build.settings["notification services"] = ", ".join(f"{s.type}:{s.name}" for s in services) or "none"
    for service in services:
        auth_parts = []
        if service.headers:
            auth_parts.append(f"headers {', '.join(service.headers)} (values not shown)")
        if service.basic_auth:
            auth_parts.append("basic auth (values not shown)")
        if service.secret_refs:
            auth_parts.append(f"{secret_name} keys {', '.join(service.secret_refs)}")
        api = f"{service.type} {service.url}".strip()
        triggers = ", ".join(service.triggers) or "no trigger subscribed in the input"
        excerpt = f"{service.key}: type {service.type}" + (f", url {service.url}" if service.url else "") + (
            f", headers {', '.join(service.headers)}" if service.headers else "")
        build.add(f"{service.type}:{service.name}", api, "; ".join(auth_parts) or "none",
                  f"notifications for triggers: {triggers}", [evidence(cm, _key_path(service.key), excerpt)])


def _notifications_controller(build: _Build) -> None:
    cm = build.snap.get("ConfigMap", ARGOCD_NOTIFICATIONS, build.namespace, "")
    if cm is None:
        build.settings["notifications"] = f"{ARGOCD_NOTIFICATIONS} not in the input"
        return
    _notifications(build, cm, "argocd-notifications-secret", ("argoproj.io", "Application"))


def rollouts_namespaced(snap: Snapshot, comp: Component) -> bool:
    """Whether the Argo Rollouts controller runs with `--namespaced` (its own namespace only, no cluster RBAC)."""
    container = main_container(snap, comp, "argo-rollouts")
    return container is not None and _truthy((container.flag("namespaced", True) or ("false", ""))[0])


def _rollouts_controller(build: _Build) -> None:
    build.settings["namespaced"] = "true" if rollouts_namespaced(build.snap, build.comp) else "false"
    cm = build.snap.get("ConfigMap", ROLLOUTS_NOTIFICATIONS, build.namespace, "")
    if cm is not None:
        _notifications(build, cm, "argo-rollouts-notification-secret", ("argoproj.io", "Rollout"))


# -- the Image Updater -----------------------------------------------------------------------------


def updater_config(snap: Snapshot, comp: Component) -> UpdaterConfig | None:
    """The Image Updater's mode and what it manages; None when its container is not in the input."""
    container = main_container(snap, comp, "argocd-image-updater")
    if container is None:
        return None
    ns = container.namespace
    version = parse_version(component_version(comp))
    generation = _generation(snap, container, version)
    if generation == "v1":
        return _updater_v1(snap, container, version, ns)
    return _updater_v0(snap, container, version, ns, generation)


def _generation(snap: Snapshot, container: Container, version: tuple[int, int, int] | None) -> str:
    if version is not None:
        return "v1" if version[0] >= 1 else "v0"
    args = container.args
    if (any(a.endswith("/manager") for a in args) or container.has_flag("watch-namespaces")
            or container.has_flag("metrics-bind-address") or container.env("IMAGE_UPDATER_WATCH_NAMESPACES")
            or snap.of_kind("ImageUpdater", UPDATER_GROUP)):
        return "v1"
    if (container.has_flag("applications-api") or container.env("APPLICATIONS_API")
            or container.env("ARGOCD_SERVER") or any(map(_lists_images, snap.applications()))):
        return "v0"
    return "unknown"


def _lists_images(app: Obj) -> bool:
    """Whether the Application has the Image Updater's image-list annotation (read without decoding the rest)."""
    return IMAGE_LIST in mapping(app.at("metadata", "annotations"))


def _updater_v0(snap: Snapshot, container: Container, version: tuple[int, int, int] | None, ns: str,
                generation: str) -> UpdaterConfig:
    api = resolve(snap, container, "applications-api", "APPLICATIONS_API", "kubernetes")
    server = resolve(snap, container, "argocd-server-addr", "ARGOCD_SERVER", f"argocd-server.{ns}")
    insecure = resolve(snap, container, "argocd-insecure", "ARGOCD_INSECURE", "false", boolean=True)
    plaintext = resolve(snap, container, "argocd-plaintext", "ARGOCD_PLAINTEXT", "false", boolean=True)
    grpc_web = resolve(snap, container, "argocd-grpc-web", "ARGOCD_GRPC_WEB", "false", boolean=True)
    token = resolve(snap, container, None, "ARGOCD_TOKEN", None, secret=True)
    token_flag = container.has_flag("argocd-auth-token")
    argocd_ns = (container.flag("argocd-namespace") or (ns, ""))[0] or ns
    app_ns_flag = container.flag("application-namespace")
    obj = container.obj
    if app_ns_flag is not None and (version is None or version >= (0, 17, 0)):
        scope: tuple[str, ...] | None = (app_ns_flag[0],) if app_ns_flag[0] else None
        scope_source = f"flag --application-namespace={app_ns_flag[0]}"
        scope_evidence: tuple[Evidence, ...] = (evidence(obj, f"{container.path}.args", app_ns_flag[1]),)
    elif version is not None and version < (0, 15, 0):
        scope, scope_source = (argocd_ns,), "Argo CD's namespace (v0.14 and earlier list Applications there only)"
        scope_evidence = ()
    elif version is not None:
        scope, scope_source = None, "every namespace (v0.15 and later, no --application-namespace)"
        scope_evidence = ()
    else:
        scope = (argocd_ns,)
        scope_source = ("Argo CD's namespace up to v0.14, every namespace from v0.15 (version unknown; the narrower "
                        "is assumed)")
        scope_evidence = ()
    apps = [a for a in snap.applications() if _lists_images(a)
            and (scope is None or a.namespace in scope)]
    write_backs = tuple(_v0_write_back(app) for app in apps)
    return UpdaterConfig(
        generation=generation, version=version, namespace=ns, api=api, server=server, insecure=insecure,
        plaintext=plaintext, grpc_web=grpc_web, token=token, token_flag=token_flag, scope=scope,
        scope_source=scope_source, scope_evidence=scope_evidence,
        targets=tuple(sorted({a.namespace for a in apps})), managed=tuple(apps), write_backs=write_backs,
    )


def parse_write_back(method: str, namespace: str) -> tuple[str, str, tuple[str, str] | None]:
    """(method, credentials, Secret (namespace, name)) of a write-back method string (`argocd`, `git`,
    `git:repocreds`, `git:secret:<ns>/<name>`, from v1.3 `git:secret:<name>`), as the updater parses it."""
    method = method.strip()
    if not method or method == "argocd":
        return "argocd", "", None
    credentials = "repocreds"
    if ":" in method[1:]:
        method, credentials = method.split(":", 1)
    secret = None
    if credentials.startswith("secret:"):
        ref = credentials[len("secret:"):]
        secret = (ref.split("/", 1)[0], ref.split("/", 1)[1]) if "/" in ref else (namespace, ref)
    return method, credentials, secret


def _v0_write_back(app: Obj) -> WriteBack:
    raw = app.annotations.get(WRITE_BACK_METHOD, "argocd")
    method, credentials, secret = parse_write_back(str(raw), app.namespace)
    path = f'.metadata.annotations["{WRITE_BACK_METHOD}"]' if WRITE_BACK_METHOD in app.annotations else \
        f'.metadata.annotations["{IMAGE_LIST}"]'
    return WriteBack(app, path, f"Application {app.namespace}/{app.name}", method, credentials, secret, str(raw))


def _updater_v1(snap: Snapshot, container: Container, version: tuple[int, int, int] | None,
                ns: str) -> UpdaterConfig:
    obj = container.obj
    watch = resolve(snap, container, "watch-namespaces", "IMAGE_UPDATER_WATCH_NAMESPACES", None)
    scope: tuple[str, ...] | None
    if watch.explicit or (version is not None and version >= (1, 2, 0)):
        value = (watch.value or "").strip()
        scope = None if value == "*" else tuple(n.strip() for n in value.split(",") if n.strip()) or (ns,)
        scope_source = f"--watch-namespaces {value!r} ({watch.source})" if watch.explicit else \
            "its own namespace (v1.2 and later, no --watch-namespaces)"
        scope_evidence = watch.evidence
    elif version is not None:
        scope, scope_source, scope_evidence = None, "every namespace (v1.0 and v1.1 watch the whole cluster)", ()
    else:
        scope = (ns,)
        scope_source = ("every namespace in v1.0 and v1.1, its own namespace from v1.2 (version unknown; the narrower "
                        "is assumed)")
        scope_evidence = ()
    resources = [r for r in snap.of_kind("ImageUpdater", UPDATER_GROUP) if scope is None or r.namespace in scope]
    write_backs = []
    for resource in resources:
        spec = resource.spec
        default = mapping(spec.get("writeBackConfig"))
        target_ns = str(spec.get("namespace") or resource.namespace)
        write_backs.append(_v1_write_back(resource, ".spec.writeBackConfig", default, target_ns, "spec default"))
        for i, ref in enumerate(as_list(spec.get("applicationRefs"))):
            ref = mapping(ref)
            own = mapping(ref.get("writeBackConfig"))
            if own:
                pattern = str(ref.get("namePattern") or "*")
                write_backs.append(_v1_write_back(resource, f".spec.applicationRefs[{i}].writeBackConfig", own,
                                                  target_ns, f"namePattern {pattern}"))
    none = Setting("kubernetes", "v1.0 and later manage Applications through the Kubernetes API only",
                   (evidence(obj, container.path, "v1: ImageUpdater resources, no applications_api"),), explicit=False)
    return UpdaterConfig(
        generation="v1", version=version, namespace=ns, api=none, server=None, insecure=None, plaintext=None,
        grpc_web=None, token=None, token_flag=False, scope=scope, scope_source=scope_source,
        scope_evidence=scope_evidence,
        targets=tuple(sorted({str(r.spec.get("namespace") or r.namespace) for r in resources})),
        managed=tuple(resources), write_backs=tuple(write_backs),
    )


def _v1_write_back(resource: Obj, path: str, config: Mapping[str, Any], namespace: str, which: str) -> WriteBack:
    written = str(config.get("method") or "argocd")
    method, credentials, secret = parse_write_back(written, namespace)
    return WriteBack(resource, path, f"ImageUpdater {resource.namespace}/{resource.name} ({which}, Applications in "
                                     f"{namespace})", method, credentials, secret, written)


def _image_updater(build: _Build) -> None:
    config = updater_config(build.snap, build.comp)
    if config is None:
        return
    account = service_account(build.comp)
    ns = build.namespace
    settings = build.settings
    settings["generation"] = config.generation
    settings["applications_api"] = config.api.value or "kubernetes"
    scope = "every namespace" if config.scope is None else ", ".join(config.scope)
    settings["applications scope"] = scope
    managed = ", ".join(f"{o.namespace}/{o.name}" for o in config.managed[:10]) + (
        f" and {len(config.managed) - 10} more" if len(config.managed) > 10 else "")
    if config.generation == "v1":
        verbs = "get, list, watch, update"
        what = (f"ImageUpdater resources {managed}" if managed else "no ImageUpdater resource in the input")
        purpose = (f"watches Applications and ImageUpdater resources in {config.scope_source}; {what}; updates "
                   "Applications (write-back argocd)")
    else:
        verbs = "list, update" if config.version is not None and config.version >= (0, 15, 0) else "get, list, update"
        what = (f"annotated Applications {managed}" if managed else
                f"no Application with the {IMAGE_LIST} annotation in the input")
        purpose = f"lists Applications in {config.scope_source}; {what}"
    found = [*config.api.evidence, *config.scope_evidence]
    kube_auth = f"ServiceAccount {ns}/{account}"
    if config.kubernetes_mode:
        api = f"Kubernetes API (argoproj.io/v1alpha1 applications: {verbs}" + (
            "; argocd-image-updater.argoproj.io/v1alpha1 imageupdaters" if config.generation == "v1" else "") + ")"
        build.add("kubernetes-api", api, kube_auth, purpose + "; also reads Secrets and ConfigMaps (pull secrets, "
                  "git credentials) and creates Events", found)
    else:
        assert config.server is not None and config.insecure is not None and config.plaintext is not None
        address = config.server.value or f"argocd-server.{ns}"
        settings["argocd.server_addr"] = address
        settings["argocd.insecure"] = config.insecure.value or "false"
        settings["argocd.plaintext"] = config.plaintext.value or "false"
        mode = ("plaintext" if _truthy(config.plaintext.value) else
                "TLS, certificate not verified" if _truthy(config.insecure.value) else "TLS")
        web = " over gRPC-web" if config.grpc_web is not None and _truthy(config.grpc_web.value) else ""
        token = config.token
        if config.token_flag:
            auth = "Argo CD API token given inline with --argocd-auth-token (value not shown)"
        elif token is not None and token.source.startswith("Secret "):
            auth = f"Argo CD API token from {token.source}" + _presence(token)
        elif token is not None and token.explicit:
            auth = f"Argo CD API token ({token.source}, value not shown)"
        else:
            auth = "no Argo CD API token configured (ARGOCD_TOKEN unset)"
        token_evidence = token.evidence if token is not None else ()
        build.add(_host(address), f"Argo CD API (gRPC{web}) {address} ({mode})", auth,
                  purpose.replace("lists Applications", "lists and updates Applications through the Argo CD API"),
                  [*found, *config.server.evidence, *config.insecure.evidence, *config.plaintext.evidence,
                   *token_evidence])
        build.add("kubernetes-api", "Kubernetes API (HTTPS, in-cluster)", kube_auth,
                  "reads Secrets and ConfigMaps (pull secrets, git credentials), creates Events")
    methods: dict[tuple[str, str], list[WriteBack]] = {}
    for write_back in config.write_backs:
        methods.setdefault((write_back.method, write_back.credentials), []).append(write_back)
    settings["write-back"] = ", ".join(sorted({m if not c else f"{m}:{c}" for m, c in methods})) or "none"
    for (method, credentials), items in sorted(methods.items()):
        if method != "git":
            continue
        names = ", ".join(w.applications for w in items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5
                                                                 else "")
        secrets = sorted({f"{s[0]}/{s[1]}" for w in items if (s := w.secret) is not None})
        auth = (f"git credentials from Secret {', '.join(secrets)} (name only)" if secrets else
                "Argo CD repository credentials (repocreds)")
        build.add("git", "Git (commit and push to the Applications' source repositories)", auth,
                  f"write-back {method}:{credentials} for {names}",
                  [evidence(w.source, w.path, f"write-back method: {w.written}") for w in items[:5]])
