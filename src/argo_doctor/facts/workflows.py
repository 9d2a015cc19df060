"""Argo Workflows as the snapshot shows them: the nodes of a failed Workflow, and the pods they ran in.

Pod names follow Argo Workflows' `workflow/util/pod_name.go` (`GeneratePodName`): with the `v1` format the pod is
named after the node id; with `v2` (the default since v3.4) after `<workflow>-<template>-<FNV-1a 32 of the node
name>`, the prefix cut to 242 characters, and a node named like its Workflow gives a pod named like it. The
controller records the format it used in the Workflow's `workflows.argoproj.io/pod-name-format` annotation (since
v3.3); without it, only the root node's pod name is certain (the Workflow's name in both formats), unless the input
holds the pod itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

WORKFLOW_GROUP = "argoproj.io"
FAILED_PHASES = ("Failed", "Error")
POD_NAME_FORMAT = "workflows.argoproj.io/pod-name-format"
NODE_ID_ANNOTATION = "workflows.argoproj.io/node-id"
WORKFLOW_LABEL = "workflows.argoproj.io/workflow"
CONTAINER_EXIT = re.compile(r"\bexit code -?\d+|\bOOMKilled\b")
"""A node message that reports a container's exit: `failed with exit code 2` (before v2.5), `Error (exit code 1)`,
`main: OOMKilled (exit code 137): ...` (the controller's `operator.go`)."""
MAX_PREFIX = 242
"""253 (a resource name) - 10 (the hash) - 1: the longest `<workflow>-<template>` prefix of a v2 pod name."""


@dataclass(frozen=True)
class FailedNode:
    """A node of a Workflow whose phase is Failed or Error."""

    id: str
    name: str
    display_name: str
    type: str
    phase: str
    message: str
    template: str
    finished: datetime | None
    host_node: str
    pod: str | None
    """The name of the pod the node ran in: the pod in the input, else the name derived from the Workflow's pod
    name format when the node ran (a node refused before its pod started has no pod to read)."""
    pod_obj: Obj | None
    encloses: bool = False
    """A steps, DAG, step group or retry node with a failed descendant: it fails because of that one."""
    exit_code: str = ""
    """The main container's exit code the node's outputs record (`outputs.exitCode`)."""

    @property
    def exited(self) -> bool:
        """Whether the node's status shows a container of its pod ran and exited: an exit code in its outputs or
        its message (an exit code, OOMKilled)."""
        return bool(self.exit_code) or bool(CONTAINER_EXIT.search(self.message))

    @property
    def ran(self) -> bool:
        """Whether the node's pod ran: the input holds it, the node ran on a host, or a container exited."""
        return self.pod_obj is not None or bool(self.host_node) or self.exited

    @property
    def line(self) -> str:
        """`extract (Pod, template extract-balances) Failed: Error (exit code 1)`."""
        template = f", template {self.template}" if self.template else ""
        return (f"{self.display_name or self.name} ({self.type or 'node'}{template}) {self.phase}"
                + (f": {self.message}" if self.message else ""))


def is_workflow(obj: Obj) -> bool:
    """Whether the object is an argoproj.io Workflow."""
    return obj.kind == "Workflow" and obj.group == WORKFLOW_GROUP


def fnv32a(text: str) -> int:
    """The 32-bit FNV-1a hash of the UTF-8 bytes of `text` (Go's hash/fnv New32a)."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def node_template(node: dict[str, object]) -> str:
    """The template a node ran: `templateRef.template`, else `templateName` (upstream `GetTemplateFromNode`)."""
    ref = mapping(node.get("templateRef"))
    if ref:
        return str(ref.get("template") or "")
    return str(node.get("templateName") or "")


def derived_pod_name(workflow: Obj, node_id: str, node: dict[str, object]) -> str | None:
    """The pod name the controller gave a Pod node: the Workflow's name for its root node (both formats), else
    by the format the Workflow's annotation names (absent before v3.3: no name then)."""
    node_name = str(node.get("name") or "")
    if node_name and node_name == workflow.name:
        return workflow.name
    version = workflow.annotations.get(POD_NAME_FORMAT)
    if version == "v1":
        return node_id or None
    if version != "v2" or not node_name:
        return None
    template = node_template(node)
    prefix = f"{workflow.name}-{template}" if template else workflow.name
    return f"{prefix[:MAX_PREFIX]}-{fnv32a(node_name)}"


def workflow_pods(snap: Snapshot, workflow: Obj) -> dict[str, Obj]:
    """The Workflow's pods in the input, by the node id they carry."""
    return {
        str(pod.annotations[NODE_ID_ANNOTATION]): pod
        for pod in snap.of_kind("Pod", "", workflow.namespace)
        if pod.labels.get(WORKFLOW_LABEL) == workflow.name and pod.annotations.get(NODE_ID_ANNOTATION)
    }


def failed_nodes(snap: Snapshot, workflow: Obj) -> list[FailedNode]:
    """The Workflow's Failed and Error nodes: those that failed on their own first (Pod nodes before the others),
    then those that enclose a failed child; each oldest first."""
    pods = workflow_pods(snap, workflow)
    nodes = {str(key): mapping(raw) for key, raw in mapping(workflow.status.get("nodes")).items()}
    failed = {key for key, node in nodes.items() if str(node.get("phase") or "") in FAILED_PHASES}
    enclosing = _enclosing(nodes, failed)
    found = []
    for node_id in failed:
        node = nodes[node_id]
        phase = str(node.get("phase"))
        encloses = node.get("type") != "Pod" and node_id in enclosing
        node_id = str(node.get("id") or node_id)
        kind = str(node.get("type") or "")
        pod_obj = pods.get(node_id) if kind == "Pod" else None
        exit_code = mapping(node.get("outputs")).get("exitCode")
        failed_node = FailedNode(
            node_id, str(node.get("name") or ""), str(node.get("displayName") or ""), kind, phase,
            str(node.get("message") or ""), node_template(node), parse_time(node.get("finishedAt")),
            str(node.get("hostNodeName") or ""), None, pod_obj, encloses,
            "" if exit_code is None else str(exit_code),
        )
        pod = pod_obj.name if pod_obj is not None else (
            derived_pod_name(workflow, node_id, node) if kind == "Pod" and failed_node.ran else None)
        found.append(replace(failed_node, pod=pod))
    return sorted(found, key=lambda n: (n.encloses, n.type != "Pod", n.finished is None, n.finished or datetime.min,
                                        n.name))


def _enclosing(nodes: dict[str, dict[str, object]], failed: set[str]) -> set[str]:
    """The nodes from which a failed node is reachable through `children` in one step or more (steps chain their
    groups through children): found backwards from the failed nodes, once for all, not by a walk per node (which
    took minutes for a Workflow of 50,000 chained steps)."""
    parents: dict[str, list[str]] = {}
    for key, node in nodes.items():
        for child in as_list(node.get("children")):
            if str(child) in nodes:
                parents.setdefault(str(child), []).append(key)
    found: set[str] = set()
    todo = [parent for key in failed for parent in parents.get(key, ())]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo.extend(parents.get(current, ()))
    return found
