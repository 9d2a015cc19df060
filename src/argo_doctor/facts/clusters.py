"""Managed clusters: which server an Application deploys to (by server, or by the name of a cluster Secret), and
whether a message says the cluster refused Argo CD's credentials (client-go's answer to a 401, the exec credential
plugin's failure, an expired certificate)."""

from __future__ import annotations

import re

from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.argocd_secrets import KEY, SECRET_TYPE
from argo_doctor.sources.objects import as_list, mapping

IN_CLUSTER = "https://kubernetes.default.svc"
"""The server of the cluster Argo CD runs in (its destination name: in-cluster)."""

REFUSED = re.compile(r"the server has asked for the client to provide credentials|\bUnauthorized\b|"
                     r"getting credentials: exec|token has expired|certificate has expired", re.I)
LIVE_STATE = "Failed to load live state: "
"""The controller's prefix for a condition about the destination cluster (controller/state.go)."""


def credentials_refused(message: str) -> bool:
    """Whether a message says a cluster refused Argo CD's credentials."""
    return REFUSED.search(message) is not None


def refused_conditions(app: Obj) -> list[tuple[int, str]]:
    """(index, message) of an Application's conditions that say its destination refused Argo CD's credentials."""
    found = []
    for index, cond in enumerate(as_list(app.status.get("conditions"))):
        message = str(mapping(cond).get("message") or "")
        if message.startswith(LIVE_STATE) and credentials_refused(message):
            found.append((index, message))
    return found


def cluster_secrets(snap: Snapshot) -> list[Obj]:
    """The cluster Secrets of the input."""
    return [s for s in snap.of_kind("Secret", "") if s.labels.get(SECRET_TYPE) == "cluster"]


def servers_by_name(snap: Snapshot) -> dict[str, str]:
    """Cluster names to servers, from the cluster Secrets' public facts, and in-cluster."""
    names = {"in-cluster": IN_CLUSTER}
    for secret in cluster_secrets(snap):
        facts = mapping(secret.raw.get(KEY))
        if facts.get("name") and facts.get("server"):
            names[str(facts["name"])] = str(facts["server"]).rstrip("/")
    return names


def destination_server(app: Obj, names: dict[str, str]) -> str:
    """The server an Application deploys to: its destination's server, else the server of its destination's name
    (`name:<name>` when the input does not say)."""
    destination = mapping(app.spec.get("destination"))
    server = str(destination.get("server") or "").rstrip("/")
    name = str(destination.get("name") or "")
    return server or names.get(name, f"name:{name}")
