#!/usr/bin/env python3
"""Generate a synthetic argo-doctor bundle (layout v1) of a large Argo CD installation.

The bundle has Applications with full status, Deployments, ReplicaSets, Pods, Services,
Nodes, Events and the Argo CD install itself under ``objects/``, logrus text and JSON logs
of the Argo CD components under ``logs/`` and an apiserver audit log under ``audit/``.
Output is deterministic for a given set of parameters and ``--seed``; an existing bundle
whose parameters stamp matches is kept as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import time
import uuid
from bisect import bisect_right
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
Fields = dict[str, Any]
Message = tuple[str, str, Fields]  # (level, msg, fields)
Variant = tuple[str, str]  # a log line is variant[0] + time + variant[1]

STAMP_NAME = ".bench-params.json"
COLLECTED_AT = 1795186800  # 2026-11-20T15:00:00Z
LOG_SPAN = 6 * 3600
NS = 1_000_000_000
ARGOCD_NS = "argocd"
ARGOCD_VERSION = "v2.13.1"
ARGOCD_IMAGE = f"quay.io/argoproj/argocd:{ARGOCD_VERSION}"
K8S_VERSION = "v1.30.4"
CLUSTER_SERVER = "https://kubernetes.default.svc"
OBJECTS_PER_FILE = 500
RARE_RATE = 0.001
BATCH_LINES = 8192
WHEEL_SIZE = 8192
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

TEAMS = ["payments", "checkout", "search", "identity", "catalog", "billing", "orders", "shipping",
         "inventory", "pricing", "ads", "analytics", "auth", "cart", "fraud", "ledger", "media",
         "notify", "profile", "reco"]
COMPONENTS = ["api", "web", "worker", "gateway", "consumer", "scheduler", "cache", "sync", "exporter",
              "admin", "indexer", "importer", "auth", "events", "reports", "mailer", "pdf", "graphql",
              "grpc", "batch"]
ROLES = ["server", "worker", "migrator", "metrics", "proxy", "cron", "consumer", "ui"]
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
INSTANCE_TYPES = ["m6i.2xlarge", "m6i.4xlarge", "c6i.4xlarge", "r6i.2xlarge"]
WEBHOOKS = [
    ("mpod.elbv2.k8s.aws", "https://aws-load-balancer-webhook-service.kube-system.svc:443/mutate-v1-pod"),
    ("validate.kyverno.svc-fail", "https://kyverno-svc.kyverno.svc:443/validate/fail"),
    ("validate.nginx.ingress.kubernetes.io",
     "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses"),
]
GRPC_REPO_METHODS = ["GenerateManifest", "GenerateManifest", "GenerateManifest", "ResolveRevision",
                     "GetAppDetails", "GetRevisionMetadata", "GetGitDirectories"]
GRPC_SERVER_METHODS = [("application.ApplicationService", "Get"), ("application.ApplicationService", "List"),
                       ("application.ApplicationService", "ResourceTree"),
                       ("application.ApplicationService", "ManagedResources"),
                       ("application.ApplicationService", "GetManifests"),
                       ("application.ApplicationService", "RevisionMetadata"),
                       ("session.SessionService", "GetUserInfo"), ("settings.SettingsService", "Get"),
                       ("project.ProjectService", "List"), ("cluster.ClusterService", "List")]


# --------------------------------------------------------------------------------------------
# Parameters


@dataclass(frozen=True)
class Params:
    """What determines the content of a bundle."""

    apps: int
    pods: int
    log_bytes: int
    audit_bytes: int
    seed: int
    generator: str  # sha256 of this file: any change of the generator regenerates


def parse_size(text: str) -> int:
    """Parse a size such as ``200M``, ``1G``, ``1.5GiB`` or ``1048576`` (binary units)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 200M, 1G)")
    power = " kmgt".index(m.group(2).lower() or " ")
    return int(float(m.group(1)) * 1024**power)


def format_size(n: int) -> str:
    """Format a byte count the way ``parse_size`` reads it back (``1G``, ``200M``, ``1234``)."""
    for unit, power in (("T", 4), ("G", 3), ("M", 2), ("K", 1)):
        if n and n % 1024**power == 0:
            return f"{n // 1024**power}{unit}"
    return str(n)


# --------------------------------------------------------------------------------------------
# Small helpers


def iso(t: float) -> str:
    """RFC 3339 UTC timestamp with second precision."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def iso_micro(t_ns: int) -> str:
    """RFC 3339 UTC timestamp with microsecond precision (audit log style)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_ns // NS)) + f".{t_ns % NS // 1000:06d}Z"


def new_uid(rng: random.Random) -> str:
    """A random UUID v4 string drawn from ``rng``."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def suffix(rng: random.Random, n: int) -> str:
    """A Kubernetes-style random name suffix."""
    return "".join(rng.choices(SUFFIX_ALPHABET, k=n))


def git_sha(rng: random.Random) -> str:
    """A random 40-hex git commit id."""
    return f"{rng.getrandbits(160):040x}"


def hex_id(rng: random.Random, bits: int = 256) -> str:
    """A random hex string of ``bits`` bits."""
    return f"{rng.getrandbits(bits):0{bits // 4}x}"


# --------------------------------------------------------------------------------------------
# YAML output in the style of ``kubectl get -o yaml`` (sorted keys, unindented sequences)

_PLAIN = re.compile(r"[A-Za-z/][A-Za-z0-9_./@+=-]*(?::[A-Za-z0-9_./@+=-]+)*\Z")
_RESERVED = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n"})


def _yaml_scalar(v: Any) -> str:
    """One YAML scalar; strings that could read as something else are double-quoted."""
    if isinstance(v, str):
        if _PLAIN.match(v) and v.lower() not in _RESERVED:
            return v
        return json.dumps(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    return str(v)


def _yaml_block(s: str, pad: str) -> str | None:
    """A literal block scalar (``|``) for a multi-line string, or None when it cannot be one."""
    lines = s.split("\n")
    if (s[0] in " \n" or s.endswith("\n\n") or not s.replace("\n", "").isprintable() or not s.isascii()
            or any(line != line.rstrip() for line in lines)):
        return None
    if s.endswith("\n"):
        indicator, lines = "|", lines[:-1]
    else:
        indicator = "|-"
    return indicator + "\n" + "".join(f"{pad}{line}\n" if line else "\n" for line in lines)


def _yaml_map(d: Obj, ind: int, out: list[str]) -> None:
    pad = " " * ind
    for k in sorted(d):
        v = d[k]
        key = _yaml_scalar(k)
        if isinstance(v, dict):
            if v:
                out.append(f"{pad}{key}:\n")
                _yaml_map(v, ind + 2, out)
            else:
                out.append(f"{pad}{key}: {{}}\n")
        elif isinstance(v, list):
            if v:
                out.append(f"{pad}{key}:\n")
                _yaml_seq(v, ind, out)
            else:
                out.append(f"{pad}{key}: []\n")
        elif isinstance(v, str) and "\n" in v and (block := _yaml_block(v, pad + "  ")) is not None:
            out.append(f"{pad}{key}: {block}")
        else:
            out.append(f"{pad}{key}: {_yaml_scalar(v)}\n")


def _yaml_seq(items: list[Any], ind: int, out: list[str]) -> None:
    pad = " " * ind
    for item in items:
        if isinstance(item, dict) and item:
            sub: list[str] = []
            _yaml_map(item, ind + 2, sub)
            out.append(f"{pad}- {sub[0][ind + 2:]}")
            out.extend(sub[1:])
        elif isinstance(item, list) and item:
            sub = []
            _yaml_seq(item, ind + 2, sub)
            out.append(f"{pad}- {sub[0][ind + 2:]}")
            out.extend(sub[1:])
        elif isinstance(item, dict):
            out.append(f"{pad}- {{}}\n")
        elif isinstance(item, list):
            out.append(f"{pad}- []\n")
        else:
            out.append(f"{pad}- {_yaml_scalar(item)}\n")


def to_yaml(obj: Obj) -> str:
    """Serialize one object as a YAML document, like kubectl does."""
    out: list[str] = []
    _yaml_map(obj, 0, out)
    return "".join(out)


def kube_list(items: list[Obj]) -> Obj:
    """Wrap objects in a ``kind: List`` as ``kubectl get -o json|yaml`` prints it."""
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


# --------------------------------------------------------------------------------------------
# The model: names, uids and relations, built once from the seed


@dataclass
class PodRec:
    """A workload pod."""

    name: str
    uid: str
    node: int
    ip: str
    restarts: int
    start: int


@dataclass
class DeployRec:
    """A Deployment, its current (and maybe one old) ReplicaSet, its Service and pods."""

    name: str
    namespace: str
    app: str
    uid: str
    replicas: int
    image: str
    digest: str
    rs_hash: str
    rs_uid: str
    old_rs: tuple[str, str] | None  # (pod-template-hash, uid) of the previous ReplicaSet
    revision: int
    created: int
    rolled: int
    crashloop: bool
    sidecar: bool
    svc_uid: str
    svc_ip: str
    pods: list[PodRec] = field(default_factory=list)

    @property
    def rs_name(self) -> str:
        """Name of the current ReplicaSet."""
        return f"{self.name}-{self.rs_hash}"


@dataclass
class AppRec:
    """An Argo CD Application and the state it is in."""

    index: int
    name: str
    uid: str
    namespace: str
    project: str
    source_type: str  # Directory | Kustomize | Helm
    repo_url: str
    path: str
    chart: str
    target_revision: str
    revision: str  # the revision last synced
    desired: str  # the revision the app should be at (differs when OutOfSync / failed)
    created: int
    shard: int
    health: str
    sync: str
    failure: str | None
    failed_resource: tuple[str, str, str] | None  # (group, kind, name)
    op_started: int
    op_finished: int
    history: list[tuple[str, int]]  # (revision, deployedAt)
    deployments: list[DeployRec]

    @property
    def source_str(self) -> str:
        """The ApplicationSource as the repo-server prints it in cache hit/miss lines."""
        if self.source_type == "Helm":
            helm = f"&ApplicationSourceHelm{{ValueFiles:[values-{self.namespace}.yaml],Parameters:[]," \
                   f"ReleaseName:{self.name},Values:,FileParameters:[],ValuesObject:nil,}}"
            return (f"&ApplicationSource{{RepoURL:{self.repo_url},Path:,TargetRevision:{self.target_revision},"
                    f"Helm:{helm},Kustomize:nil,Directory:nil,Plugin:nil,Chart:{self.chart},Ref:,Name:,}}")
        kustomize = "&ApplicationSourceKustomize{}" if self.source_type == "Kustomize" else "nil"
        return (f"&ApplicationSource{{RepoURL:{self.repo_url},Path:{self.path},"
                f"TargetRevision:{self.target_revision},Helm:nil,Kustomize:{kustomize},Directory:nil,"
                f"Plugin:nil,Chart:,Ref:,Name:,}}")


@dataclass
class ArgoPod:
    """A pod of the Argo CD install whose logs are in the bundle."""

    component: str  # application-controller | repo-server | server
    name: str
    uid: str
    node: int
    ip: str
    owner_kind: str
    owner_name: str
    owner_uid: str
    start: int
    restarts: int
    oom_at: int | None  # when the previous container instance was OOMKilled


@dataclass
class Model:
    """Everything the object and log writers need to agree on."""

    params: Params
    nodes: list[tuple[str, str, str, str]]  # (name, ip, zone, instance type)
    namespaces: list[str]
    apps: list[AppRec]
    deployments: list[DeployRec]
    argocd: list[ArgoPod]
    argocd_uids: dict[str, str]
    install_id: int


def build_model(p: Params) -> Model:
    """Decide every name, uid, relation and state from the seed."""
    rng = random.Random(f"{p.seed}/model")
    n_nodes = max(3, min(100, math.ceil(p.pods / 200)))
    nodes = []
    for i in range(n_nodes):
        ip = f"10.0.{i // 250 * 16 + rng.randrange(16)}.{i % 250 + 2}"
        nodes.append((f"ip-{ip.replace('.', '-')}.eu-west-1.compute.internal", ip, ZONES[i % 3],
                      rng.choice(INSTANCE_TYPES)))
    n_ns = max(1, p.apps // 20)
    namespaces = [f"{TEAMS[i % len(TEAMS)]}-{i // len(TEAMS):02d}" for i in range(n_ns)]

    # deployments per app and replicas per deployment
    n_dep = max(1, math.ceil(p.pods / 3))
    per_app = [0] * p.apps
    for i in range(min(n_dep, p.apps)):
        per_app[i] = 1
    for _ in range(n_dep - p.apps):
        per_app[rng.randrange(p.apps)] += 1
    if n_dep < p.apps:
        rng.shuffle(per_app)
    replicas = [1 if i < p.pods else 0 for i in range(n_dep)]
    if p.pods > n_dep:
        weights = [rng.paretovariate(1.6) for _ in range(n_dep)]
        for i in rng.choices(range(n_dep), weights=weights, k=p.pods - n_dep):
            replicas[i] += 1
    rng.shuffle(replicas)

    apps: list[AppRec] = []
    deployments: list[DeployRec] = []
    pod_counter = 0
    dep_iter = iter(replicas)
    failure_kinds = ["webhook", "webhook", "webhook", "invalid"]
    for i in range(p.apps):
        ns = namespaces[i % n_ns]
        j = i // n_ns
        comp = COMPONENTS[j % len(COMPONENTS)] + (f"{j // len(COMPONENTS)}" if j >= len(COMPONENTS) else "")
        name = f"{ns}-{comp}"
        created = COLLECTED_AT - rng.randrange(30 * 86400, 700 * 86400)
        kind = rng.choices(["Directory", "Kustomize", "Helm"], weights=[3, 4, 3])[0]
        if kind == "Helm":
            repo_url, path, chart = "https://charts.acme.io", "", f"{ns.split('-')[0]}-{comp}"
            target = f"{rng.randrange(0, 4)}.{rng.randrange(0, 30)}.{rng.randrange(0, 12)}"
            revision = desired = target
        else:
            repo_url = f"https://github.com/acme/{ns.split('-')[0]}-gitops.git"
            path = f"apps/{comp}/overlays/{ns}" if kind == "Kustomize" else f"apps/{comp}"
            chart, target = "", rng.choice(["HEAD", "HEAD", "main", "release"])
            revision = desired = git_sha(rng)
        deps: list[DeployRec] = []
        for k in range(per_app[i]):
            reps = next(dep_iter)
            dname = f"{comp}-{ROLES[k % len(ROLES)]}" + (f"{k // len(ROLES)}" if k >= len(ROLES) else "")
            dcreated = max(created, COLLECTED_AT - rng.randrange(2 * 86400, 400 * 86400))
            rolled = max(dcreated, COLLECTED_AT - rng.randrange(LOG_SPAN + 3600, 30 * 86400))
            d = DeployRec(
                name=dname, namespace=ns, app=name, uid=new_uid(rng), replicas=reps,
                image=f"registry.acme.io/{ns.split('-')[0]}/{comp}-{ROLES[k % len(ROLES)]}",
                digest=hex_id(rng), rs_hash=suffix(rng, 10), rs_uid=new_uid(rng),
                old_rs=(suffix(rng, 10), new_uid(rng)) if rng.random() < 0.4 else None,
                revision=rng.randrange(1, 40), created=dcreated, rolled=rolled, crashloop=False,
                sidecar=rng.random() < 0.3, svc_uid=new_uid(rng),
                svc_ip=f"172.20.{rng.randrange(256)}.{rng.randrange(1, 255)}")
            seen: set[str] = set()
            for _ in range(reps):
                while (pname := f"{d.rs_name}-{suffix(rng, 5)}") in seen:
                    pass
                seen.add(pname)
                ip = f"10.{100 + (pod_counter >> 16 & 0x3F)}.{pod_counter >> 8 & 0xFF}.{pod_counter & 0xFF}"
                pod_counter += 1
                d.pods.append(PodRec(pname, new_uid(rng), rng.randrange(n_nodes), ip,
                                     rng.choice([0] * 12 + [1, 2]), rolled + rng.randrange(5, 600)))
            deps.append(d)
        deployments.extend(deps)
        history = []
        t = created
        for _ in range(rng.randrange(1, 11)):
            t += rng.randrange(3600, 20 * 86400)
            history.append((revision if kind == "Helm" else git_sha(rng), min(t, COLLECTED_AT - LOG_SPAN)))
        history[-1] = (revision, history[-1][1])
        op_finished = history[-1][1]
        apps.append(AppRec(
            index=i, name=name, uid=new_uid(rng), namespace=ns, project=ns.split("-")[0],
            source_type=kind, repo_url=repo_url, path=path, chart=chart, target_revision=target,
            revision=revision, desired=desired, created=created, shard=i % 2, health="Healthy",
            sync="Synced", failure=None, failed_resource=None, op_started=op_finished - rng.randrange(1, 30),
            op_finished=op_finished, history=history, deployments=deps))

    # states: ~5% Degraded (a crash-looping Deployment), ~2% failed sync, some OutOfSync/Progressing
    order = list(range(p.apps))
    rng.shuffle(order)
    n_degraded = round(p.apps * 0.05)
    n_failed = round(p.apps * 0.02)
    with_pods = [i for i in order if any(d.replicas for d in apps[i].deployments)]
    degraded = set(with_pods[:n_degraded])
    for i in degraded:
        a = apps[i]
        d = rng.choice([d for d in a.deployments if d.replicas])
        d.crashloop = True
        for pod in d.pods:
            pod.restarts = rng.randrange(5, 400)
        a.health = "Degraded"
    rest = [i for i in order if i not in degraded and apps[i].deployments]
    for i in rest[:n_failed]:
        a = apps[i]
        fkind = rng.choice(failure_kinds)
        d = rng.choice(a.deployments)
        if a.source_type == "Helm":
            parts = a.revision.split(".")
            a.desired = f"{parts[0]}.{parts[1]}.{int(parts[2]) + 1}"
        else:
            a.desired = git_sha(rng)
        a.sync = "OutOfSync"
        a.op_finished = COLLECTED_AT - LOG_SPAN + rng.randrange(LOG_SPAN // 10, LOG_SPAN * 9 // 10)
        a.op_started = a.op_finished - rng.randrange(20, 40)
        if fkind == "webhook":
            hook, url = rng.choice(WEBHOOKS)
            a.failure = (f'Internal error occurred: failed calling webhook "{hook}": failed to call webhook: '
                         f'Post "{url}?timeout=10s": tls: failed to verify certificate: '
                         f"x509: certificate signed by unknown authority")
        else:
            a.failure = (f'Deployment.apps "{d.name}" is invalid: spec.template.spec.containers[0].image: '
                         f"Required value")
        a.failed_resource = ("apps", "Deployment", d.name)
    for i in rest[n_failed:n_failed + round(p.apps * 0.03)]:
        apps[i].sync = "OutOfSync"
        apps[i].desired = apps[i].revision if apps[i].source_type == "Helm" else git_sha(rng)
    for i in rest[n_failed + round(p.apps * 0.03):n_failed + round(p.apps * 0.04)]:
        apps[i].health = "Progressing"

    # the Argo CD install: pods whose logs are in the bundle
    uids = {k: new_uid(rng) for k in ("controller-sts", "repo-deploy", "repo-rs", "server-deploy", "server-rs",
                                      "controller-svc", "repo-svc", "server-svc", "argocd-cm",
                                      "argocd-cmd-params-cm", "argocd-rbac-cm", "argocd-ns")}
    repo_hash, server_hash = suffix(rng, 10), suffix(rng, 10)
    argo: list[ArgoPod] = []
    started = COLLECTED_AT - 9 * 86400
    ip_base = 0
    for k in range(2):
        argo.append(ArgoPod("application-controller", f"argocd-application-controller-{k}", new_uid(rng),
                            rng.randrange(n_nodes), f"10.99.0.{10 + ip_base}", "StatefulSet",
                            "argocd-application-controller", uids["controller-sts"], started, 0, None))
        ip_base += 1
    for k in range(4):
        oom = COLLECTED_AT - 2 * 3600 - 17 * 60 if k == 1 else None
        argo.append(ArgoPod("repo-server", f"argocd-repo-server-{repo_hash}-{suffix(rng, 5)}", new_uid(rng),
                            rng.randrange(n_nodes), f"10.99.0.{10 + ip_base}", "ReplicaSet",
                            f"argocd-repo-server-{repo_hash}", uids["repo-rs"], started, 1 if oom else 0, oom))
        ip_base += 1
    for _ in range(2):
        argo.append(ArgoPod("server", f"argocd-server-{server_hash}-{suffix(rng, 5)}", new_uid(rng),
                            rng.randrange(n_nodes), f"10.99.0.{10 + ip_base}", "ReplicaSet",
                            f"argocd-server-{server_hash}", uids["server-rs"], started, 0, None))
        ip_base += 1
    return Model(params=p, nodes=nodes, namespaces=namespaces, apps=apps, deployments=deployments,
                 argocd=argo, argocd_uids=uids, install_id=rng.randrange(10_000_000, 60_000_000))


# --------------------------------------------------------------------------------------------
# Kubernetes objects


def _meta(name: str, namespace: str | None, uid: str, created: int, rng: random.Random,
          labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Obj:
    m: Obj = {"creationTimestamp": iso(created), "name": name, "resourceVersion": str(rng.randrange(10**6, 10**9)),
              "uid": uid}
    if namespace is not None:
        m["namespace"] = namespace
    if labels:
        m["labels"] = labels
    if annotations:
        m["annotations"] = annotations
    return m


def _owner(api_version: str, kind: str, name: str, uid: str) -> list[Obj]:
    return [{"apiVersion": api_version, "blockOwnerDeletion": True, "controller": True, "kind": kind,
             "name": name, "uid": uid}]


def _labels(d: DeployRec) -> dict[str, str]:
    return {"app.kubernetes.io/instance": d.app, "app.kubernetes.io/name": d.name,
            "app.kubernetes.io/part-of": d.namespace.split("-")[0]}


def _image_ref(d: DeployRec) -> str:
    return f"{d.image}:1.{d.revision}.{d.revision * 7 % 13}"


def _containers(d: DeployRec) -> list[Obj]:
    main: Obj = {
        "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "PORT", "value": "8080"},
                {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability:4317"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"key": "password", "name": f"{d.name}-db"}}}],
        "image": _image_ref(d), "imagePullPolicy": "IfNotPresent", "name": "app",
        "livenessProbe": {"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                          "initialDelaySeconds": 10, "periodSeconds": 10, "successThreshold": 1,
                          "timeoutSeconds": 1},
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"},
                  {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}],
        "readinessProbe": {"failureThreshold": 3, "httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                           "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 1},
        "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    }
    out = [main]
    if d.sidecar:
        out.append({"args": ["--config=/fluent-bit/etc/fluent-bit.conf"], "image": "fluent/fluent-bit:3.1.9",
                    "imagePullPolicy": "IfNotPresent", "name": "log-shipper",
                    "resources": {"limits": {"memory": "128Mi"}, "requests": {"cpu": "20m", "memory": "64Mi"}},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                    "volumeMounts": [{"mountPath": "/fluent-bit/etc", "name": "fluent-bit-config"}]})
    return out


def _pod_template(d: DeployRec, pod_hash: str | None) -> Obj:
    labels = _labels(d)
    if pod_hash:
        labels["pod-template-hash"] = pod_hash
    spec: Obj = {"containers": _containers(d), "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                 "schedulerName": "default-scheduler", "securityContext": {}, "serviceAccountName": d.name,
                 "serviceAccount": d.name, "terminationGracePeriodSeconds": 30}
    if d.sidecar:
        spec["volumes"] = [{"configMap": {"defaultMode": 420, "name": f"{d.name}-fluent-bit"},
                            "name": "fluent-bit-config"}]
    return {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": spec}


def deployment_obj(d: DeployRec, rng: random.Random) -> Obj:
    """A Deployment as kubectl shows it, with status matching its pods."""
    ready = 0 if d.crashloop else d.replicas
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"labels": _labels(d), "name": d.name, "namespace": d.namespace},
                "spec": {"replicas": d.replicas, "selector": {"matchLabels": {"app.kubernetes.io/name": d.name}},
                         "template": _pod_template(d, None)}}
    status: Obj = {"observedGeneration": d.revision + 3, "replicas": d.replicas, "updatedReplicas": d.replicas}
    if d.replicas:
        status["readyReplicas"] = ready
        status["availableReplicas"] = ready
    if d.replicas - ready:
        status["unavailableReplicas"] = d.replicas - ready
    if d.crashloop:
        conditions = [
            {"lastTransitionTime": iso(d.rolled + 60), "lastUpdateTime": iso(d.rolled + 60),
             "message": "Deployment does not have minimum availability.", "reason": "MinimumReplicasUnavailable",
             "status": "False", "type": "Available"},
            {"lastTransitionTime": iso(d.rolled + 660), "lastUpdateTime": iso(d.rolled + 660),
             "message": f'ReplicaSet "{d.rs_name}" has timed out progressing.',
             "reason": "ProgressDeadlineExceeded", "status": "False", "type": "Progressing"}]
    else:
        conditions = [
            {"lastTransitionTime": iso(d.rolled + 40), "lastUpdateTime": iso(d.rolled + 40),
             "message": "Deployment has minimum availability.", "reason": "MinimumReplicasAvailable",
             "status": "True", "type": "Available"},
            {"lastTransitionTime": iso(d.created), "lastUpdateTime": iso(d.rolled + 40),
             "message": f'ReplicaSet "{d.rs_name}" has successfully progressed.',
             "reason": "NewReplicaSetAvailable", "status": "True", "type": "Progressing"}]
    status["conditions"] = conditions
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _meta(d.name, d.namespace, d.uid, d.created, rng, _labels(d), {
            "deployment.kubernetes.io/revision": str(d.revision),
            "kubectl.kubernetes.io/last-applied-configuration":
                json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n"}) | {"generation": d.revision + 3},
        "spec": {"progressDeadlineSeconds": 600, "replicas": d.replicas, "revisionHistoryLimit": 10,
                 "selector": {"matchLabels": {"app.kubernetes.io/name": d.name}},
                 "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                              "type": "RollingUpdate"},
                 "template": _pod_template(d, None)},
        "status": status,
    }


def replicaset_objs(d: DeployRec, rng: random.Random) -> list[Obj]:
    """The current ReplicaSet of a Deployment and, for some, the previous scaled-down one."""
    out = []
    sets = [(d.rs_hash, d.rs_uid, d.replicas, d.revision, d.rolled)]
    if d.old_rs:
        sets.insert(0, (d.old_rs[0], d.old_rs[1], 0, max(1, d.revision - 1), max(d.created, d.rolled - 86400 * 7)))
    for pod_hash, uid, reps, rev, created in sets:
        ready = 0 if d.crashloop else reps
        labels = _labels(d) | {"pod-template-hash": pod_hash}
        status: Obj = {"observedGeneration": 2, "replicas": reps}
        if reps:
            status |= {"availableReplicas": ready, "fullyLabeledReplicas": reps, "readyReplicas": ready}
        out.append({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": _meta(f"{d.name}-{pod_hash}", d.namespace, uid, created, rng, labels, {
                "deployment.kubernetes.io/desired-replicas": str(d.replicas),
                "deployment.kubernetes.io/max-replicas": str(d.replicas + math.ceil(d.replicas / 4)),
                "deployment.kubernetes.io/revision": str(rev)})
            | {"generation": 2, "ownerReferences": _owner("apps/v1", "Deployment", d.name, d.uid)},
            "spec": {"replicas": reps,
                     "selector": {"matchLabels": {"app.kubernetes.io/name": d.name, "pod-template-hash": pod_hash}},
                     "template": _pod_template(d, pod_hash)},
            "status": status,
        })
    return out


def _container_status(name: str, image: str, digest: str, rng: random.Random, start: int, restarts: int,
                      crash: bool, pod: str, oom_at: int | None = None) -> Obj:
    cid = f"containerd://{hex_id(rng)}"
    st: Obj = {"containerID": cid, "image": image, "imageID": f"{image.rsplit(':', 1)[0]}@sha256:{digest}",
               "name": name, "restartCount": restarts}
    if crash:
        last = COLLECTED_AT - rng.randrange(10, 290)
        st |= {"lastState": {"terminated": {"containerID": f"containerd://{hex_id(rng)}", "exitCode": 1,
                                            "finishedAt": iso(last), "reason": "Error",
                                            "startedAt": iso(last - rng.randrange(1, 8))}},
               "ready": False, "started": False,
               "state": {"waiting": {"message": f"back-off 5m0s restarting failed container={name} pod={pod}",
                                     "reason": "CrashLoopBackOff"}}}
    else:
        last_state: Obj = {}
        if oom_at:
            last_state = {"terminated": {"containerID": f"containerd://{hex_id(rng)}", "exitCode": 137,
                                         "finishedAt": iso(oom_at), "reason": "OOMKilled", "startedAt": iso(start)}}
            start = oom_at + 1
        elif restarts:
            t = start + rng.randrange(60, 86400)
            last_state = {"terminated": {"containerID": f"containerd://{hex_id(rng)}", "exitCode": 2,
                                         "finishedAt": iso(t), "reason": "Error", "startedAt": iso(start)}}
            start = t + 1
        st |= {"lastState": last_state, "ready": True, "started": True,
               "state": {"running": {"startedAt": iso(start)}}}
    return st


def _pod_conditions(start: int, ready: bool, unready: list[str]) -> list[Obj]:
    msg = {"message": f"containers with unready status: [{' '.join(unready)}]", "reason": "ContainersNotReady"}
    return [
        {"lastProbeTime": None, "lastTransitionTime": iso(start + 3), "status": "True",
         "type": "PodReadyToStartContainers"},
        {"lastProbeTime": None, "lastTransitionTime": iso(start), "status": "True", "type": "Initialized"},
        {"lastProbeTime": None, "lastTransitionTime": iso(start + 9), "status": "True" if ready else "False",
         "type": "Ready"} | ({} if ready else msg),
        {"lastProbeTime": None, "lastTransitionTime": iso(start + 9), "status": "True" if ready else "False",
         "type": "ContainersReady"} | ({} if ready else msg),
        {"lastProbeTime": None, "lastTransitionTime": iso(start - 1), "status": "True", "type": "PodScheduled"},
    ]


def _api_access_volume(name: str) -> Obj:
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}}]}}


_TOLERATIONS = [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "tolerationSeconds": 300}]


def pod_obj(d: DeployRec, p: PodRec, nodes: Sequence[tuple[str, str, str, str]], rng: random.Random) -> Obj:
    """A running (or crash-looping) pod of a Deployment's current ReplicaSet."""
    node_name, node_ip = nodes[p.node][0], nodes[p.node][1]
    vol = f"kube-api-access-{suffix(rng, 5)}"
    containers = []
    statuses = []
    for c in _containers(d):
        c["volumeMounts"] = [*c.get("volumeMounts", []),
                             {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": vol,
                              "readOnly": True}]
        containers.append(c)
        crash = d.crashloop and c["name"] == "app"
        statuses.append(_container_status(c["name"], c["image"], d.digest, rng, p.start,
                                          p.restarts if c["name"] == "app" else 0, crash, p.name))
    volumes = [_api_access_volume(vol)]
    if d.sidecar:
        volumes.insert(0, {"configMap": {"defaultMode": 420, "name": f"{d.name}-fluent-bit"},
                           "name": "fluent-bit-config"})
    ready = not d.crashloop
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _meta(p.name, d.namespace, p.uid, p.start - 2, rng,
                          _labels(d) | {"pod-template-hash": d.rs_hash},
                          {"kubectl.kubernetes.io/restartedAt": iso(d.rolled)} if d.revision % 3 == 0 else None)
        | {"generateName": f"{d.rs_name}-", "ownerReferences": _owner("apps/v1", "ReplicaSet", d.rs_name, d.rs_uid)},
        "spec": {"containers": containers, "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
                 "nodeName": node_name, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
                 "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {},
                 "serviceAccount": d.name, "serviceAccountName": d.name, "terminationGracePeriodSeconds": 30,
                 "tolerations": _TOLERATIONS, "volumes": volumes},
        "status": {"conditions": _pod_conditions(p.start, ready, ["app"]), "containerStatuses": statuses,
                   "hostIP": node_ip, "hostIPs": [{"ip": node_ip}], "phase": "Running", "podIP": p.ip,
                   "podIPs": [{"ip": p.ip}], "qosClass": "Burstable", "startTime": iso(p.start)},
    }


def service_obj(d: DeployRec, rng: random.Random) -> Obj:
    """The ClusterIP Service in front of a Deployment."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": _meta(d.name, d.namespace, d.svc_uid, d.created, rng, _labels(d)),
        "spec": {"clusterIP": d.svc_ip, "clusterIPs": [d.svc_ip], "internalTrafficPolicy": "Cluster",
                 "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
                           {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": "metrics"}],
                 "selector": {"app.kubernetes.io/name": d.name}, "sessionAffinity": "None", "type": "ClusterIP"},
        "status": {"loadBalancer": {}},
    }


def backoff_events(d: DeployRec, nodes: Sequence[tuple[str, str, str, str]], rng: random.Random) -> list[Obj]:
    """kubelet BackOff Events of a crash-looping Deployment's pods."""
    out = []
    for p in d.pods:
        last = COLLECTED_AT - rng.randrange(5, 300)
        out.append({
            "apiVersion": "v1", "count": p.restarts * 4 + rng.randrange(4), "eventTime": None,
            "firstTimestamp": iso(p.start + 30),
            "involvedObject": {"apiVersion": "v1", "fieldPath": "spec.containers{app}", "kind": "Pod",
                               "name": p.name, "namespace": d.namespace,
                               "resourceVersion": str(rng.randrange(10**6, 10**9)), "uid": p.uid},
            "kind": "Event", "lastTimestamp": iso(last),
            "message": f"Back-off restarting failed container app in pod {p.name}_{d.namespace}({p.uid})",
            "metadata": _meta(f"{p.name}.{rng.getrandbits(64):016x}", d.namespace, new_uid(rng), p.start + 30,
                              rng),
            "reason": "BackOff", "reportingComponent": "kubelet", "reportingInstance": nodes[p.node][0],
            "source": {"component": "kubelet", "host": nodes[p.node][0]}, "type": "Warning",
        })
    return out


def application_obj(a: AppRec, rng: random.Random) -> Obj:
    """An Argo CD Application with a realistic full status."""
    dest = {"namespace": a.namespace, "server": CLUSTER_SERVER}
    source: Obj = {"repoURL": a.repo_url, "targetRevision": a.target_revision}
    if a.source_type == "Helm":
        source |= {"chart": a.chart, "helm": {"releaseName": a.name, "valueFiles": [f"values-{a.namespace}.yaml"]}}
    else:
        source["path"] = a.path
    resources: list[Obj] = []
    images: list[str] = []
    for d in a.deployments:
        dep_health: Obj = {"status": "Healthy"}
        if d.crashloop:
            dep_health = {"message": f'Deployment "{d.name}" exceeded its progress deadline', "status": "Degraded"}
        elif a.health == "Progressing":
            dep_health = {"message": f'Waiting for rollout to finish: 1 of {max(d.replicas, 1)} updated replicas '
                                     f"are available...", "status": "Progressing"}
        dep_sync = "OutOfSync" if a.failed_resource and a.failed_resource[2] == d.name else "Synced"
        resources.append({"group": "apps", "health": dep_health, "kind": "Deployment", "name": d.name,
                          "namespace": a.namespace, "status": dep_sync, "version": "v1"})
        resources.append({"health": {"status": "Healthy"}, "kind": "Service", "name": d.name,
                          "namespace": a.namespace, "status": "Synced", "version": "v1"})
        images.append(_image_ref(d))
        if d.sidecar:
            images.append("fluent/fluent-bit:3.1.9")
    resources.sort(key=lambda r: (r.get("group", ""), r["kind"], r["name"]))
    history = []
    for k, (rev, deployed) in enumerate(a.history):
        history.append({"deployStartedAt": iso(deployed - rng.randrange(1, 20)), "deployedAt": iso(deployed),
                        "id": k, "initiatedBy": {"automated": True}, "revision": rev, "source": source})
    op_resources = []
    for r in resources:
        failed = a.failed_resource is not None and r["kind"] == a.failed_resource[1] \
            and r["name"] == a.failed_resource[2]
        entry: Obj = {"group": r.get("group", ""), "hookPhase": "Running", "kind": r["kind"],
                      "message": f"{r['kind'].lower()}{'.apps' if r.get('group') else ''}/{r['name']} "
                                 f"{'configured' if rng.random() < 0.3 else 'unchanged'}",
                      "name": r["name"], "namespace": r["namespace"], "status": "Synced", "syncPhase": "Sync",
                      "version": "v1"}
        if failed:
            entry |= {"hookPhase": "Failed", "message": a.failure, "status": "SyncFailed"}
        op_resources.append(entry)
    phase = "Failed" if a.failure else "Succeeded"
    op_rev = a.desired if a.failure else a.revision
    operation_state: Obj = {
        "finishedAt": iso(a.op_finished),
        "message": (f"one or more objects failed to apply, reason: {a.failure} (retried 5 times)."
                    if a.failure else "successfully synced (all tasks run)"),
        "operation": {"initiatedBy": {"automated": True}, "retry": {"limit": 5},
                      "sync": {"revision": op_rev, "syncOptions": ["CreateNamespace=true", "PruneLast=true"]}},
        "phase": phase, "startedAt": iso(a.op_started),
        "syncResult": {"resources": op_resources, "revision": op_rev, "source": source},
    }
    if a.failure:
        operation_state["retryCount"] = 5
    annotations = {}
    if a.index % 4 == 0:
        annotations["notifications.argoproj.io/subscribe.on-sync-failed.slack"] = f"{a.project}-alerts"
    if a.index % 7 == 0:
        annotations["notifications.argoproj.io/subscribe.on-health-degraded.webhook"] = "rollout-doctor"
    status: Obj = {
        "controllerNamespace": ARGOCD_NS,
        "health": {"lastTransitionTime": iso(COLLECTED_AT - rng.randrange(60, 86400 * 3)), "status": a.health},
        "history": history, "operationState": operation_state,
        "reconciledAt": iso(COLLECTED_AT - rng.randrange(1, 180)), "resources": resources,
        "sourceType": a.source_type, "summary": {"images": sorted(set(images))} if images else {},
        "sync": {"comparedTo": {"destination": dest, "source": source}, "revision": a.desired, "status": a.sync},
    }
    if a.failure:
        status["conditions"] = [{"lastTransitionTime": iso(a.op_finished), "message": a.failure,
                                 "type": "SyncError"}]
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": _meta(a.name, ARGOCD_NS, a.uid, a.created, rng,
                          {"team": a.project, "env": "prod" if a.index % 3 else "staging"}, annotations)
        | {"finalizers": ["resources-finalizer.argocd.argoproj.io"], "generation": rng.randrange(100, 90000)},
        "spec": {"destination": dest, "project": a.project, "source": source,
                 "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                                "retry": {"backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"},
                                          "limit": 5},
                                "syncOptions": ["CreateNamespace=true", "PruneLast=true"]}},
        "status": status,
    }


def project_objs(m: Model, rng: random.Random) -> list[Obj]:
    """One AppProject per team, plus ``default``."""
    teams = sorted({a.project for a in m.apps})
    out = [{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
            "metadata": _meta("default", ARGOCD_NS, new_uid(rng), COLLECTED_AT - 800 * 86400, rng),
            "spec": {"clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
                     "destinations": [{"namespace": "*", "server": "*"}], "sourceRepos": ["*"]}}]
    for t in teams:
        out.append({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
                    "metadata": _meta(t, ARGOCD_NS, new_uid(rng), COLLECTED_AT - 700 * 86400, rng),
                    "spec": {"description": f"Applications of team {t}",
                             "destinations": [{"namespace": f"{t}-*", "server": CLUSTER_SERVER}],
                             "namespaceResourceWhitelist": [{"group": "*", "kind": "*"}],
                             "sourceRepos": [f"https://github.com/acme/{t}-gitops.git", "https://charts.acme.io"]}})
    return out


def node_obj(i: int, node: tuple[str, str, str, str], rng: random.Random) -> Obj:
    """A Ready worker node."""
    name, ip, zone, itype = node
    cpu, mem = {"m6i.2xlarge": (8, 32), "m6i.4xlarge": (16, 64), "c6i.4xlarge": (16, 32),
                "r6i.2xlarge": (8, 64)}[itype]
    hb = COLLECTED_AT - rng.randrange(1, 40)
    conds = [(t, "False", r, msg) for t, r, msg in (
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))]
    conds.append(("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
    images = [{"names": [f"registry.acme.io/base/image-{k}@sha256:{hex_id(rng)}",
                         f"registry.acme.io/base/image-{k}:1.{k}"],
               "sizeBytes": rng.randrange(10**7, 10**9)} for k in range(8)]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": _meta(name, None, new_uid(rng), COLLECTED_AT - rng.randrange(10, 90) * 86400, rng, {
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": itype, "topology.kubernetes.io/region": "eu-west-1",
            "topology.kubernetes.io/zone": zone}, {"node.alpha.kubernetes.io/ttl": "0",
                                                   "volumes.kubernetes.io/controller-managed-attach-detach": "true"}),
        "spec": {"podCIDR": f"10.{100 + i // 256}.{i % 256}.0/24",
                 "providerID": f"aws:///{zone}/i-0{rng.getrandbits(64):016x}"},
        "status": {
            "addresses": [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "Hostname"},
                          {"address": name, "type": "InternalDNS"}],
            "allocatable": {"cpu": f"{cpu * 1000 - 90}m", "ephemeral-storage": "95551679124",
                            "memory": f"{mem * 1024 * 1024 - 1500000}Ki", "pods": "110"},
            "capacity": {"cpu": str(cpu), "ephemeral-storage": "104845292Ki", "memory": f"{mem * 1024 * 1024}Ki",
                         "pods": "110"},
            "conditions": [{"lastHeartbeatTime": iso(hb), "lastTransitionTime": iso(COLLECTED_AT - 9 * 86400),
                            "message": msg, "reason": r, "status": s, "type": t} for t, s, r, msg in conds],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {"architecture": "amd64", "bootID": new_uid(rng), "containerRuntimeVersion": "containerd://1.7.22",
                         "kernelVersion": "6.1.112-122.189.amzn2023.x86_64", "kubeProxyVersion": K8S_VERSION,
                         "kubeletVersion": K8S_VERSION, "machineID": hex_id(rng, 128),
                         "operatingSystem": "linux", "osImage": "Amazon Linux 2023.6.20241010",
                         "systemUUID": new_uid(rng)},
        },
    }


def namespace_obj(name: str, rng: random.Random) -> Obj:
    """An Active Namespace."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": _meta(name, None, new_uid(rng), COLLECTED_AT - 800 * 86400, rng,
                              {"kubernetes.io/metadata.name": name}),
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def argocd_objs(m: Model, rng: random.Random) -> list[Obj]:
    """The Argo CD install: ConfigMaps, workloads and the pods whose logs are in the bundle."""
    u = m.argocd_uids
    created = COLLECTED_AT - 400 * 86400
    out: list[Obj] = [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": _meta("argocd-cm", ARGOCD_NS, u["argocd-cm"], created, rng,
                           {"app.kubernetes.io/part-of": "argocd"}),
         "data": {"url": "https://argocd.acme.io", "timeout.reconciliation": "180s",
                  "application.instanceLabelKey": "app.kubernetes.io/instance",
                  "resource.exclusions": "- apiGroups:\n  - cilium.io\n  kinds:\n  - CiliumIdentity\n  clusters:\n"
                                         "  - '*'\n",
                  "oidc.config": "name: SSO\nissuer: https://sso.acme.io/realms/main\nclientID: argocd\n"}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": _meta("argocd-cmd-params-cm", ARGOCD_NS, u["argocd-cmd-params-cm"], created, rng,
                           {"app.kubernetes.io/part-of": "argocd"}),
         "data": {"controller.status.processors": "50", "controller.operation.processors": "25",
                  "controller.sharding.algorithm": "round-robin", "reposerver.parallelism.limit": "10",
                  "server.insecure": "true"}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": _meta("argocd-rbac-cm", ARGOCD_NS, u["argocd-rbac-cm"], created, rng,
                           {"app.kubernetes.io/part-of": "argocd"}),
         "data": {"policy.default": "role:readonly", "policy.csv": "g, acme:platform, role:admin\n"}},
    ]
    comps = {"application-controller": ("StatefulSet", "argocd-application-controller", u["controller-sts"], 2),
             "repo-server": ("Deployment", "argocd-repo-server", u["repo-deploy"], 4),
             "server": ("Deployment", "argocd-server", u["server-deploy"], 2)}
    for comp, (kind, name, uid, reps) in comps.items():
        labels = {"app.kubernetes.io/component": comp, "app.kubernetes.io/instance": "argocd",
                  "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "argocd"}
        container: Obj = {"args": [f"/usr/local/bin/{name}", "--loglevel", "info"], "image": ARGOCD_IMAGE,
                     "imagePullPolicy": "IfNotPresent", "name": comp,
                     "resources": {"limits": {"memory": "2Gi" if comp == "repo-server" else "4Gi"},
                                   "requests": {"cpu": "500m", "memory": "1Gi"}}}
        if comp == "application-controller":
            container["env"] = [{"name": "ARGOCD_CONTROLLER_REPLICAS", "value": str(reps)}]
        template = {"metadata": {"labels": {"app.kubernetes.io/name": name}},
                    "spec": {"containers": [container], "serviceAccountName": name}}
        workload: Obj = {"apiVersion": "apps/v1", "kind": kind,
                         "metadata": _meta(name, ARGOCD_NS, uid, created, rng, labels) | {"generation": 7},
                         "spec": {"replicas": reps, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                                  "template": template},
                         "status": {"availableReplicas": reps, "observedGeneration": 7, "readyReplicas": reps,
                                    "replicas": reps, "updatedReplicas": reps}}
        if kind == "StatefulSet":
            workload["spec"]["serviceName"] = name
        out.append(workload)
        if kind == "Deployment":
            pod = next(p for p in m.argocd if p.component == comp)
            out.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": _meta(pod.owner_name, ARGOCD_NS, pod.owner_uid, pod.start - 5, rng, labels)
                        | {"ownerReferences": _owner("apps/v1", "Deployment", name, uid)},
                        "spec": {"replicas": reps, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                                 "template": template},
                        "status": {"availableReplicas": reps, "fullyLabeledReplicas": reps, "observedGeneration": 1,
                                   "readyReplicas": reps, "replicas": reps}})
        for p in (p for p in m.argocd if p.component == comp):
            node_name, node_ip = m.nodes[p.node][0], m.nodes[p.node][1]
            status = _container_status(comp, ARGOCD_IMAGE, "3f1e" * 16, rng, p.start, p.restarts, False, p.name,
                                       p.oom_at)
            out.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": _meta(p.name, ARGOCD_NS, p.uid, p.start - 2, rng, labels)
                        | {"ownerReferences": _owner("apps/v1", p.owner_kind, p.owner_name, p.owner_uid)},
                        "spec": {"containers": [container], "nodeName": node_name, "serviceAccountName": name,
                                 "restartPolicy": "Always"},
                        "status": {"conditions": _pod_conditions(p.start, True, []), "containerStatuses": [status],
                                   "hostIP": node_ip, "phase": "Running", "podIP": p.ip, "qosClass": "Burstable",
                                   "startTime": iso(p.start)}})
    return out


# --------------------------------------------------------------------------------------------
# Object file tasks (run in worker processes)


@dataclass
class ObjectTask:
    """Write one object file."""

    relpath: str
    fmt: str  # yaml (multi-document) | json-list | yaml-list
    builder: str
    records: list[Any]
    extra: Any = None


def _build_objects(task: ObjectTask, rng: random.Random) -> list[Obj]:
    b = task.builder
    if b == "apps":
        return [application_obj(a, rng) for a in task.records]
    if b == "deployments":
        return [deployment_obj(d, rng) for d in task.records]
    if b == "replicasets":
        return [o for d in task.records for o in replicaset_objs(d, rng)]
    if b == "services":
        return [service_obj(d, rng) for d in task.records]
    if b == "pods":
        return [pod_obj(d, p, task.extra, rng) for d, p in task.records]
    if b == "events":
        return [o for d in task.records for o in backoff_events(d, task.extra, rng)]
    if b == "nodes":
        return [node_obj(i, n, rng) for i, n in enumerate(task.records)]
    if b == "namespaces":
        return [namespace_obj(n, rng) for n in task.records]
    if b == "projects":
        return project_objs(task.records[0], rng)
    if b == "argocd":
        return argocd_objs(task.records[0], rng)
    raise ValueError(f"unknown builder {b}")


def run_object_task(out: str, seed: int, task: ObjectTask) -> int:
    """Build and write one object file; return its size in bytes."""
    rng = random.Random(f"{seed}/{task.relpath}")
    objs = _build_objects(task, rng)
    if task.fmt == "json-list":
        text = json.dumps(kube_list(objs), indent=4, sort_keys=True) + "\n"
    elif task.fmt == "yaml-list":
        text = to_yaml(kube_list(objs))
    else:
        text = "---\n".join(to_yaml(o) for o in objs)
    path = Path(out, task.relpath)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")
    return len(text)


# --------------------------------------------------------------------------------------------
# Log line formats


_TEXT_PLAIN = re.compile(r"[A-Za-z0-9\-._/@^+]*\Z")


def _go_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _text_value(v: Any) -> str:
    s = _go_str(v)
    return s if _TEXT_PLAIN.match(s) else json.dumps(s)


def _html_escape(s: str) -> str:
    """Go's encoding/json escapes <, > and & by default (logrus JSON, apiserver audit log)."""
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def variant_text(level: str, msg: str, fields: Fields) -> Variant:
    """A logrus TextFormatter line split around its time value."""
    parts = [f"level={level}", f"msg={_text_value(msg)}"]
    parts += [f"{k}={_text_value(fields[k])}" for k in sorted(fields)]
    return 'time="', 'Z" ' + " ".join(parts) + "\n"


def variant_json(level: str, msg: str, fields: Fields) -> Variant:
    """A logrus JSONFormatter line split around its time value."""
    d = dict(fields)
    d |= {"level": level, "msg": msg, "time": "@@TIME@@"}
    pre, post = _html_escape(json.dumps(d, sort_keys=True, separators=(",", ":"))).split("@@TIME@@")
    return pre, "Z" + post + "\n"


# --------------------------------------------------------------------------------------------
# Log messages. Each template returns (level, msg, fields) for one random line.


@dataclass
class LogCtx:
    """What a log file's lines may talk about."""

    apps: list[tuple[str, str, str, str, str]]  # (name, dest namespace, source str, revision, chart/path)
    failed: list[tuple[str, str, str, str, str]]  # (name, dest namespace, desired revision, failure, deployment)
    install_id: int


Template = Callable[[random.Random, LogCtx], Message]


def _ms(rng: random.Random, scale: float) -> int:
    return int(rng.expovariate(1 / scale))


def _app(rng: random.Random, ctx: LogCtx) -> tuple[str, str, str, str, str]:
    return rng.choice(ctx.apps)


def c_refresh(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    reason, lvl = rng.choice([("controller refresh requested", 1), ("controller refresh requested", 2),
                              ("normal refresh requested", 2), ("spec.source differs", 3)])
    return "info", f"Refreshing app status ({reason}), level ({lvl})", {"application": f"argocd/{a[0]}"}


def c_compare(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    return ("info", f"Comparing app state (cluster: {CLUSTER_SERVER}, namespace: {a[1]})",
            {"application": f"argocd/{a[0]}"})


def c_stats(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    t = _ms(rng, 40)
    return "info", "getRepoObjs stats", {"application": f"argocd/{a[0]}", "build_options_ms": 0,
                                         "helm_ms": 0, "plugins_ms": 0, "repo_ms": 0, "time_ms": t,
                                         "unmarshal_ms": t // 2, "version_ms": 0}


def c_completed(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    git, diff, live = _ms(rng, 30), _ms(rng, 8), _ms(rng, 3)
    return "info", "Reconciliation completed", {
        "application": f"argocd/{a[0]}", "dedup_ms": 0, "dest-name": "", "dest-namespace": a[1],
        "dest-server": CLUSTER_SERVER, "diff_ms": diff, "fields.level": rng.choice([1, 2, 2, 3]), "git_ms": git,
        "health_ms": _ms(rng, 1), "live_ms": live, "patch_ms": _ms(rng, 2), "setop_ms": 0, "settings_ms": 0,
        "sync_ms": 0, "time_ms": git + diff + live + _ms(rng, 5)}


def c_skip(rng: random.Random, ctx: LogCtx) -> Message:
    return "info", "Skipping auto-sync: application status is Synced", {"application": f"argocd/{_app(rng, ctx)[0]}"}


def c_nochange(rng: random.Random, ctx: LogCtx) -> Message:
    return "info", "No status changes. Skipping patch", {"application": f"argocd/{_app(rng, ctx)[0]}"}


def c_updated(rng: random.Random, ctx: LogCtx) -> Message:
    return "info", "Update successful", {"application": f"argocd/{_app(rng, ctx)[0]}"}


def c_autosync(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    return "info", f"Initiated automated sync to '{a[3]}'", {"application": f"argocd/{a[0]}"}


def c_op_succeeded(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    return "info", f"updated 'argocd/{a[0]}' operation (phase: Succeeded)", {"application": f"argocd/{a[0]}"}


def c_error(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    k = rng.randrange(3)
    if k == 0:
        return "error", (f'Failed to update application status: Operation cannot be fulfilled on '
                         f'applications.argoproj.io "{a[0]}": the object has been modified; please apply your '
                         f"changes to the latest version and try again"), {"application": f"argocd/{a[0]}"}
    if k == 1:
        return "error", "Failed to cache app resources: failed to get cluster info for " \
                        f'"{CLUSTER_SERVER}": error synchronizing cache state : failed to sync cluster ' \
                        "https://172.20.0.1:443: failed to load initial state of resource " \
                        "Ingress.networking.k8s.io: context deadline exceeded", {"application": f"argocd/{a[0]}"}
    return "error", ("rpc error: code = DeadlineExceeded desc = context deadline exceeded"), {
        "application": f"argocd/{a[0]}"}


def c_webhook(rng: random.Random, ctx: LogCtx) -> Message:
    if not ctx.failed:
        return c_error(rng, ctx)
    name, ns, _desired, failure, dep = rng.choice(ctx.failed)
    return "info", (f"Adding resource result, status: 'SyncFailed', phase: 'Sync', message: '{failure}'"), {
        "application": f"argocd/{name}", "kind": "Deployment", "name": dep, "namespace": ns, "phase": "Sync",
        "syncId": f"{rng.randrange(1, 99999):05d}-{suffix(rng, 5)}"}


def r_hit(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    return "info", f"manifest cache hit: {a[2]}/{a[3]}", {}


def r_miss(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    return "info", f"manifest cache miss: {a[2]}/{a[3]}", {}


def _grpc(service: str, method: str, code: str, t: float) -> Fields:
    return {"grpc.code": code, "grpc.method": method, "grpc.service": service, "grpc.time_ms": round(t, 3),
            "span.kind": "server", "system": "grpc"}


def r_unary(rng: random.Random, ctx: LogCtx) -> Message:
    return "info", "finished unary call with code OK", _grpc(
        "repository.RepoServerService", rng.choice(GRPC_REPO_METHODS), "OK", rng.expovariate(1 / 25))


def r_trace(rng: random.Random, ctx: LogCtx) -> Message:
    args = rng.choice(["[git rev-parse HEAD]", "[git fetch origin --tags --force --prune]",
                       "[git checkout --force FETCH_HEAD]", "[git clean -ffdx]", "[git ls-remote origin]"])
    return "info", "Trace", {"args": args, "dir": f"/tmp/_argocd-repo/{new_uid(rng)}", "operation_name": "exec git",
                             "time_ms": round(rng.expovariate(1 / 60), 6)}


def r_helm(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    return "info", (f"helm template . --name-template {a[0]} --namespace {a[1]} --kube-version 1.30 "
                    f"--values /tmp/{new_uid(rng)}/values-{a[1]}.yaml <api versions removed> --include-crds"), {
        "dir": f"/tmp/{new_uid(rng)}", "execID": suffix(rng, 5)}


def r_github(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    repo = a[2].split("RepoURL:", 1)[1].split(",", 1)[0]
    i = ctx.install_id
    err = (f'rpc error: code = Unknown desc = Get "{repo}/info/refs?service=git-upload-pack": could not refresh '
           f"installation id {i}'s token: received non 2xx response status \"401 Unauthorized\" when fetching "
           f"https://api.github.com/app/installations/{i}/access_tokens")
    f = _grpc("repository.RepoServerService", "GenerateManifest", "Unknown", rng.expovariate(1 / 300))
    return "error", "finished unary call with code Unknown", f | {"error": err}


def r_error(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    err = (f"rpc error: code = Unknown desc = `helm template . --name-template {a[0]} --namespace {a[1]}` failed "
           f"exit status 1: Error: execution error at ({a[4]}/templates/deployment.yaml:42:20): "
           "image.tag is required")
    f = _grpc("repository.RepoServerService", "GenerateManifest", "Unknown", rng.expovariate(1 / 300))
    return "error", "finished unary call with code Unknown", f | {"error": err}


def r_x509(rng: random.Random, ctx: LogCtx) -> Message:
    return "error", ("Failed to fetch chart index: Get \"https://charts.acme.io/index.yaml\": tls: failed to "
                     "verify certificate: x509: certificate signed by unknown authority"), {}


def s_unary(rng: random.Random, ctx: LogCtx) -> Message:
    service, method = rng.choice(GRPC_SERVER_METHODS)
    return "info", "finished unary call with code OK", _grpc(service, method, "OK", rng.expovariate(1 / 12))


def s_stream(rng: random.Random, ctx: LogCtx) -> Message:
    method = rng.choice(["Watch", "WatchResourceTree"])
    return "info", "finished streaming call with code OK", _grpc(
        "application.ApplicationService", method, "OK", rng.uniform(1000, 300000))


def s_refresh(rng: random.Random, ctx: LogCtx) -> Message:
    return "info", f"Requested app '{_app(rng, ctx)[0]}' refresh", {}


def s_alloc(rng: random.Random, ctx: LogCtx) -> Message:
    alloc = rng.randrange(80_000, 900_000)
    return "info", (f"Alloc={alloc} TotalAlloc={alloc * 4000} Sys={alloc * 3} NumGC={rng.randrange(1000, 9000)} "
                    f"Goroutines={rng.randrange(200, 900)}"), {}


def s_push(rng: random.Random, ctx: LogCtx) -> Message:
    team = rng.choice(TEAMS)
    return "info", f"Received push event repo: https://github.com/acme/{team}-gitops, revision: main, " \
                   "touchedHead: true", {}


def s_error(rng: random.Random, ctx: LogCtx) -> Message:
    a = _app(rng, ctx)
    f = _grpc("application.ApplicationService", "Get", "Unknown", rng.expovariate(1 / 100))
    return "error", "finished unary call with code Unknown", f | {
        "error": f'error getting cached app managed resources: cache: key is missing for "{a[0]}"'}


def s_x509(rng: random.Random, ctx: LogCtx) -> Message:
    return "warning", ('Failed to verify token: failed to query provider "https://sso.acme.io/realms/main": Get '
                       '"https://sso.acme.io/realms/main/.well-known/openid-configuration": tls: failed to verify '
                       "certificate: x509: certificate signed by unknown authority"), {}


COMMON: dict[str, list[tuple[Template, float]]] = {
    "application-controller": [(c_refresh, 24), (c_compare, 20), (c_stats, 12), (c_completed, 24), (c_skip, 10),
                               (c_nochange, 6), (c_updated, 4)],
    "repo-server": [(r_hit, 38), (r_unary, 38), (r_trace, 18), (r_helm, 6)],
    "server": [(s_unary, 65), (s_stream, 20), (s_refresh, 8), (s_alloc, 3), (s_push, 4)],
}
RARE: dict[str, list[tuple[Template, float]]] = {
    "application-controller": [(c_autosync, 35), (c_op_succeeded, 20), (c_error, 30), (c_webhook, 15)],
    "repo-server": [(r_miss, 45), (r_github, 15), (r_error, 25), (r_x509, 15)],
    "server": [(s_error, 50), (s_x509, 50)],
}


# --------------------------------------------------------------------------------------------
# Log file tasks


@dataclass
class LogTask:
    """Write one container log file."""

    relpath: str
    component: str
    fmt: str  # text | json
    prefix: bool  # kubectl logs --timestamps
    start_ns: int
    end_ns: int
    target: int
    ctx: LogCtx
    planned: list[tuple[int, Message]]  # lines that tell the story of the failed syncs


def _sec_str(s: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s))


def _render(items: list[Variant], times: list[int], prefix: bool, cache: dict[int, str]) -> list[str]:
    out: list[str] = []
    append = out.append
    last = -1
    sec = ""
    for (pre, post), t in zip(items, times, strict=True):
        s = t // NS
        if s != last:
            last = s
            sec = cache.get(s) or cache.setdefault(s, _sec_str(s))
        if prefix:
            frac = f"{t % NS:09d}".rstrip("0")
            append(f"{sec}.{frac}Z {pre}{sec}{post}" if frac else f"{sec}Z {pre}{sec}{post}")
        else:
            append(f"{pre}{sec}{post}")
    return out


def _fill(rng: random.Random, out_file: Any, target: int, start_ns: int, end_ns: int, avg: float,
          common: Callable[[int], list[Any]], rare: Callable[[], Any], planned: list[tuple[int, Any]],
          render: Callable[[list[Any], list[int]], list[str]]) -> int:
    """Write lines until ``target`` bytes, spreading their times over [start_ns, end_ns].

    Lines arrive as a Poisson process. ``avg`` is a first guess of the line length; the mean
    gap is re-estimated after every batch so that the last line lands shortly before
    ``end_ns``. ``planned`` (time, line) pairs are inserted at their own time.
    """
    written = 0
    last = start_ns
    pi = 0
    expo = rng.expovariate
    while written < target:
        remaining = target - written
        est_lines = remaining / avg
        n = max(1, min(BATCH_LINES, int(est_lines) + 8))
        items = common(n)
        k = int(n * RARE_RATE + rng.random())
        for pos in rng.sample(range(n), k):
            items[pos] = rare()
        rate = max(est_lines, 1) / max(end_ns - last, 1) / 0.97
        times = list(accumulate((int(expo(rate)) + 1 for _ in range(n)), initial=last))[1:]
        inserted = []
        while pi < len(planned) and planned[pi][0] <= times[-1]:
            when, item = planned[pi]
            pos = bisect_right(times, when)
            items.insert(pos, item)
            times.insert(pos, max(when, last))
            inserted.append(pos)
            pi += 1
        if times[-1] > end_ns:
            times = [min(x, end_ns) for x in times]
        lines = render(items, times)
        size = sum(map(len, lines))
        if written + size > target:
            lines = lines[:bisect_right(list(accumulate(map(len, lines))), target - written)]
            size = sum(map(len, lines))
            pi -= sum(1 for pos in inserted if pos >= len(lines))  # cut off: they go in at the end
            if not lines:
                break
        out_file.write("".join(lines))
        written += size
        avg = size / len(lines)
        last = times[len(lines) - 1]
    # story lines past the byte budget still go in, at their own time
    rest = [(max(when, last), item) for when, item in planned[pi:] if when <= end_ns]
    if rest:
        lines = render([item for _, item in rest], [when for when, _ in rest])
        out_file.write("".join(lines))
        written += sum(map(len, lines))
    return written


def run_log_task(out: str, seed: int, task: LogTask) -> int:
    """Write one container log; return its size in bytes."""
    rng = random.Random(f"{seed}/{task.relpath}")
    fmt = variant_text if task.fmt == "text" else variant_json
    wheel: list[Variant] = []
    templates = COMMON[task.component]
    total_w = sum(w for _, w in templates)
    for tpl, w in templates:
        wheel.extend(fmt(*tpl(rng, task.ctx)) for _ in range(max(1, round(WHEEL_SIZE * w / total_w))))
    rare_tpls = [t for t, _ in RARE[task.component]]
    rare_w = [w for _, w in RARE[task.component]]

    def common(n: int) -> list[Any]:
        return rng.choices(wheel, k=n)

    def rare() -> Variant:
        return fmt(*rng.choices(rare_tpls, weights=rare_w)[0](rng, task.ctx))

    cache: dict[int, str] = {}

    def render(items: list[Any], times: list[int]) -> list[str]:
        return _render(items, times, task.prefix, cache)

    planned = [(t, fmt(*msg)) for t, msg in sorted(task.planned, key=lambda x: x[0])]
    path = Path(out, task.relpath)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="ascii", newline="\n", buffering=4 << 20) as f:
        avg = sum(len(a) + len(b) for a, b in wheel) / len(wheel) + (20 if not task.prefix else 51)
        return _fill(rng, f, task.target, task.start_ns, task.end_ns, avg, common, rare, planned, render)


# --------------------------------------------------------------------------------------------
# Audit log


@dataclass
class AuditTask:
    """Write one audit log file."""

    relpath: str
    start_ns: int
    end_ns: int
    target: int
    apps: list[str]
    namespaces: list[str]
    nodes: list[str]
    planned: list[tuple[int, Obj]]


AuditVariant = tuple[str, str, str, str]  # event = v0 + auditID + v1 + received + v2 + stage + v3
SA_CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"
UA_CONTROLLER = f"argocd-application-controller/{ARGOCD_VERSION} (linux/amd64) kubernetes/b5e5e9f"
UA_KUBELET = f"kubelet/{K8S_VERSION} (linux/amd64) kubernetes/ad8b3e1"
RESOURCES = [("", "v1", "pods"), ("apps", "v1", "deployments"), ("apps", "v1", "replicasets"),
             ("", "v1", "services"), ("", "v1", "configmaps"), ("argoproj.io", "v1alpha1", "applications"),
             ("", "v1", "secrets"), ("networking.k8s.io", "v1", "ingresses")]


def audit_event(verb: str, uri: str, user: Obj, ua: str, obj_ref: Obj, status: Obj, source_ip: str,
                annotations: dict[str, str]) -> Obj:
    """An audit.k8s.io/v1 Event without its id and timestamps."""
    return {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "@@ID@@",
            "stage": "ResponseComplete", "requestURI": uri, "verb": verb, "user": user, "sourceIPs": [source_ip],
            "userAgent": ua, "objectRef": obj_ref, "responseStatus": status,
            "requestReceivedTimestamp": "@@T1@@", "stageTimestamp": "@@T2@@", "annotations": annotations}


def _audit_variant(ev: Obj) -> AuditVariant:
    s = _html_escape(json.dumps(ev, separators=(",", ":")))
    v0, rest = s.split("@@ID@@")
    v1, rest = rest.split("@@T1@@")
    v2, v3 = rest.split("@@T2@@")
    return v0, v1, v2, v3 + "\n"


def _rbac(role: str, sa: str) -> dict[str, str]:
    return {"authorization.k8s.io/decision": "allow",
            "authorization.k8s.io/reason": f'RBAC: allowed by ClusterRoleBinding "{role}" of ClusterRole "{role}" '
                                           f'to ServiceAccount "{sa}/argocd"'}


_CONTROLLER_USER = {"username": SA_CONTROLLER, "uid": "5d0c6f5e-2b8b-4d8e-9a55-8f2d7b1c7a10",
                    "groups": ["system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated"],
                    "extra": {"authentication.kubernetes.io/pod-name": ["argocd-application-controller-0"]}}


def a_controller_read(rng: random.Random, t: AuditTask) -> Obj:
    group, version, res = rng.choice(RESOURCES)
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    verb = rng.choice(["list", "watch", "watch", "get"])
    ref: Obj = {"resource": res, "apiVersion": version} | ({"apiGroup": group} if group else {})
    if verb == "watch":
        uri = f"{base}/{res}?allowWatchBookmarks=true&resourceVersion={rng.randrange(10**8)}&timeout=9m32s" \
              f"&timeoutSeconds=572&watch=true"
    elif verb == "list":
        uri = f"{base}/{res}?limit=500&resourceVersion=0"
    else:
        ns = rng.choice(t.namespaces)
        name = f"{rng.choice(COMPONENTS)}-{rng.choice(ROLES)}"
        uri = f"{base}/namespaces/{ns}/{res}/{name}"
        ref |= {"namespace": ns, "name": name}
    return audit_event(verb, uri, _CONTROLLER_USER, UA_CONTROLLER, ref, {"metadata": {}, "code": 200},
                       "10.99.0.10", _rbac("argocd-application-controller", "argocd-application-controller"))


def a_app_patch(rng: random.Random, t: AuditTask) -> Obj:
    app = rng.choice(t.apps)
    return audit_event("patch", f"/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/{app}",
                       _CONTROLLER_USER, UA_CONTROLLER,
                       {"resource": "applications", "namespace": "argocd", "name": app, "apiGroup": "argoproj.io",
                        "apiVersion": "v1alpha1"}, {"metadata": {}, "code": 200}, "10.99.0.10",
                       _rbac("argocd-application-controller", "argocd-application-controller"))


def a_lease(rng: random.Random, t: AuditTask) -> Obj:
    node = rng.choice(t.nodes)
    return audit_event(
        "update", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}?timeout=10s",
        {"username": f"system:node:{node}", "groups": ["system:nodes", "system:authenticated"]}, UA_KUBELET,
        {"resource": "leases", "namespace": "kube-node-lease", "name": node, "apiGroup": "coordination.k8s.io",
         "apiVersion": "v1"}, {"metadata": {}, "code": 200}, "10.0.1.17",
        {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""})


def a_pod_status(rng: random.Random, t: AuditTask) -> Obj:
    node = rng.choice(t.nodes)
    ns = rng.choice(t.namespaces)
    name = f"{rng.choice(COMPONENTS)}-{rng.choice(ROLES)}-{suffix(rng, 10)}-{suffix(rng, 5)}"
    return audit_event(
        "patch", f"/api/v1/namespaces/{ns}/pods/{name}/status", {"username": f"system:node:{node}",
                                                                 "groups": ["system:nodes", "system:authenticated"]},
        UA_KUBELET, {"resource": "pods", "namespace": ns, "name": name, "apiVersion": "v1", "subresource": "status"},
        {"metadata": {}, "code": 200}, "10.0.1.17",
        {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""})


def a_secret_update(rng: random.Random, t: AuditTask) -> Obj:
    ns = rng.choice(t.namespaces)
    name = f"{rng.choice(COMPONENTS)}-tls"
    return audit_event("update", f"/api/v1/namespaces/{ns}/secrets/{name}", _CONTROLLER_USER, UA_CONTROLLER,
                       {"resource": "secrets", "namespace": ns, "name": name, "apiVersion": "v1"},
                       {"metadata": {}, "code": 200}, "10.99.0.11",
                       _rbac("argocd-application-controller", "argocd-application-controller"))


def a_deprecated(rng: random.Random, t: AuditTask) -> Obj:
    ev = audit_event("watch", "/apis/policy/v1beta1/poddisruptionbudgets?allowWatchBookmarks=true&watch=true",
                     _CONTROLLER_USER, UA_CONTROLLER,
                     {"resource": "poddisruptionbudgets", "apiGroup": "policy", "apiVersion": "v1beta1"},
                     {"metadata": {}, "code": 200}, "10.99.0.10",
                     _rbac("argocd-application-controller", "argocd-application-controller"))
    ev["annotations"] |= {"k8s.io/deprecated": "true", "k8s.io/removed-release": "1.25"}
    return ev


def failed_patch_event(ns: str, dep: str, failure: str) -> Obj:
    """The apiserver's record of the controller's patch that failed the sync (webhook failure or invalid)."""
    if "failed calling webhook" in failure:
        status: Obj = {"metadata": {}, "status": "Failure", "message": failure, "reason": "InternalError",
                       "details": {"causes": [{"message": failure}]}, "code": 500}
    else:
        status = {"metadata": {}, "status": "Failure", "message": failure, "reason": "Invalid",
                  "details": {"name": dep, "group": "apps", "kind": "Deployment",
                              "causes": [{"reason": "FieldValueRequired", "message": "Required value",
                                          "field": "spec.template.spec.containers[0].image"}]}, "code": 422}
    return audit_event("patch", f"/apis/apps/v1/namespaces/{ns}/deployments/{dep}?fieldManager=argocd-controller",
                       _CONTROLLER_USER, UA_CONTROLLER,
                       {"resource": "deployments", "namespace": ns, "name": dep, "apiGroup": "apps",
                        "apiVersion": "v1"}, status, "10.99.0.10",
                       _rbac("argocd-application-controller", "argocd-application-controller"))


AUDIT_COMMON: list[tuple[Callable[[random.Random, AuditTask], Obj], float]] = [
    (a_controller_read, 40), (a_app_patch, 25), (a_lease, 25), (a_pod_status, 10)]
AUDIT_RARE: list[tuple[Callable[[random.Random, AuditTask], Obj], float]] = [(a_secret_update, 60),
                                                                              (a_deprecated, 40)]


def _audit_id(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:]}"


def run_audit_task(out: str, seed: int, task: AuditTask) -> int:
    """Write one audit log file; return its size in bytes."""
    rng = random.Random(f"{seed}/{task.relpath}")
    wheel: list[AuditVariant] = []
    total_w = sum(w for _, w in AUDIT_COMMON)
    for tpl, w in AUDIT_COMMON:
        wheel.extend(_audit_variant(tpl(rng, task)) for _ in range(max(1, round(2048 * w / total_w))))
    rare_tpls = [t for t, _ in AUDIT_RARE]
    rare_w = [w for _, w in AUDIT_RARE]

    def render(items: list[AuditVariant], times: list[int]) -> list[str]:
        rnd = rng.random
        return [f"{v0}{_audit_id(rng)}{v1}{iso_micro(t)}{v2}{iso_micro(t + int(rnd() * 40_000_000))}{v3}"
                for (v0, v1, v2, v3), t in zip(items, times, strict=True)]

    planned = [(t, _audit_variant(ev)) for t, ev in sorted(task.planned, key=lambda x: x[0])]
    path = Path(out, task.relpath)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="ascii", newline="\n", buffering=4 << 20) as f:
        avg = sum(len("".join(v)) for v in wheel) / len(wheel) + 36 + 2 * 27
        return _fill(rng, f, task.target, task.start_ns, task.end_ns, avg, lambda n: rng.choices(wheel, k=n),
                     lambda: _audit_variant(rng.choices(rare_tpls, weights=rare_w)[0](rng, task)), planned, render)


# --------------------------------------------------------------------------------------------
# Planning the files


def _chunks(seq: Sequence[Any], n: int) -> list[Sequence[Any]]:
    return [seq[i:i + n] for i in range(0, len(seq), n)] or [seq[:0]]


def plan_objects(m: Model) -> list[ObjectTask]:
    """Decide which object goes into which file, and in which format."""
    tasks = [
        ObjectTask("objects/cluster/nodes.json", "json-list", "nodes", list(m.nodes)),
        ObjectTask("objects/cluster/namespaces.yaml", "yaml", "namespaces", [ARGOCD_NS, *m.namespaces]),
        ObjectTask("objects/argocd/install.yaml", "yaml", "argocd", [m]),
        ObjectTask("objects/argocd/appprojects.yaml", "yaml", "projects", [m]),
    ]
    for k, chunk in enumerate(_chunks(m.apps, OBJECTS_PER_FILE), 1):
        tasks.append(ObjectTask(f"objects/argocd/applications-{k:04d}.yaml", "yaml", "apps", list(chunk)))
    deps = m.deployments
    for k, chunk in enumerate(_chunks(deps, OBJECTS_PER_FILE), 1):
        tasks.append(ObjectTask(f"objects/workloads/deployments-{k:04d}.yaml", "yaml", "deployments", list(chunk)))
        tasks.append(ObjectTask(f"objects/workloads/services-{k:04d}.yaml", "yaml", "services", list(chunk)))
    # about 1.4 ReplicaSets per Deployment: ~350 Deployments per file give ~500 ReplicaSets
    for k, chunk in enumerate(_chunks(deps, OBJECTS_PER_FILE * 10 // 14), 1):
        tasks.append(ObjectTask(f"objects/workloads/replicasets-{k:04d}.json", "json-list", "replicasets",
                                list(chunk)))
    pods = [(d, p) for d in deps for p in d.pods]
    for k, chunk in enumerate(_chunks(pods, OBJECTS_PER_FILE), 1):
        fmt = "json-list" if k % 4 == 0 else "yaml"
        ext = "json" if fmt == "json-list" else "yaml"
        tasks.append(ObjectTask(f"objects/workloads/pods-{k:04d}.{ext}", fmt, "pods", list(chunk), m.nodes))
    crashing = [d for d in deps if d.crashloop]
    tasks.append(ObjectTask("objects/workloads/events.yaml", "yaml-list", "events", crashing, m.nodes))
    return tasks


def _app_lite(a: AppRec) -> tuple[str, str, str, str, str]:
    return a.name, a.namespace, a.source_str, a.revision, a.chart or a.path


def plan_logs(m: Model) -> tuple[list[LogTask], list[AuditTask]]:
    """Decide the log files, their formats, sizes and the story lines they must contain."""
    p = m.params
    rng = random.Random(f"{p.seed}/logs")
    start = (COLLECTED_AT - LOG_SPAN) * NS
    end = COLLECTED_AT * NS - 1_000_000
    install_id = m.install_id
    all_apps = [_app_lite(a) for a in m.apps]
    failed = [a for a in m.apps if a.failure]
    failed_lite = [(a.name, a.namespace, a.desired, a.failure or "", a.failed_resource[2] if a.failed_resource else "")
                   for a in failed]
    ctl = [pod for pod in m.argocd if pod.component == "application-controller"]
    repo = [pod for pod in m.argocd if pod.component == "repo-server"]
    server = [pod for pod in m.argocd if pod.component == "server"]
    # (pod, container, share of --log-bytes, format, --timestamps prefix); text and JSON are half each
    layout: list[tuple[ArgoPod, str, float, str, bool, bool]] = [
        (ctl[0], "application-controller", 0.25, "text", True, False),
        (ctl[1], "application-controller", 0.25, "json", False, False),
        (repo[0], "repo-server", 0.0875, "text", False, False),
        (repo[1], "repo-server", 0.0825, "text", True, False),
        (repo[1], "repo-server", 0.005, "text", False, True),  # the OOMKilled previous instance
        (repo[2], "repo-server", 0.0875, "json", False, False),
        (repo[3], "repo-server", 0.0875, "json", True, False),
        (server[0], "server", 0.075, "text", False, False),
        (server[1], "server", 0.075, "json", False, False),
    ]
    planned: dict[str, list[tuple[int, Message]]] = {}
    audit_planned: list[tuple[int, Obj]] = []

    def relpath(pod: ArgoPod, container: str, previous: bool) -> str:
        return f"logs/{ARGOCD_NS}/{pod.name}/{container}{'.previous' if previous else ''}.log"

    for a in failed:
        app = f"argocd/{a.name}"
        t = a.op_finished * NS
        ctl_path = relpath(ctl[a.shard], "application-controller", False)
        live_repo = [r for r in repo if not r.oom_at or r.oom_at * NS < t - 60 * NS]
        repo_path = relpath(rng.choice(live_repo), "repo-server", False)
        src = f"{a.source_str}/{a.desired}"
        dep = a.failed_resource[2] if a.failed_resource else ""
        planned.setdefault(repo_path, []).extend([
            (t - 31 * NS + 120_000_000, ("info", f"manifest cache miss: {src}", {})),
            (t - 30 * NS + 410_000_000, ("info", f"helm template . --name-template {a.name} --namespace {a.namespace} "
                                                  f"--kube-version 1.30 --include-crds",
                                         {"dir": f"/tmp/{new_uid(rng)}", "execID": suffix(rng, 5)})),
        ])
        planned.setdefault(ctl_path, []).extend([
            (a.op_started * NS + 5_000_000, ("info", f"Initiated automated sync to '{a.desired}'",
                                             {"application": app})),
            (a.op_started * NS + 9_000_000, ("info", f"updated '{app}' operation (phase: Running)",
                                             {"application": app})),
            (t - 2 * NS, ("info", f"Adding resource result, status: 'SyncFailed', phase: 'Sync', message: "
                                  f"'{a.failure}'", {"application": app, "kind": "Deployment", "name": dep,
                                                     "namespace": a.namespace, "phase": "Sync",
                                                     "syncId": f"{rng.randrange(1, 99999):05d}-{suffix(rng, 5)}"})),
            (t, ("info", f"updated '{app}' operation (phase: Failed)", {"application": app})),
        ])
        audit_planned.append((t - 2 * NS - 30_000_000, failed_patch_event(a.namespace, dep, a.failure or "")))

    tasks = []
    for pod, container, share, fmt, prefix, previous in layout:
        path = relpath(pod, container, previous)
        s, e = start, end
        if pod.oom_at:
            s, e = (start, pod.oom_at * NS) if previous else ((pod.oom_at + 12) * NS, end)
        apps = all_apps
        if pod.component == "application-controller":
            shard = ctl.index(pod)
            apps = [_app_lite(a) for a in m.apps if a.shard == shard] or all_apps
        ctx = LogCtx(apps=apps, failed=[f for f in failed_lite
                                        if pod.component != "application-controller" or
                                        next(a.shard for a in failed if a.name == f[0]) == ctl.index(pod)],
                     install_id=install_id)
        tasks.append(LogTask(path, pod.component, fmt, prefix, s, e, int(p.log_bytes * share), ctx,
                             planned.get(path, [])))
    mid = (COLLECTED_AT - LOG_SPAN // 2) * NS
    rotated = f"audit/audit-{time.strftime('%Y-%m-%dT%H-%M-%S', time.gmtime(mid // NS))}.000.log"
    audit_common = {"apps": [a.name for a in m.apps], "namespaces": m.namespaces, "nodes": [n[0] for n in m.nodes]}
    audits = [
        AuditTask(rotated, start, mid, p.audit_bytes // 2, planned=[x for x in audit_planned if x[0] < mid],
                  **audit_common),
        AuditTask("audit/audit.log", mid, end, p.audit_bytes - p.audit_bytes // 2,
                  planned=[x for x in audit_planned if x[0] >= mid], **audit_common),
    ] if p.audit_bytes else []
    return tasks, audits


# --------------------------------------------------------------------------------------------
# Main


def generator_hash() -> str:
    """sha256 of this file, so that editing the generator invalidates old bundles."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _run_task(out: str, seed: int, task: ObjectTask | LogTask | AuditTask) -> tuple[str, int, float]:
    t0 = time.perf_counter()
    if isinstance(task, ObjectTask):
        n = run_object_task(out, seed, task)
    elif isinstance(task, LogTask):
        n = run_log_task(out, seed, task)
    else:
        n = run_audit_task(out, seed, task)
    return task.relpath, n, time.perf_counter() - t0


def generate(out: Path, params: Params, jobs: int, quiet: bool = False, verbose: bool = False) -> None:
    """Write the bundle into ``out`` (which must not exist)."""
    t0 = time.perf_counter()
    model = build_model(params)
    log_tasks, audit_tasks = plan_logs(model)
    object_tasks = plan_objects(model)
    tasks: list[ObjectTask | LogTask | AuditTask] = [*sorted(log_tasks, key=lambda t: -t.target), *audit_tasks,
                                                     *object_tasks]
    out.mkdir(parents=True)
    bundle = {"collectedAt": iso(COLLECTED_AT), "collectedBy": "bench/generate.py",
              "cluster": {"name": "bench-large", "version": K8S_VERSION}}
    (out / "bundle.yaml").write_text(to_yaml(bundle), encoding="ascii")
    if not quiet:
        print(f"generate: model built in {time.perf_counter() - t0:.1f}s; writing {len(tasks)} files "
              f"with {jobs} job(s) to {out}", file=sys.stderr)
    results: list[tuple[str, int, float]] = []
    if jobs <= 1:
        results = [_run_task(str(out), params.seed, t) for t in tasks]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_run_task, str(out), params.seed, t) for t in tasks]
            results = [f.result() for f in futures]
    if verbose:
        for path, n, secs in sorted(results, key=lambda r: -r[2]):
            print(f"generate: {secs:6.2f}s {n / 2**20:8.1f} MiB {path}", file=sys.stderr)
    if not quiet:
        logs = sum(n for path, n, _ in results if not path.startswith("objects/"))
        objs = sum(n for path, n, _ in results if path.startswith("objects/"))
        print(f"generate: {len(results)} files, objects {objs / 2**20:.0f} MiB, logs+audit {logs / 2**20:.0f} MiB "
              f"in {time.perf_counter() - t0:.1f}s", file=sys.stderr)


def ensure_bundle(out: Path, params: Params, jobs: int, quiet: bool = False, force: bool = False,
                  verbose: bool = False) -> bool:
    """Generate the bundle unless ``out`` already holds one with the same parameters; True if generated."""
    stamp = out / STAMP_NAME
    wanted = asdict(params)
    if stamp.is_file() and not force:
        try:
            if json.loads(stamp.read_text()) == wanted:
                if not quiet:
                    print(f"generate: {out} is up to date", file=sys.stderr)
                return False
        except ValueError:
            pass
    if out.exists() and not stamp.is_file() and any(out.iterdir()):
        raise SystemExit(f"generate: {out} exists and is not a generated bundle; refusing to overwrite it")
    partial = out.with_name(out.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    generate(partial, params, jobs, quiet, verbose)
    (partial / STAMP_NAME).write_text(json.dumps(wanted, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, required=True, help="bundle directory to create")
    ap.add_argument("--apps", type=int, default=2000, help="number of Applications (default 2000)")
    ap.add_argument("--pods", type=int, default=20000, help="number of workload pods (default 20000)")
    ap.add_argument("--log-bytes", type=parse_size, default=parse_size("1G"),
                    help="total size of the container logs, e.g. 200M, 1G (default 1G)")
    ap.add_argument("--audit-bytes", type=parse_size, default=None,
                    help="total size of the audit log (default: 2%% of --log-bytes)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: all CPUs)")
    ap.add_argument("--force", action="store_true", help="regenerate even if the stamp matches")
    ap.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the time taken by each file")
    args = ap.parse_args(argv)
    if args.apps < 1 or args.pods < 0:
        ap.error("--apps must be at least 1 and --pods at least 0")
    audit = args.audit_bytes if args.audit_bytes is not None else args.log_bytes // 50
    params = Params(apps=args.apps, pods=args.pods, log_bytes=args.log_bytes, audit_bytes=audit,
                    seed=args.seed, generator=generator_hash())
    ensure_bundle(args.out, params, args.jobs, args.quiet, args.force, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
