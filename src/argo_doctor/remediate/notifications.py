"""The Argo CD Notifications wiring that calls `argo-doctor serve`: what `argo-doctor notifications-config` prints.

Three YAML documents, each a merge patch for an object of the Argo CD namespace (or an Application):

1. `argocd-notifications-cm` data entries:
   - `service.webhook.<service>`: `url` is the service's *base* URL. notifications-engine appends the
     template's `path` to it (`strings.TrimRight(url, "/") + "/" + strings.TrimLeft(path, "/")`,
     `pkg/services/webhook.go`, `applyOverridesFrom`), so a URL given with the endpoint path is split into
     base and path here. The `Authorization` header is `Bearer $<secret_key>`: when the ConfigMap is parsed,
     every string of a service's YAML has each `$key` (regexp `[$][\\w-]+`) replaced by that key of
     `argocd-notifications-secret` (`pkg/api/config.go`, `replaceServiceConfigSecrets`). Headers are
     static and the body is not signed, so the service authenticates the bearer token.
   - `template.<template>`: `webhook.<service>` with `method: POST` (the webhook service sends GET unless
     the template sets a method), `path` and `body`. The body is a Go text/template executed with the
     variable `app`, the Application as unstructured JSON (argo-cd `util/notification/settings/settings.go`).
     The engine sets no `missingkey` option, so an absent field renders as `<no value>`: a multi-source
     Application has no `status.sync.revision`, an Application whose destination names no namespace has no
     `spec.destination.namespace`. The service must treat `<no value>` as absent. The values are Kubernetes
     names, the health enum and a revision (a git SHA or a chart version), none of which needs JSON escaping.
   - `trigger.<trigger>`: `when: app.status.health.status == 'Degraded'`, and deliberately **no `oncePer`**.
     notifications-engine records each sent condition in the Application's `notified.notifications.argoproj.io`
     annotation (`pkg/controller/state.go`). Without `oncePer` the record is deleted as soon as the condition
     is false again, so the trigger fires once per Degraded episode: Degraded (send) -> Progressing/Healthy
     (forgotten) -> Degraded again (send again). With `oncePer` the record is never deleted when the condition
     turns false (`SetAlreadyNotified` returns early when `OncePer != ""`): the catalog's `on-health-degraded`
     (`oncePer: app.status.operationState?.syncResult?.revision`, argo-cd
     `notifications_catalog/triggers/on-health-degraded.yaml`) therefore fires once per synced revision, and
     a Rollout that gets stuck again at the same revision (as a Rollout stuck Degraded with ready pods does) would never
     be notified again. A failed delivery (any error, non-2xx included) clears the record, so it is retried on
     the next reconciliation of the Application: the service answers 200 for every decided case.
     One limit remains: while the Application stays Degraded (for example because another of its Rollouts is
     Degraded for a real reason), a second Rollout getting stuck sends nothing new.
2. `argocd-notifications-secret`: the key `<secret_key>` with a placeholder, to be replaced by the same
   token as the service's `--token-file`.
3. The subscription annotation for an Application:
   `notifications.argoproj.io/subscribe.<trigger>.<service>: ""` (`pkg/subscriptions/annotations.go`: the
   part after `subscribe.` is split on dots into trigger and service, hence no dots in these names).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

import yaml

from argo_doctor.errors import ConfigError

ENDPOINT_PATH = "/v1/notifications/argocd"
NOTIFICATIONS_CM = "argocd-notifications-cm"
NOTIFICATIONS_SECRET = "argocd-notifications-secret"
ANNOTATION_PREFIX = "notifications.argoproj.io"
TOKEN_PLACEHOLDER = "REPLACE-WITH-THE-TOKEN-OF-ARGO-DOCTOR-SERVE"
WHEN_DEGRADED = "app.status.health.status == 'Degraded'"
URL_HELP = (
    "The base URL of `argo-doctor serve` as the Argo CD notifications controller reaches it, for example "
    f"http://argo-doctor.argo-doctor.svc:8080 (a path prefix is kept, e.g. https://gw.example.com/argo-doctor). "
    f"The endpoint path {ENDPOINT_PATH} is added by the template; a URL that already ends with it is accepted."
)

# The body the service reads: the Application's name and namespace, its project, its destination namespace,
# its health and its synced revision. Go text/template over the unstructured Application.
BODY_FIELDS: tuple[tuple[str, str], ...] = (
    ("app", ".app.metadata.name"),
    ("appNamespace", ".app.metadata.namespace"),
    ("project", ".app.spec.project"),
    ("namespace", ".app.spec.destination.namespace"),
    ("health", ".app.status.health.status"),
    ("revision", ".app.status.sync.revision"),
)

# A name usable in a ConfigMap key segment, in the subscription annotation (split on dots) and, for the secret
# key, matched whole by notifications-engine's `[$][\w-]+` and valid as a Secret data key.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?")
# What a URL may contain here: no spaces, quotes, `$` (it would be read as a secret reference), `#`, `?`.
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/%@\[\]-]+")


def split_url(url: str) -> tuple[str, str]:
    """(base URL for the webhook service, path for the template). ConfigError for what Notifications cannot use."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--url {url!r}: expected an http:// or https:// URL with a host. {URL_HELP}")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise ConfigError(f"--url {url!r}: a query or fragment cannot be used; the template's path is appended "
                          "to the URL")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(f"--url {url!r}: no credentials in the URL; the bearer token goes in "
                          f"{NOTIFICATIONS_SECRET}")
    if not _URL_CHARS.fullmatch(text):
        raise ConfigError(f"--url {url!r}: unexpected characters (spaces, quotes and `$` are not allowed)")
    try:
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise ConfigError(f"--url {url!r}: the port is not a number between 0 and 65535") from None
    base = text.rstrip("/")
    if base.endswith(ENDPOINT_PATH):
        base = base[: -len(ENDPOINT_PATH)].rstrip("/")
    if not urlsplit(base).hostname:
        raise ConfigError(f"--url {url!r}: no host left once the endpoint path is removed")
    return base, ENDPOINT_PATH


def body_template() -> str:
    """The JSON body as a Go template; each value is a field path of the Application."""
    lines = [f'  "{key}": "{{{{{path}}}}}"' for key, path in BODY_FIELDS]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def subscription_annotation(trigger: str = "on-rollout-degraded", service: str = "argo-doctor") -> str:
    """The annotation key subscribing an Application to `trigger`, delivered to the webhook `service`."""
    _check_name("trigger", trigger)
    _check_name("service", service)
    key = f"{ANNOTATION_PREFIX}/subscribe.{trigger}.{service}"
    if len(key.split("/", 1)[1]) > 63:
        raise ConfigError(f"the annotation {key!r} is too long: the part after the slash is limited to 63 "
                          "characters; choose shorter trigger or service names")
    return key


def notifications_config(
    url: str,
    *,
    service: str = "argo-doctor",
    secret_key: str = "argo-doctor-token",
    trigger: str = "on-rollout-degraded",
    template: str = "argo-doctor-rollout-degraded",
    namespace: str = "argocd",
) -> str:
    """The Notifications configuration as three YAML merge patches with comments (see the module docstring)."""
    for what, value in (("service", service), ("secret key", secret_key), ("trigger", trigger),
                        ("template", template)):
        _check_name(what, value)
    _check_name("namespace", namespace)
    base, path = split_url(url)
    annotation = subscription_annotation(trigger, service)

    service_yaml = (
        f"url: {base}\n"
        "headers:\n"
        "- name: Authorization\n"
        f"  value: Bearer ${secret_key}\n"
        "- name: Content-Type\n"
        "  value: application/json\n"
    )
    body = body_template()
    template_yaml = (
        "webhook:\n"
        f"  {service}:\n"
        "    method: POST\n"
        f"    path: {path}\n"
        "    body: |\n" + "".join(f"      {line}\n" for line in body.splitlines())
    )
    trigger_yaml = (
        f"- when: {WHEN_DEGRADED}\n"
        "  description: Application is Degraded; argo-doctor restarts only its stuck Rollouts\n"
        f"  send: [{template}]\n"
    )
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NOTIFICATIONS_CM, "namespace": namespace},
        "data": {
            f"service.webhook.{service}": service_yaml,
            f"template.{template}": template_yaml,
            f"trigger.{trigger}": trigger_yaml,
        },
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": NOTIFICATIONS_SECRET, "namespace": namespace},
        "stringData": {secret_key: TOKEN_PLACEHOLDER},
    }
    application = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"annotations": {annotation: ""}},
    }
    out = [
        "# Argo CD Notifications wiring for `argo-doctor serve` (see docs/remediation.md).",
        f"# 1. Merge these entries into {NOTIFICATIONS_CM} (other entries are kept):",
        f"#    kubectl -n {namespace} patch configmap {NOTIFICATIONS_CM} --type merge --patch-file <this document>",
        "#    If Argo CD is installed with Helm or managed by Argo CD, put them in that source instead.",
        "#    The trigger has no oncePer on purpose: it fires again on every new Degraded episode.",
        _dump(config_map),
        "---",
        f"# 2. The bearer token, read by the header above as ${secret_key}. Replace the placeholder with the",
        "#    token in the service's --token-file (never commit a real token):",
        f"#    kubectl -n {namespace} patch secret {NOTIFICATIONS_SECRET} --type merge \\",
        f'#      -p "{{\\"stringData\\":{{\\"{secret_key}\\":\\"$TOKEN\\"}}}}"',
        _dump(secret),
        "---",
        "# 3. Subscribe each Application whose Rollouts argo-doctor may restart (the policy's allow-list decides):",
        f"#    kubectl -n {namespace} annotate application <app> {annotation}=''",
        _dump(application),
    ]
    return "\n".join(out) + "\n"


def _check_name(what: str, value: str) -> None:
    if not _NAME.fullmatch(value):
        raise ConfigError(f"{what} {value!r}: use letters, digits, '-' and '_' only (no dots), starting and "
                          "ending with a letter or digit")


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, the way argocd-notifications-cm entries are usually written."""


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _literal)


def _dump(doc: Mapping[str, object]) -> str:
    return yaml.dump(doc, Dumper=_LiteralDumper, sort_keys=False, default_flow_style=False, width=1000).rstrip("\n")
