"""`notifications-config` output, read back the way Argo CD Notifications reads it.

The parsing below follows notifications-engine: `pkg/api/config.go` (ParseConfig, replaceServiceConfigSecrets),
`pkg/services/webhook.go` (WebhookOptions, WebhookNotification, applyOverridesFrom), `pkg/triggers/service.go`
(Condition), `pkg/controller/state.go` (the notified state) and `pkg/subscriptions/annotations.go`; the template
variables follow argo-cd `util/notification/settings/settings.go` (`app` is the unstructured Application).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from argo_doctor.errors import ConfigError
from argo_doctor.remediate.notifications import (
    ENDPOINT_PATH,
    TOKEN_PLACEHOLDER,
    notifications_config,
    split_url,
    subscription_annotation,
)

TOKEN = "s3cr3t-token-0123456789abcdef0123456789abcdef"
URL = "http://argo-doctor.argo-doctor.svc:8080"

# The fields WebhookOptions and its embedded TransportOptions declare; anything else is silently ignored by Go.
WEBHOOK_OPTION_FIELDS = {"url", "headers", "basicAuth", "retryWaitMin", "retryWaitMax", "retryMax",
                         "insecureSkipVerify", "maxIdleConns", "maxIdleConnsPerHost", "maxConnsPerHost",
                         "idleConnTimeout"}
CONDITION_FIELDS = {"oncePer", "when", "description", "send"}

APPLICATION: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {
        "name": "shop-web",
        "namespace": "argocd",
        "annotations": {"notifications.argoproj.io/subscribe.on-rollout-degraded.argo-doctor": ""},
        "resourceVersion": "918273",
    },
    "spec": {
        "project": "shop",
        "source": {"repoURL": "https://github.com/example/shop.git", "path": "web", "targetRevision": "main"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "apps"},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
    },
    "status": {
        "health": {"status": "Degraded", "lastTransitionTime": "2026-03-02T07:14:03Z"},
        "sync": {"status": "Synced", "revision": "7d9c0a4f2b1e8c3d5a6f7e8d9c0b1a2f3e4d5c6b"},
        "resources": [{"group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout", "namespace": "apps",
                       "name": "web", "status": "Synced",
                       "health": {"status": "Degraded",
                                  "message": 'ProgressDeadlineExceeded: ReplicaSet "web-6d4b9" has timed out '
                                             "progressing."}}],
        "operationState": {"phase": "Succeeded",
                           "syncResult": {"revision": "7d9c0a4f2b1e8c3d5a6f7e8d9c0b1a2f3e4d5c6b"}},
    },
}


# --- how notifications-engine reads the ConfigMap ---------------------------------------------------------

def parse_config(data: dict[str, str], secret: dict[str, bytes]) -> dict[str, Any]:
    """ParseConfig: services (with `$key` replaced in every string), templates and triggers by name."""
    services: dict[str, tuple[str, dict[str, Any]]] = {}
    templates: dict[str, dict[str, Any]] = {}
    triggers: dict[str, list[dict[str, Any]]] = {}
    for key, value in data.items():
        parts = key.split(".")
        if key.startswith("template."):
            templates[".".join(parts[1:])] = yaml.safe_load(value)
        elif key.startswith("service."):
            assert len(parts) in (2, 3), f"invalid service key {key!r}"
            kind, name = (parts[1], parts[2]) if len(parts) == 3 else (parts[1], parts[1])
            services[name] = (kind, replace_secrets(yaml.safe_load(value), secret))
        elif key.startswith("trigger."):
            triggers[".".join(parts[1:])] = yaml.safe_load(value)
    return {"services": services, "templates": templates, "triggers": triggers}


KEY_PATTERN = re.compile(r"[$][\w-]+", re.ASCII)  # Go RE2 `\w` is ASCII


def replace_secrets(node: Any, secret: dict[str, bytes]) -> Any:
    """replaceServiceConfigSecrets: each `$key` in a string scalar becomes that key of the Secret, if present."""
    if isinstance(node, dict):
        return {k: replace_secrets(v, secret) for k, v in node.items()}
    if isinstance(node, list):
        return [replace_secrets(v, secret) for v in node]
    if isinstance(node, str):
        return KEY_PATTERN.sub(lambda m: secret[m.group()[1:]].decode() if m.group()[1:] in secret
                               else m.group(), node)
    return node


def webhook_options(opts: dict[str, Any]) -> dict[str, Any]:
    """WebhookOptions, refusing fields Go would drop silently (a typo would lose the header or the URL)."""
    unknown = set(opts) - WEBHOOK_OPTION_FIELDS
    assert not unknown, f"fields WebhookOptions does not have: {unknown}"
    headers = opts.get("headers") or []
    assert isinstance(headers, list)
    for header in headers:
        assert set(header) == {"name", "value"}, header
    return {"url": opts["url"], "headers": headers, "basicAuth": opts.get("basicAuth"),
            "insecureSkipVerify": bool(opts.get("insecureSkipVerify", False))}


GO_ACTION = re.compile(r"\{\{(.*?)\}\}", re.S)
FIELD_PATH = re.compile(r"(\.[A-Za-z_][A-Za-z0-9_]*)+")


def render_go_template(text: str, variables: dict[str, Any]) -> str:
    """text/template for plain field paths only (`{{.app.metadata.name}}`); anything else fails the test.

    Like Go without a `missingkey` option, an absent key renders `<no value>`; a null on the way is an error."""

    def action(match: re.Match[str]) -> str:
        inner = match.group(1)
        if not FIELD_PATH.fullmatch(inner):
            raise AssertionError(f"unsupported template action {{{{{inner}}}}}: only {{{{.a.b.c}}}} paths")
        value: Any = variables
        for name in inner.split(".")[1:]:
            if value is None:
                raise AssertionError(f"nil pointer evaluating {inner}")
            if not isinstance(value, dict) or name not in value:
                return "<no value>"
            value = value[name]
        if isinstance(value, dict | list):
            raise AssertionError(f"{inner} is not a scalar")
        return "<no value>" if value is None else str(value)

    return GO_ACTION.sub(action, text)


def webhook_request(config: dict[str, Any], trigger: str, service: str, app: dict[str, Any]) -> dict[str, Any]:
    """What webhookService.Send sends for `app` through `trigger` to `service`."""
    kind, opts = config["services"][service]
    assert kind == "webhook"
    options = webhook_options(opts)
    conditions = config["triggers"][trigger]
    assert len(conditions) == 1
    (template_name,) = conditions[0]["send"]
    template = config["templates"][template_name]
    assert set(template) <= {"message", "webhook"}, template
    webhook = template["webhook"][service]
    assert set(webhook) <= {"method", "path", "body"}, webhook
    variables = {"app": app, "context": {}}
    path = render_go_template(webhook.get("path", ""), variables)
    url = options["url"]
    if path:
        url = url.rstrip("/") + "/" + path.lstrip("/")
    return {
        "method": webhook.get("method") or "GET",
        "url": url,
        "headers": {h["name"]: h["value"] for h in options["headers"]},
        "basicAuth": options["basicAuth"],
        "body": render_go_template(webhook.get("body", ""), variables),
    }


# --- a tiny expr-lang evaluator: `a.b.c == 'X'` --------------------------------------------------------------

WHEN = re.compile(r"\s*([A-Za-z_][\w.]*)\s*==\s*'([^']*)'\s*")


def evaluate_when(expression: str, env: dict[str, Any]) -> bool:
    match = WHEN.fullmatch(expression)
    assert match, f"unexpected trigger expression {expression!r}"
    value: Any = env
    for name in match.group(1).split("."):
        value = value.get(name) if isinstance(value, dict) else None
    return bool(value == match.group(2))


# --- helpers ----------------------------------------------------------------------------------------------------

def documents(text: str) -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs) == 3, [d.get("kind") for d in docs]
    return by_kind


def parsed(text: str, secret: dict[str, bytes] | None = None) -> dict[str, Any]:
    docs = documents(text)
    cm = docs["ConfigMap"]
    assert cm["metadata"] == {"name": "argocd-notifications-cm", "namespace": "argocd"}
    assert all(isinstance(v, str) for v in cm["data"].values()), "ConfigMap data values are strings"
    return parse_config(cm["data"], secret if secret is not None else {"argo-doctor-token": TOKEN.encode()})


# --- the tests ----------------------------------------------------------------------------------------------------

def test_configmap_has_exactly_the_three_entries() -> None:
    data = documents(notifications_config(URL))["ConfigMap"]["data"]
    assert set(data) == {"service.webhook.argo-doctor", "template.argo-doctor-rollout-degraded",
                         "trigger.on-rollout-degraded"}


def test_request_sent_for_a_degraded_application() -> None:
    config = parsed(notifications_config(URL))
    request = webhook_request(config, "on-rollout-degraded", "argo-doctor", APPLICATION)
    assert request["method"] == "POST"
    assert request["url"] == f"{URL}{ENDPOINT_PATH}"
    assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert request["basicAuth"] is None
    body = json.loads(request["body"])
    assert body == {
        "app": "shop-web",
        "appNamespace": "argocd",
        "project": "shop",
        "namespace": "apps",
        "health": "Degraded",
        "revision": "7d9c0a4f2b1e8c3d5a6f7e8d9c0b1a2f3e4d5c6b",
    }


def test_header_references_the_secret_key() -> None:
    config = parsed(notifications_config(URL, secret_key="my-token"), secret={"my-token": b"abc"})
    _, opts = config["services"]["argo-doctor"]
    assert {"name": "Authorization", "value": "Bearer abc"} in opts["headers"]
    # Without the key in the Secret, Notifications sends the reference verbatim: the service would answer 401.
    config = parsed(notifications_config(URL), secret={})
    _, opts = config["services"]["argo-doctor"]
    assert {"name": "Authorization", "value": "Bearer $argo-doctor-token"} in opts["headers"]


def test_token_never_in_the_configmap_and_secret_is_a_placeholder() -> None:
    docs = documents(notifications_config(URL))
    assert "argo-doctor-token" in docs["ConfigMap"]["data"]["service.webhook.argo-doctor"]
    secret = docs["Secret"]
    assert secret["metadata"] == {"name": "argocd-notifications-secret", "namespace": "argocd"}
    assert secret["stringData"] == {"argo-doctor-token": TOKEN_PLACEHOLDER}
    assert "data" not in secret


def test_body_stays_json_when_fields_are_absent() -> None:
    app = json.loads(json.dumps(APPLICATION))
    del app["status"]["sync"]["revision"]  # a multi-source Application has status.sync.revisions instead
    app["status"]["sync"]["revisions"] = ["abc", "def"]
    del app["spec"]["destination"]["namespace"]
    request = webhook_request(parsed(notifications_config(URL)), "on-rollout-degraded", "argo-doctor", app)
    body = json.loads(request["body"])
    assert body["revision"] == "<no value>"
    assert body["namespace"] == "<no value>"
    assert body["app"] == "shop-web"


def test_trigger_fires_on_degraded_only_and_has_no_once_per() -> None:
    config = parsed(notifications_config(URL))
    (condition,) = config["triggers"]["on-rollout-degraded"]
    assert set(condition) <= CONDITION_FIELDS
    assert "oncePer" not in condition
    assert "app.status.health.status" in condition["when"]
    assert condition["send"] == ["argo-doctor-rollout-degraded"]
    assert "argo-doctor-rollout-degraded" in config["templates"]
    for health, fires in (("Degraded", True), ("Healthy", False), ("Progressing", False), ("Missing", False)):
        app = {**APPLICATION, "status": {**APPLICATION["status"], "health": {"status": health}}}
        assert evaluate_when(condition["when"], {"app": app}) is fires, health


def notified_sequence(condition: dict[str, Any], healths: list[str], revision: str = "r1") -> list[bool]:
    """pkg/controller/state.go: which evaluations send, for a sequence of Application health states."""
    state: dict[str, int] = {}
    sent = []
    for health in healths:
        app = {"status": {"health": {"status": health},
                          "operationState": {"syncResult": {"revision": revision}}}}
        triggered = evaluate_when(condition["when"], {"app": app})
        once_per = ""
        if triggered and condition.get("oncePer"):
            once_per = str(app["status"]["operationState"]["syncResult"]["revision"])
        key = (once_per + ":" if once_per else "") + "trigger:[0].hash:argo-doctor:"
        if triggered:
            sent.append(key not in state)
            state[key] = 1
        else:
            sent.append(False)
            if not once_per:
                state.pop(key, None)
    return sent


def test_trigger_fires_again_on_each_degraded_episode() -> None:
    (condition,) = parsed(notifications_config(URL))["triggers"]["on-rollout-degraded"]
    episodes = ["Degraded", "Degraded", "Progressing", "Healthy", "Degraded", "Healthy", "Degraded"]
    assert notified_sequence(condition, episodes) == [True, False, False, False, True, False, True]
    # The catalog's on-health-degraded (oncePer the synced revision) would have sent only the first one.
    catalog = {"when": condition["when"], "oncePer": "app.status.operationState?.syncResult?.revision"}
    assert notified_sequence(catalog, episodes) == [True, False, False, False, False, False, False]


def test_subscription_annotation_matches_the_configured_names() -> None:
    text = notifications_config(URL)
    annotations = documents(text)["Application"]["metadata"]["annotations"]
    assert annotations == {"notifications.argoproj.io/subscribe.on-rollout-degraded.argo-doctor": ""}
    (key,) = annotations
    # pkg/subscriptions/annotations.go: the rest after `subscribe.` split on dots gives trigger and service.
    trigger, service = key[len("notifications.argoproj.io/subscribe."):].split(".")
    config = parsed(text)
    assert trigger in config["triggers"]
    assert service in config["services"]
    assert key == subscription_annotation()


def test_custom_names_are_wired_consistently() -> None:
    text = notifications_config(URL, service="doctor", trigger="on-stuck", template="doctor-call")
    config = parsed(text)
    (key,) = documents(text)["Application"]["metadata"]["annotations"]
    assert key == "notifications.argoproj.io/subscribe.on-stuck.doctor"
    request = webhook_request(config, "on-stuck", "doctor", APPLICATION)
    assert request["method"] == "POST"
    assert json.loads(request["body"])["app"] == "shop-web"


@pytest.mark.parametrize(("url", "base"), [
    ("http://argo-doctor.argo-doctor.svc:8080", "http://argo-doctor.argo-doctor.svc:8080"),
    ("http://argo-doctor.argo-doctor.svc:8080/", "http://argo-doctor.argo-doctor.svc:8080"),
    ("http://argo-doctor.argo-doctor.svc:8080/v1/notifications/argocd",
     "http://argo-doctor.argo-doctor.svc:8080"),
    ("https://gw.example.com/argo-doctor/v1/notifications/argocd/", "https://gw.example.com/argo-doctor"),
    ("https://gw.example.com/argo-doctor", "https://gw.example.com/argo-doctor"),
    ("http://[fd00::1]:8080", "http://[fd00::1]:8080"),
])
def test_url_with_or_without_the_endpoint_path(url: str, base: str) -> None:
    assert split_url(url) == (base, ENDPOINT_PATH)
    request = webhook_request(parsed(notifications_config(url)), "on-rollout-degraded", "argo-doctor", APPLICATION)
    assert request["url"] == base + ENDPOINT_PATH


@pytest.mark.parametrize("url", [
    "argo-doctor:8080",
    "ftp://argo-doctor/",
    "http://",
    "http://argo-doctor:8080/?x=1",
    "http://argo-doctor:8080/#frag",
    "http://user:pw@argo-doctor:8080",
    "http://argo-doctor:8080/$path",
    "http://argo doctor:8080",
    "http://argo-doctor:99999",
])
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(ConfigError):
        notifications_config(url)


@pytest.mark.parametrize("kwargs", [
    {"service": "argo.doctor"},
    {"trigger": "on.degraded"},
    {"secret_key": "token with space"},
    {"secret_key": "tok$en"},
    {"template": ""},
    {"trigger": "t" * 60},
])
def test_bad_names_are_refused(kwargs: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        notifications_config(URL, **kwargs)
