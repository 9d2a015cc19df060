"""No secret planted anywhere in the input reaches the output of any command, in any format; no
terminal control sequence from the input reaches a human-oriented format.

A bundle is generated with one distinct canary per input place (Secret data and stringData,
registry credentials, a cluster Secret's `config`, private keys, ConfigMaps, a Notifications Slack
webhook, annotations, Application helm values and parameters, repository URLs, env, Events, Workflow
and Pod status messages, audit request and response objects, logs in `kubectl logs --timestamps`,
logrus text and logrus JSON form, in colour, URL-encoded, in a DSN or a command line), with failing
workloads so that findings, evidence, the timeline and the map cite those places. Every command runs
in every format; neither a canary nor its base64 or URL-encoded form may appear in stdout or stderr.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.report import REPORTERS

PLACES = (
    "secret-data", "secret-stringdata", "docker-password", "repo-password", "tls-key-line",
    "configmap", "dex-client-secret", "annotation", "helm-values", "helm-parameter", "repo-url",
    "env", "event-cited", "event-uncited", "workflow-message", "workflow-node", "pod-terminated",
    "pod-status", "sync-result", "audit-request", "audit-response", "audit-uri", "log-timestamps",
    "logrus-escaped-json", "logrus-json-authorization", "url-password-slash", "client-secret",
    "pem-log-line", "pem-log-last", "aws-secret", "manager", "chart-values", "values-file", "repo-chart-values",
    "ansi-secret", "ansi-password", "cluster-bearer", "url-encoded", "dsn", "cli-flag", "slack-url",
    "cluster-jwt", "repo-creds-url", "oidc-client-secret",
)


def _canary(index: int, place: str) -> str:
    """A distinct, random-looking value; its length a multiple of 3, so that its base64 is also what
    appears inside the base64 of a longer text that holds it at an aligned offset."""
    tag = re.sub(r"[^a-z]", "", place)[:8]
    text = f"Cn{index:02d}Zq7{tag}"
    return text + "x" * (-len(text) % 3)


CANARY = {place: _canary(i, place) for i, place in enumerate(PLACES)}
CANARY["client-secret"] = "cnaryclientsecretonlyletters"[:27]  # `client_secret` values of any alphabet
CANARY["aws-secret"] = "Cn29wJalrXUtnFEMIK7MDENGbPxRfiCYCANARY0K"  # 40 characters, as AWS's
CANARY["tls-key-line"] = base64.b64encode(bytes(range(7, 55))).decode()  # a 64-character PEM body line
CANARY["pem-log-line"] = base64.b64encode(bytes(range(100, 148))).decode()
CANARY["pem-log-last"] = base64.b64encode(bytes(range(200, 218))).decode()  # a last, shorter body line
CANARY["url-encoded"] = CANARY["url-encoded"] + "/+&"  # a value that a URL writes otherwise
C = CANARY
ESCAPES = ("\x1b]0;pwned-title\x07", "\x1b[2J", "\x1b]52;c;Y2xpcGJvYXJk\x07", "\x9b31m", "\r")
AKIA = "AKIAIOSFODNN7EXAMPLE"


def b64(text: str) -> str:
    """Base64 of a text, as Secret data holds it."""
    return base64.b64encode(text.encode()).decode()


def pem(*body: str) -> str:
    """A PEM private key with these body lines."""
    return "\n".join(("-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----")) + "\n"


def meta(name: str, namespace: str = "", **extra: Any) -> dict[str, Any]:
    """`metadata` as kubectl prints it."""
    doc: dict[str, Any] = {"name": name, "uid": f"00000000-0000-4000-8000-{abs(hash(name)) % 10**12:012d}",
                           "creationTimestamp": "2026-11-01T08:00:00Z", **extra}
    if namespace:
        doc["namespace"] = namespace
    return doc


def secrets() -> list[dict[str, Any]]:
    """Opaque, registry, repository, cluster and TLS Secrets."""
    docker = {"auths": {"registry.example.com": {
        "username": "robot", "password": C["docker-password"], "auth": b64("robot:" + C["docker-password"]),
    }}}
    return [
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("payments-db", "payments"), "type": "Opaque",
         "data": {"username": b64("payments_app"), "password": b64(C["secret-data"])}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("payments-api-token", "payments"), "type": "Opaque",
         "stringData": {"api-token": C["secret-stringdata"]}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("regcred", "payments"),
         "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64(json.dumps(docker))}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": meta("repo-payments", "argocd", labels={"argocd.argoproj.io/secret-type": "repository"}),
         "data": {"url": b64("https://git.example.com/acme/payments.git"), "username": b64("deploy"),
                  "password": b64(C["repo-password"])}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("payments-ledger", "payments"), "type": "Opaque",
         "data": {"password": b64(C["ansi-secret"]), "api-key": b64(C["url-encoded"])}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": meta("cluster-prod", "argocd", labels={"argocd.argoproj.io/secret-type": "cluster"}),
         "data": {"name": b64("prod"), "server": b64("https://prod.example.com:6443"), "config": b64(json.dumps({
             "bearerToken": C["cluster-bearer"], "tlsClientConfig": {"insecure": False}}))}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": meta("cluster-edge", "argocd", labels={"argocd.argoproj.io/secret-type": "cluster"}),
         "data": {"name": b64("edge"), "server": b64("https://edge.example.com:6443"), "config": b64(json.dumps({
             "bearerToken": _jwt(C["cluster-jwt"]), "tlsClientConfig": {"insecure": False}}))}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": meta("creds-acme", "argocd", labels={"argocd.argoproj.io/secret-type": "repo-creds"}),
         "data": {"url": b64(f"https://bot:{C['repo-creds-url']}@git.example.com/acme"), "type": b64("git")}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("payments-tls", "payments"),
         "type": "kubernetes.io/tls",
         "data": {"tls.crt": b64("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
                  "tls.key": b64(pem(C["tls-key-line"], "AbCdEf012345"))}},
    ]


def _jwt(signature: str) -> str:
    """A bearer token as a ServiceAccount's: a JWT, here expired (2026-01-01), whose signature is the canary."""
    def part(claims: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{part({'alg': 'RS256'})}.{part({'exp': 1767225600, 'sub': 'system:serviceaccount:kube-system:x'})}." \
           f"{signature}"


def config_maps() -> list[dict[str, Any]]:
    """argocd-cm with a Dex connector secret, argocd-notifications-cm with a Slack webhook, and an application
    ConfigMap holding a password."""
    dex = ("connectors:\n- type: github\n  id: github\n  name: GitHub\n  config:\n    clientID: 0a1b2c3d\n"
           f"    clientSecret: {C['dex-client-secret']}\n")
    return [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": meta("argocd-cm", "argocd", labels={"app.kubernetes.io/part-of": "argocd"}),
         "data": {"url": "https://argocd.example.com", "dex.config": dex,
                  "oidc.config": f"name: Okta\nissuer: https://login.example.com\nclientID: argo\n"
                                 f"clientSecret: {C['oidc-client-secret']}\nrequestedScopes: [openid]\n"}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": meta("argocd-rbac-cm", "argocd", labels={"app.kubernetes.io/part-of": "argocd"}),
         "data": {"policy.csv": "g, acme:admins, role:admin\n"}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": meta("argocd-notifications-cm", "argocd", labels={"app.kubernetes.io/part-of": "argocd"}),
         "data": {"service.webhook.slack-alerts": "url: https://hooks.slack.com/services/T0ACME01/B0ACME02/"
                                                  f"{C['slack-url']}\nheaders:\n- name: Content-Type\n"
                                                  "  value: application/json\n",
                  "trigger.on-sync-failed": "- when: app.status.operationState.phase in ['Error', 'Failed']\n"
                                            "  send: [app-sync-failed]\n",
                  "subscriptions": "- recipients: [slack-alerts]\n  triggers: [on-sync-failed]\n"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("payments-api-config", "payments"),
         "data": {"DB_HOST": "payments-db", "DB_PASSWORD": C["configmap"]}},
    ]


REPO_URL = f"https://deploy:{C['repo-url']}@git.example.com/acme/payments.git"
FAILED_AT = "2026-11-20T14:52:10Z"


def application() -> dict[str, Any]:
    """An Application whose sync failed and whose Deployment is Degraded."""
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": meta("payments", "argocd", annotations={"example.com/deploy-token": C["annotation"]}),
        "spec": {
            "project": "default",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "payments"},
            "source": {"repoURL": REPO_URL, "path": "charts/payments", "targetRevision": "main", "helm": {
                "values": f"db:\n  password: {C['helm-values']}\n",
                "parameters": [{"name": "db.password", "value": C["helm-parameter"]}],
            }},
            "syncPolicy": {"automated": {"selfHeal": True}},
        },
        "status": {
            "health": {"status": "Degraded"},
            "sync": {"status": "OutOfSync", "revision": "4f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39"},
            "reconciledAt": "2026-11-20T14:55:00Z",
            "resources": [
                {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "payments",
                 "name": "payments-api", "status": "Synced", "health": {"status": "Degraded"}},
                {"version": "v1", "kind": "Secret", "namespace": "payments", "name": "payments-db",
                 "status": "OutOfSync"},
            ],
            "conditions": [{
                "type": "ComparisonError", "lastTransitionTime": "2026-11-20T14:51:00Z",
                "message": "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: "
                           f"code = Unknown desc = failed to list refs: authentication required: {REPO_URL}",
            }],
            "operationState": {
                "phase": "Failed", "startedAt": "2026-11-20T14:52:00Z", "finishedAt": FAILED_AT,
                "message": "one or more objects failed to apply, reason: error when patching "
                           "\"/dev/shm/payments\": Authorization: Token " + C["sync-result"],
                "operation": {"initiatedBy": {"automated": True}, "sync": {"revision": "4f1c2a9e"}},
                "syncResult": {"revision": "4f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39", "resources": [{
                    "version": "v1", "kind": "Secret", "namespace": "payments", "name": "payments-db",
                    "status": "SyncFailed",
                    "message": f'Secret "payments-db" is invalid: data[password]: Invalid value: "{C["secret-data"]}"'
                               + ESCAPES[0],
                }]},
            },
        },
    }


POD_NAMES = ("payments-api-7c9d8f6b5d-a1b2c", "payments-api-7c9d8f6b5d-d3e4f", "payments-api-7c9d8f6b5d-g5h6i")
SIDECARS = ("ledger", "proxy", "webhook")
"""A second container of each crash-looping pod, whose previous log is cited too."""


def workloads() -> list[dict[str, Any]]:
    """A Deployment past its progress deadline, its ReplicaSet, three crash-looping pods and an evicted one."""
    labels = {"app.kubernetes.io/name": "payments-api", "app.kubernetes.io/instance": "payments"}
    container = {"name": "api", "image": "registry.example.com/payments/api:1.8.0",
                 "env": [{"name": "DB_PASSWORD", "value": C["env"]},
                         {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "payments-api-token",
                                                                              "key": "api-token"}}}]}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("payments-api", "payments", labels=labels,
                                                                        generation=3),
        "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}},
        "status": {"observedGeneration": 3, "replicas": 3, "updatedReplicas": 3, "unavailableReplicas": 3,
                   "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                   "message": 'ReplicaSet "payments-api-7c9d8f6b5d" has timed out progressing.'}]},
    }
    owner = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "payments-api", "controller": True,
              "uid": deployment["metadata"]["uid"]}]
    replica_set = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": meta("payments-api-7c9d8f6b5d", "payments", labels=labels, ownerReferences=owner),
                   "spec": {"replicas": 3, "selector": {"matchLabels": labels}},
                   "status": {"replicas": 3, "readyReplicas": 0}}
    rs_owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "payments-api-7c9d8f6b5d",
                 "controller": True, "uid": replica_set["metadata"]["uid"]}]
    pods = []
    for index, name in enumerate(POD_NAMES):
        containers = [container, {"name": SIDECARS[index], "image": f"registry.example.com/{SIDECARS[index]}:2"}]
        statuses = [{
            "name": c["name"], "ready": False, "restartCount": 7, "image": c["image"],
            "state": {"waiting": {"reason": "CrashLoopBackOff",
                                  "message": f"back-off 5m0s restarting failed container={c['name']} pod={name}"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-11-20T14:50:04Z",
                                         "message": f"fatal: Authorization: Token {C['pod-terminated']}"}},
        } for c in containers]
        pods.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": meta(name, "payments", labels=labels, ownerReferences=rs_owner),
            "spec": {"nodeName": "node-1", "restartPolicy": "Always", "containers": containers},
            "status": {"phase": "Running", "containerStatuses": statuses,
                       "conditions": [{"type": "Ready", "status": "False"}]},
        })
    pods.append({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": meta("payments-api-7c9d8f6b5d-evict", "payments", labels=labels, ownerReferences=rs_owner),
        "spec": {"nodeName": "node-1", "restartPolicy": "Always", "containers": [container]},
        "status": {"phase": "Failed", "reason": "Evicted",
                   "message": f"The node was low on resource: ephemeral-storage. password={C['pod-status']}"
                              + ESCAPES[1]},
    })
    pods.append({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": meta("payments-api-7c9d8f6b5d-oom", "payments", labels=labels, ownerReferences=rs_owner),
        "spec": {"nodeName": "node-1", "restartPolicy": "Always", "containers": [container]},
        "status": {"phase": "Failed", "containerStatuses": [{
            "name": "api", "ready": False, "restartCount": 0, "image": container["image"],
            "state": {"terminated": {"exitCode": 2, "reason": "Error",
                                     "message": f"fatal: Authorization: Token {C['pod-terminated']}"}},
        }]},
    })
    notified = {"app.kubernetes.io/name": "argocd-notifications-controller"}
    notifications = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": meta("argocd-notifications-controller", "argocd", labels=notified),
        "spec": {"replicas": 1, "selector": {"matchLabels": notified},
                 "template": {"metadata": {"labels": notified},
                              "spec": {"containers": [{"name": "argocd-notifications-controller",
                                                       "image": "quay.io/argoproj/argocd:v2.10.9",
                                                       "args": ["/usr/local/bin/argocd-notifications"]}]}}},
        "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
    }
    return [deployment, replica_set, *pods, notifications]


def events() -> list[dict[str, Any]]:
    """Warning events about a crashing pod (cited) and about unrelated objects (only on the timeline)."""
    def event(name: str, kind: str, obj: str, namespace: str, reason: str, message: str, at: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Event", "metadata": meta(name, namespace), "type": "Warning",
                "reason": reason, "message": message, "count": 3, "firstTimestamp": at, "lastTimestamp": at,
                "involvedObject": {"apiVersion": "v1", "kind": kind, "name": obj, "namespace": namespace},
                "source": {"component": "kubelet"}}

    return [
        event("payments-api.1", "Pod", POD_NAMES[0], "payments", "Failed",
              f"Failed to pull image: unexpected status: 401 Unauthorized, Authorization: Bearer {C['event-cited']}"
              + ESCAPES[2], "2026-11-20T14:50:05Z"),
        event("db-migrate.1", "Pod", "db-migrate-x7k2p", "payments", "Failed",
              f"Error: container db-migrate failed: DB_PASSWORD={C['event-uncited']} rejected", "2026-11-20T14:49:00Z"),
        event("payments-db.1", "Secret", "payments-db", "payments", "Invalid",
              f"value {C['secret-data']} does not match the expected format" + ESCAPES[3], "2026-11-20T14:49:30Z"),
    ]


def workflow() -> dict[str, Any]:
    """An Argo Workflow that failed, with a failed node."""
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": meta("ledger-export-x9z", "batch"),
        "spec": {"entrypoint": "main"},
        "status": {"phase": "Failed", "startedAt": "2026-11-20T14:40:00Z", "finishedAt": "2026-11-20T14:45:00Z",
                   "message": f"child 'ledger-export-x9z-123' failed: token={C['workflow-message']}",
                   "nodes": {"ledger-export-x9z-123": {
                       "id": "ledger-export-x9z-123", "displayName": "export", "type": "Pod", "phase": "Failed",
                       "startedAt": "2026-11-20T14:40:00Z", "finishedAt": "2026-11-20T14:45:00Z",
                       "message": f"Error (exit code 1): client_secret={C['workflow-node']}" + ESCAPES[4],
                   }}},
    }


def deprecated_object() -> dict[str, Any]:
    """An object written through a removed API by a manager whose name carries a credential."""
    return {
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": meta("payments-api", "payments", managedFields=[{
            "manager": f"deployer --token={C['manager']}", "operation": "Update", "apiVersion": "policy/v1beta1",
            "time": "2026-11-01T08:00:00Z",
        }]),
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": "payments-api"}}},
    }


def log_lines() -> dict[str, list[str]]:
    """Container logs, by path under logs/: the previous instances' last lines are the evidence."""
    pods = POD_NAMES
    return {
        f"payments/{pods[0]}/api.previous.log": [
            "2026-11-20T14:50:01.000000001Z starting payments-api 1.8.0",
            f"2026-11-20T14:50:01.100000000Z db: connecting as payments_app with password={C['log-timestamps']}",
            f"2026-11-20T14:50:01.200000000Z db: authentication failed for {C['secret-data']}\x1b[2J",
            f"2026-11-20T14:50:01.300000000Z loaded api token {b64(C['secret-stringdata'])}",
        ],
        f"payments/{pods[1]}/api.previous.log": [
            'time="2026-11-20T14:50:02Z" level=info msg="starting"',
            'time="2026-11-20T14:50:02Z" level=error msg="login request failed: '
            + '{\\"username\\":\\"app\\",\\"password\\":\\"' + C["logrus-escaped-json"] + '\\"}"',
            json.dumps({"level": "error", "msg": "upstream call failed", "time": "2026-11-20T14:50:03Z",
                        "headers": {"Authorization": f"Token {C['logrus-json-authorization']}"}}),
            json.dumps({"level": "fatal", "msg": "cannot start", "time": "2026-11-20T14:50:04Z",
                        "aws": f"{AKIA} {C['aws-secret']}"}),
        ],
        f"payments/{pods[1]}/proxy.previous.log": [
            'time="2026-11-20T14:50:02Z" level=info msg="proxy starting"',
            f'time="2026-11-20T14:50:02Z" level=error msg="fetch failed: '
            f'https://deploy:ab/{C["url-password-slash"]}@git.example.com/acme/payments.git"',
            f'time="2026-11-20T14:50:03Z" level=error msg="token exchange failed" client_secret={C["client-secret"]}',
            f'time="2026-11-20T14:50:04Z" level=fatal msg="docker auth {b64("robot:" + C["docker-password"])}"',
        ],
        f"payments/{pods[0]}/ledger.previous.log": [
            f"2026-11-20T14:50:05.000000000Z db: retry as payments_app with \x1b[31m{C['ansi-secret']}\x1b[0m",
            f"2026-11-20T14:50:05.100000000Z db: connecting with \x1b[33mpassword\x1b[0m={C['ansi-password']}",
            f"2026-11-20T14:50:05.200000000Z cluster: token {C['cluster-bearer']} rejected by prod.example.com:6443",
        ],
        f"payments/{pods[2]}/webhook.previous.log": [
            f"2026-11-20T14:50:06.000000000Z webhook: GET /v1/keys/{quote(C['url-encoded'], safe='')} returned 404",
            f"2026-11-20T14:50:06.100000000Z [mysql] dsn=payments_app:{C['dsn']}@tcp(mysql.payments:3306)/ledger",
            f"2026-11-20T14:50:06.200000000Z exec: argocd login argocd.example.com --password {C['cli-flag']} --sso",
        ],
        f"payments/{pods[2]}/api.previous.log": [
            "2026-11-20T14:50:03.000000000Z panic: cannot parse key:",
            f"2026-11-20T14:50:03.100000000Z {C['pem-log-line']}",
            f"2026-11-20T14:50:03.200000000Z {C['pem-log-last']}",
            "2026-11-20T14:50:03.300000000Z -----END RSA PRIVATE KEY-----",
        ],
        "argocd/argocd-application-controller-0/argocd-application-controller.log": [
            'time="2026-11-20T14:52:00Z" level=info msg="Initiated automated sync to \'4f1c2a9e\'" '
            "application=argocd/payments",
            f'time="{FAILED_AT}" level=info msg="updated \'argocd/payments\' operation (phase: Failed)" '
            f"application=argocd/payments",
        ],
    }


def audit_lines() -> list[str]:
    """audit.k8s.io/v1 events: a Secret update with its objects, and a call to a removed API."""
    def event(n: int, verb: str, uri: str, resource: str, group: str, version: str, **bodies: Any) -> str:
        return json.dumps({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
            "auditID": f"6f1e2d3c-0000-4000-8000-00000000000{n}", "stage": "ResponseComplete", "requestURI": uri,
            "verb": verb, "user": {"username": "system:serviceaccount:argocd:argocd-application-controller"},
            "userAgent": "argocd-application-controller/v2.10.9+c071af8 (linux/amd64) kubernetes/$Format",
            "objectRef": {"resource": resource, "namespace": "payments", "name": "payments-db",
                          "apiGroup": group, "apiVersion": version},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": "2026-11-20T14:52:05.000000Z",
            "stageTimestamp": "2026-11-20T14:52:05.010000Z",
            "annotations": {"authorization.k8s.io/decision": "allow", "k8s.io/deprecated": str(group == "policy")
                            .lower()},
            **bodies,
        })

    secret = {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "payments-db", "namespace": "payments"},
              "data": {"password": b64(C["audit-request"])}}
    token = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
             "status": {"token": C["audit-response"], "expirationTimestamp": "2026-11-20T15:52:05Z"}}
    return [
        event(1, "update", "/api/v1/namespaces/payments/secrets/payments-db", "secrets", "", "v1",
              requestObject=secret, responseObject=token),
        event(2, "get", f"/apis/policy/v1beta1/namespaces/payments/poddisruptionbudgets?access_token={C['audit-uri']}",
              "poddisruptionbudgets", "policy", "v1beta1"),
    ]


def write_yaml(path: Path, docs: list[dict[str, Any]]) -> None:
    """Multi-document YAML, as `kubectl get -o yaml` of several objects joined with `---`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=True, allow_unicode=False))


def write_chart(root: Path, password: str) -> None:
    """A chart whose Secret is random unless a password is set, with a password in its values."""
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: payments\nversion: 1.0.0\n")
    (root / "values.yaml").write_text(f"adminPassword: {password}\ndb:\n  password: ''\n")
    (root / "templates" / "secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\ntype: Opaque\ndata:\n"
        "  admin-password: {{ .Values.adminPassword | default (randAlphaNum 16) | b64enc | quote }}\n"
        "  db-password: {{ .Values.db.password | default (randAlphaNum 16) | b64enc | quote }}\n"
    )


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The canary bundle."""
    root = tmp_path_factory.mktemp("canaries") / "bundle"
    root.mkdir()
    (root / "bundle.yaml").write_text(
        "collectedAt: 2026-11-20T15:00:00Z\ncluster:\n  name: prod-eu-1\n  version: v1.29.4\n")
    write_yaml(root / "objects" / "secrets.yaml", secrets())
    write_yaml(root / "objects" / "configmaps.yaml", config_maps())
    write_yaml(root / "objects" / "argocd" / "applications.yaml", [application()])
    write_yaml(root / "objects" / "payments" / "workloads.yaml", [*workloads(), deprecated_object()])
    (root / "objects" / "payments" / "events.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                                           "items": events()}))
    write_yaml(root / "objects" / "batch" / "workflows.yaml", [workflow()])
    for rel, lines in log_lines().items():
        path = root / "logs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    (root / "audit").mkdir()
    (root / "audit" / "kube-apiserver-audit.log").write_text("\n".join(audit_lines()) + "\n")
    write_chart(root / "repo" / "charts" / "payments", C["repo-chart-values"])
    (root / "logs" / "payments" / f"stray{ESCAPES[0]}.log").write_text("not in the layout\n")  # an input error
    return root


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart for helm-check, and a values file with another password."""
    root = tmp_path_factory.mktemp("chart") / "payments"
    write_chart(root, C["chart-values"])
    (root.parent / "prod-values.yaml").write_text(f"db:\n  password: {C['values-file']}\n")
    return root


def run(*args: str) -> tuple[str, str]:
    """stdout and stderr of one command; exit codes 0 and 1 (findings) are both fine here."""
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), (args, result.exit_code, result.stdout, result.stderr, result.exception)
    return result.stdout, result.stderr


def commands(bundle: Path, chart: Path) -> Iterator[tuple[str, ...]]:
    """Every command in every output format."""
    for output in sorted(REPORTERS):
        yield ("scan", str(bundle), "-o", output, "--fail-on", "never")
    for output in ("table", "json", "html"):
        yield ("timeline", str(bundle), "-o", output)
    for output in ("table", "json"):
        yield ("health", str(bundle), "-o", output)
    for output in ("table", "json", "markdown", "sarif"):
        yield ("deprecations", str(bundle), "-o", output)
    values = str(chart.parent / "prod-values.yaml")
    for output in ("table", "json", "sarif"):
        yield ("helm-check", str(chart), "-o", output)
        yield ("helm-check", str(chart), "-f", values, "-o", output)
    for output in ("table", "json", "mermaid", "dot", "sarif"):
        yield ("map", str(bundle), "-o", output)


def leaks(text: str) -> list[str]:
    """The places whose canary, its base64 or its URL-encoded form is in the text."""
    return sorted(place for place, value in CANARY.items()
                  if value in text or b64(value) in text or quote(value, safe="") in text)


@pytest.fixture(scope="module")
def outputs(bundle: Path, chart: Path) -> dict[tuple[str, ...], tuple[str, str]]:
    """Every command's stdout and stderr."""
    return {args: run(*args) for args in commands(bundle, chart)}


def test_no_canary_in_any_output(outputs: dict[tuple[str, ...], tuple[str, str]]) -> None:
    found = {" ".join((args[0], *args[2:])): leaks(out + err) for args, (out, err) in outputs.items()}
    assert {command: places for command, places in found.items() if places} == {}


def test_the_canaries_were_reached(outputs: dict[tuple[str, ...], tuple[str, str]], bundle: Path) -> None:
    """The outputs cite the places the canaries were planted in, redacted: the test above can fail."""
    scan = json.loads(outputs[("scan", str(bundle), "-o", "json", "--fail-on", "never")][0])
    excerpts = [e["excerpt"] for f in scan["findings"] for e in f["evidence"]]
    for needle in ("with password=<redacted>", "authentication failed for <redacted secret value>",
                   '\\"password\\":\\"<redacted>\\"', "Authorization: Token <redacted>",
                   "<redacted aws key id> <redacted aws secret>", ":<redacted>@git.example.com/acme/payments.git",
                   "client_secret=<redacted>", "<redacted base64>", "<redacted private key>",
                   "Authorization: Bearer <redacted>", "docker auth <redacted secret value>",
                   "with \x1b[31m<redacted secret value>\x1b[0m", "connecting with password=<redacted>",
                   "cluster: token <redacted secret value> rejected", "GET /v1/keys/<redacted secret value> returned",
                   ":<redacted>@tcp(mysql.payments:3306)/ledger", "--password <redacted> --sso"):
        assert any(needle in e for e in excerpts), needle
    timeline = json.loads(outputs[("timeline", str(bundle), "-o", "json")][0])
    texts = [e["excerpt"] for e in timeline["timeline"]]
    for needle in ("DB_PASSWORD=<redacted> rejected", "value <redacted secret value> does not match",
                   "client_secret=<redacted>"):
        assert any(needle in t for t in texts), needle
    health = json.loads(outputs[("health", str(bundle), "-o", "json")][0])
    messages = {o["name"]: (o["health"] or {}).get("message", "") for o in health["objects"]}
    assert "password=<redacted>" in messages["payments-api-7c9d8f6b5d-evict"]
    assert "Authorization: Token <redacted>" in messages["payments-api-7c9d8f6b5d-oom"]
    assert "pod=payments-api-7c9d8f6b5d-a1b2c" in messages["payments-api-7c9d8f6b5d-a1b2c"]
    assert "token=<redacted>" in messages["ledger-export-x9z"]
    deprecations = json.loads(outputs[("deprecations", str(bundle), "-o", "json")][0])
    assert any("--token=<redacted>" in use["how"] for use in deprecations["uses"])
    rules = {f["rule"] for f in scan["findings"]}
    assert {"cluster-credentials-expired", "sso-login-failed"} <= rules  # they read the Secret and oidc.config
    installed = json.loads(outputs[("map", str(bundle), "-o", "json")][0])
    apis = [i["api"] for c in installed["components"] for i in c["integrations"]]
    assert "webhook https://hooks.slack.com/services/<redacted>" in apis


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_no_control_character_in_human_formats(outputs: dict[tuple[str, ...], tuple[str, str]]) -> None:
    for args, (out, err) in outputs.items():
        if "json" not in args:
            assert not CONTROL.search(out + err), (args, CONTROL.findall(out + err))


def test_json_keeps_control_characters_escaped(outputs: dict[tuple[str, ...], tuple[str, str]], bundle: Path) -> None:
    for args, (out, _) in outputs.items():
        if "json" in args:
            assert not CONTROL.search(out.replace("\n", "").replace("\t", "")), args
    timeline = json.loads(outputs[("timeline", str(bundle), "-o", "json")][0])
    texts = " ".join(e["excerpt"] for e in timeline["timeline"])
    assert ESCAPES[3] in texts and ESCAPES[1] in texts
