"""Objects of a namespace running Argo Rollouts, as the API serves them (argo-rollouts v1.7 field layout).

`stuck()`: Degraded with ProgressDeadlineExceeded while every pod of the current ReplicaSet is ready
and available. `crashing()` is Degraded for a real reason, `healthy()` is Healthy. Each returns the Rollout, its
ReplicaSet and its pods; `application()` is the Argo CD Application that lists Rollouts in `status.resources`.
"""

from __future__ import annotations

import hashlib
from typing import Any

Obj = dict[str, Any]
T0 = "2026-11-23T08:00:00Z"
DEADLINE = "2026-11-23T08:12:31Z"


def _uid(*parts: str) -> str:
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _hash(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:10]


def rollout(name: str, namespace: str = "apps", *, replicas: int = 3, phase: str = "Healthy", message: str = "",
            progressing: tuple[str, str, str] | None = None, ready: int | None = None,
            restart_at: str | None = None, restarted_at: str | None = None, app: str = "shop") -> Obj:
    """A canary Rollout with its status; `progressing` is the Progressing condition (status, reason, message)."""
    pod_hash = _hash(name)
    ready = replicas if ready is None else ready
    status, reason, text = progressing or ("True", "NewReplicaSetAvailable", "Rollout has completed rollout.")
    spec: Obj = {
        "replicas": replicas,
        "revisionHistoryLimit": 3,
        "progressDeadlineSeconds": 600,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": name, "image": f"ghcr.io/example/{name}:1.4.2",
                                     "ports": [{"containerPort": 8080}],
                                     "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}}]},
        },
        "strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {"duration": "1m"}}, {"setWeight": 60},
                                          {"pause": {"duration": "1m"}}]}},
    }
    if restart_at:
        spec["restartAt"] = restart_at
    stat: Obj = {
        "phase": phase,
        "currentPodHash": pod_hash,
        "stableRS": pod_hash,
        "currentStepIndex": 4,
        "currentStepHash": "5f8d7c9b6",
        "observedGeneration": "4",
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "HPAReplicas": replicas,
        "selector": f"app={name}",
        "canary": {},
        "conditions": [
            {"type": "Available", "status": "True" if ready >= replicas else "False",
             "reason": "AvailableReason", "message": "Rollout has minimum availability",
             "lastTransitionTime": T0, "lastUpdateTime": T0},
            {"type": "Progressing", "status": status, "reason": reason, "message": text,
             "lastTransitionTime": DEADLINE if status == "False" else T0,
             "lastUpdateTime": DEADLINE if status == "False" else T0},
            {"type": "Healthy", "status": "True" if phase == "Healthy" else "False",
             "reason": "RolloutHealthy",
             "message": "Rollout is healthy" if phase == "Healthy" else "Rollout does not have healthy replicas",
             "lastTransitionTime": T0, "lastUpdateTime": T0},
        ],
    }
    if message:
        stat["message"] = message
    if restarted_at:
        stat["restartedAt"] = restarted_at
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": name, "namespace": namespace, "uid": _uid(namespace, name), "generation": 4,
                     "creationTimestamp": "2026-10-02T09:15:00Z",
                     "labels": {"app.kubernetes.io/instance": app},
                     "annotations": {"rollout.argoproj.io/revision": "7"}},
        "spec": spec,
        "status": stat,
    }


def replicaset(ro: Obj, ready: int) -> Obj:
    """The current ReplicaSet of a Rollout, owned by it."""
    name, namespace = ro["metadata"]["name"], ro["metadata"]["namespace"]
    pod_hash = ro["status"]["currentPodHash"]
    replicas = ro["spec"]["replicas"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name}-{pod_hash}", "namespace": namespace, "uid": _uid(namespace, name, pod_hash),
            "creationTimestamp": T0,
            "labels": {"app": name, "rollouts-pod-template-hash": pod_hash},
            "annotations": {"rollout.argoproj.io/revision": "7", "rollout.argoproj.io/desired-replicas": str(replicas)},
            "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": name,
                                 "uid": ro["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"replicas": replicas, "template": ro["spec"]["template"],
                 "selector": {"matchLabels": {"app": name, "rollouts-pod-template-hash": pod_hash}}},
        "status": {"replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": ready,
                   "availableReplicas": ready, "observedGeneration": 1},
    }


def pod(rs: Obj, index: int, *, ready: bool = True, waiting: tuple[str, str] | None = None,
        restarts: int = 0) -> Obj:
    """A pod of a ReplicaSet: Running and Ready, or waiting (reason, message) and not ready."""
    meta = rs["metadata"]
    name = f"{meta['name']}-{'abcde'[index % 5]}{index}x9q"
    container = meta["labels"]["app"]
    state: Obj = {"running": {"startedAt": T0}}
    last: Obj = {}
    if waiting:
        state = {"waiting": {"reason": waiting[0], "message": waiting[1]}}
        last = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-23T09:40:02Z",
                               "finishedAt": "2026-11-23T09:40:03Z"}}
    flag = "True" if ready and not waiting else "False"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": meta["namespace"], "uid": _uid(meta["namespace"], name),
                     "creationTimestamp": T0, "labels": dict(meta["labels"]),
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": meta["name"],
                                          "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"nodeName": f"node-{index % 3}", "containers": [{"name": container, "image": "img"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": t, "status": "True" if t in ("Initialized", "PodScheduled") else flag,
                            "lastTransitionTime": T0} for t in ("Initialized", "Ready", "ContainersReady",
                                                                "PodScheduled")],
            "containerStatuses": [{"name": container, "ready": flag == "True", "started": flag == "True",
                                   "restartCount": restarts, "image": "img", "imageID": "", "state": state,
                                   "lastState": last}],
            "startTime": T0,
        },
    }


def _family(ro: Obj, ready: int, **pod_args: Any) -> list[Obj]:
    rs = replicaset(ro, ready)
    replicas = ro["spec"]["replicas"]
    return [ro, rs, *[pod(rs, i, ready=i < ready, **(pod_args if i >= ready else {})) for i in range(replicas)]]


def stuck(name: str = "checkout", namespace: str = "apps", replicas: int = 3, **kw: Any) -> list[Obj]:
    """The stuck Rollout: Degraded for the deadline, every pod ready."""
    text = f'ReplicaSet "{name}-{_hash(name)}" has timed out progressing.'
    ro = rollout(name, namespace, replicas=replicas, phase="Degraded", message=f"ProgressDeadlineExceeded: {text}",
                 progressing=("False", "ProgressDeadlineExceeded", text), **kw)
    return _family(ro, replicas)


def crashing(name: str = "payments", namespace: str = "apps") -> list[Obj]:
    """Degraded for the deadline because two of three pods crash-loop: a real reason."""
    text = f'ReplicaSet "{name}-{_hash(name)}" has timed out progressing.'
    ro = rollout(name, namespace, phase="Degraded", message=f"ProgressDeadlineExceeded: {text}",
                 progressing=("False", "ProgressDeadlineExceeded", text), ready=1)
    return _family(ro, 1, waiting=("CrashLoopBackOff", "back-off 5m0s restarting failed container"), restarts=14)


def healthy(name: str = "catalog", namespace: str = "apps") -> list[Obj]:
    """A Healthy Rollout."""
    return _family(rollout(name, namespace), 3)


def application(name: str, rollouts: list[Obj], namespace: str = "argocd", dest: str = "apps") -> Obj:
    """An Argo CD Application managing `rollouts`, Degraded."""
    resources = [{"group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout",
                  "namespace": r["metadata"]["namespace"], "name": r["metadata"]["name"], "status": "Synced",
                  "health": {"status": r["status"]["phase"]}} for r in rollouts]
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": namespace, "uid": _uid(namespace, "app", name)},
        "spec": {"project": "default", "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
                 "source": {"repoURL": "https://github.com/example/deploy.git", "path": name,
                            "targetRevision": "main"}},
        "status": {"sync": {"status": "Synced", "revision": "9f1c2ab4e7d35c8b1a0f6e2d4c9b7a5e3f1d0c8b"},
                   "health": {"status": "Degraded"}, "resources": resources},
    }


def notification(app: str = "shop", app_namespace: str = "argocd", dest: str = "apps") -> Obj:
    """The body the notifications-config template sends."""
    return {"app": app, "appNamespace": app_namespace, "project": "default", "namespace": dest,
            "health": "Degraded", "revision": "9f1c2ab4e7d35c8b1a0f6e2d4c9b7a5e3f1d0c8b"}


def installation() -> list[Obj]:
    """Namespace apps: one stuck Rollout, one crash-looping, one healthy, one stuck with a single replica, all
    managed by Application argocd/shop."""
    objects = [*stuck(), *crashing(), *healthy(), *stuck("solo", replicas=1)]
    rollouts = [o for o in objects if o["kind"] == "Rollout"]
    return [*objects, application("shop", rollouts)]
