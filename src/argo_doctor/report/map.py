"""Output of `argo-doctor map`: the installation map as aligned columns, JSON (a contract documented in
docs/map-output.md, schemaVersion 1), a Mermaid flowchart or a Graphviz DOT digraph. Every output is built from the
same document, and every string of it passes through `sources.redact.clean` first (with `human=True` for the table
and the graphs), so no Secret value reaches any of them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from argo_doctor.facts.installation import InstalledComponent, Integration
from argo_doctor.facts.rbac import Grant, Permissions
from argo_doctor.model import Finding
from argo_doctor.report.columns import INDENT, cells, columns, sizes, text_columns, wrap
from argo_doctor.report.json import dumps, evidence_json, finding_json, ref_json
from argo_doctor.sources.redact import SecretScrubber, clean

SCHEMA_VERSION = 1
OUTPUTS = ("table", "json", "mermaid", "dot")
PermissionsByComponent = Mapping[tuple[str, str], Permissions]
"""(namespace, workload name) of a component → its ServiceAccount's effective permissions
(`facts.installation.component_permissions`)."""
EXTERNAL = {"kubernetes-api": "Kubernetes API", "git": "Git repositories", "clients": "Clients (UI, CLI, API)"}
HEADER = ("NAME", "NAMESPACE", "COMPONENT", "VERSION", "REPLICAS", "NODES", "SERVICEACCOUNT")


# -- the document ------------------------------------------------------------------------------------------------


def permission_json(grant: Grant) -> dict[str, Any]:
    """One grant: `{apiGroup, resource, verbs, namespace, resourceNames, nonResourceURLs, via, location}`."""
    return {
        "apiGroup": grant.api_group,
        "resource": grant.resource,
        "verbs": list(grant.verbs),
        "namespace": grant.namespace,
        "resourceNames": list(grant.resource_names),
        "nonResourceURLs": list(grant.non_resource_urls),
        "via": list(grant.via),
        "location": grant.evidence_location,
    }


def integration_json(integration: Integration) -> dict[str, Any]:
    """One integration: `{target, api, auth, purpose, evidence}`."""
    return {"target": integration.target, "api": integration.api, "auth": integration.auth,
            "purpose": integration.purpose, "evidence": [evidence_json(e) for e in integration.evidence]}


def component_json(comp: InstalledComponent, perms: Permissions | None) -> dict[str, Any]:
    """One component with its integrations and permissions (not yet redacted)."""
    return {
        "name": comp.name,
        "namespace": comp.namespace,
        "workload": ref_json(comp.workload.ref) if comp.workload is not None else None,
        "component": comp.component,
        "product": comp.product,
        "version": comp.version,
        "replicas": comp.replicas,
        "nodes": list(comp.nodes),
        "serviceAccount": comp.service_account,
        "settings": dict(comp.settings),
        "integrations": [integration_json(i) for i in comp.integrations],
        "permissions": [permission_json(g) for g in perms.grants] if perms is not None else [],
        "permissionNotes": list(perms.notes) if perms is not None else [],
    }


def _document(components: Sequence[InstalledComponent], permissions_by_component: PermissionsByComponent,
              findings: Sequence[Finding]) -> dict[str, Any]:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "components": [component_json(c, permissions_by_component.get((c.namespace, c.name))) for c in components],
        "findings": [finding_json(f) for f in findings],
    }


def map_json(components: Sequence[InstalledComponent], permissions_by_component: PermissionsByComponent,
             findings: Sequence[Finding], scrubber: SecretScrubber | None = None) -> dict[str, Any]:
    """The whole map document, every string redacted: `{schemaVersion, components, findings}`."""
    return clean(_document(components, permissions_by_component, findings), scrubber)


def _human(components: Sequence[InstalledComponent], permissions_by_component: PermissionsByComponent,
           findings: Sequence[Finding], scrubber: SecretScrubber | None) -> dict[str, Any]:
    """The document with every string redacted and made printable (control characters stripped)."""
    return clean(_document(components, permissions_by_component, findings), scrubber, human=True)


# -- the table ------------------------------------------------------------------------------------------------------

FLEXIBLE = (3, 5, 6)
"""The columns cut first: version, nodes, ServiceAccount."""


def _line(text: Any) -> str:
    return " ".join(str(text).split())


def _resource(permission: Mapping[str, Any]) -> str:
    if permission["nonResourceURLs"]:
        return "non-resource URLs " + ", ".join(permission["nonResourceURLs"])
    resource, _, sub = str(permission["resource"]).partition("/")
    group = str(permission["apiGroup"])
    text = (f"{resource}.{group}" if group else resource) + (f"/{sub}" if sub else "")
    names = permission["resourceNames"]
    return f"{text} ({', '.join(names)})" if names else text


def _narrow(rows: Sequence[Sequence[str]], width: int) -> bool:
    """Whether the table would cut a component's name, namespace, kind or replicas to fit `width`."""
    natural = [max(cells(row[i]) for row in rows) for i in range(len(HEADER))]
    return any(size < most for i, (size, most) in enumerate(zip(sizes(rows, width, FLEXIBLE), natural, strict=True))
               if i not in FLEXIBLE)


def map_table(components: Sequence[InstalledComponent], permissions_by_component: PermissionsByComponent,
              findings: Sequence[Finding], scrubber: SecretScrubber | None = None, width: int | None = None,
              wide: bool = False) -> str:
    """Components as aligned columns, each followed by its settings and integrations; then each ServiceAccount's
    permissions; then the findings. Fitted to `width` unless `wide`: columns cut (the version, nodes and
    ServiceAccount first; when the others would be cut too, the kind, nodes and ServiceAccount of each component
    go on a line under it), lines of prose wrapped."""
    width = None if wide else width
    inner = None if width is None else width - len(INDENT)
    doc = _human(components, permissions_by_component, findings, scrubber)
    comps = doc["components"]
    if not comps:
        out = ["no Argo component found"]
    else:
        rows: list[tuple[str, ...]] = [HEADER]
        rows += [(_line(c["name"]), _line(c["namespace"]), _line(c["component"]), _line(c["version"] or "?"),
                            "?" if c["replicas"] is None else str(c["replicas"]), _line(",".join(c["nodes"]) or "-"),
                            _line(c["serviceAccount"])) for c in comps]
        narrow = width is not None and _narrow(rows, width)
        if narrow:  # the columns but the name, namespace, version and replicas go under each component
            lines = columns([(n, ns, v, r) for n, ns, _, v, r, _, _ in rows], width, flexible=(2,)).split("\n")
        else:
            lines = columns(rows, width, flexible=FLEXIBLE).split("\n")
        out = [lines[0]]
        for line, comp, row in zip(lines[1:], comps, rows[1:], strict=True):
            out.append(line)
            if narrow:
                out += wrap(f"{row[2]} on {row[5]}, ServiceAccount {row[6]}", width, INDENT, INDENT * 2)
            if comp["settings"]:
                out += wrap("settings: " + _line(", ".join(f"{k}={v}" for k, v in comp["settings"].items())), width,
                            INDENT, INDENT * 2)
            for item in comp["integrations"]:
                out += wrap(f"→ {_line(item['target'])}: {_line(item['api'])}", width, INDENT, INDENT + "  ")
                out += wrap(f"auth: {_line(item['auth'])}", width, INDENT * 2, INDENT * 2 + "      ")
                out += wrap(f"for:  {_line(item['purpose'])}", width, INDENT * 2, INDENT * 2 + "      ")
        out += ["", "PERMISSIONS"]
        seen: set[tuple[str, str]] = set()
        for comp in comps:
            account = (comp["namespace"], comp["serviceAccount"])
            if account in seen:
                continue
            seen.add(account)
            users = [c["name"] for c in comps if (c["namespace"], c["serviceAccount"]) == account]
            out += wrap(f"ServiceAccount {account[0]}/{account[1]} ({', '.join(users)})", width, "", INDENT)
            perms = comp["permissions"]
            if perms:
                grants = [(_line(_resource(p)), _line(", ".join(p["verbs"])),
                           "cluster-wide" if p["namespace"] is None else f"in {_line(p['namespace'])}",
                           "via " + _line(" → ".join(p["via"]))) for p in perms]
                out += [INDENT + line for line in text_columns(grants, inner, 3, (1,), header=False)]
            else:
                out.append(INDENT + "no grant in the input")
            for note in comp["permissionNotes"]:
                out += wrap(f"note: {_line(note)}", width, INDENT, INDENT * 2)
    out += ["", "FINDINGS"]
    if doc["findings"]:
        found = [(str(f["severity"]).upper(), _line(f["rule"]), _line(f["title"])) for f in doc["findings"]]
        out += [INDENT + line for line in columns(found, inner, flexible=(2,), header=False).split("\n")]
    else:
        out.append(INDENT + "none")
    return "\n".join(out)


# -- the graphs -----------------------------------------------------------------------------------------------------


class _Graph:
    """Nodes (components, then the external targets) and labelled edges, with ids safe for Mermaid and DOT."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.nodes: dict[str, tuple[str, bool]] = {}
        """id → (label lines joined by newlines, whether it is a component)."""
        self.edges: list[tuple[str, str, str]] = []
        self._ids: dict[str, str] = {}
        comps = doc["components"]
        for comp in comps:
            version = f" {comp['version']}" if comp["version"] else ""
            replicas = f" ×{comp['replicas']}" if comp["replicas"] is not None else ""
            label = "\n".join([comp["name"], f"{comp['component']}{version}{replicas}",
                               f"ns {comp['namespace']}, SA {comp['serviceAccount']}"])
            self.nodes[self._id("c", f"{comp['namespace']}/{comp['name']}")] = (label, True)
        for comp in comps:
            source = self._id("c", f"{comp['namespace']}/{comp['name']}")
            for item in comp["integrations"]:
                target = self._target(comps, comp, str(item["target"]))
                label = f"{item['api']} / {item['auth']}"
                if item["target"] == "clients":
                    self.edges.append((target, source, label))
                else:
                    self.edges.append((source, target, label))

    def _id(self, prefix: str, key: str) -> str:
        found = self._ids.get(f"{prefix}:{key}")
        if found is None:
            base = f"{prefix}_" + re.sub(r"[^A-Za-z0-9_]", "_", key)
            found, n = base, 1
            while found in self._ids.values():
                n += 1
                found = f"{base}_{n}"
            self._ids[f"{prefix}:{key}"] = found
        return found

    def _target(self, comps: Sequence[Mapping[str, Any]], comp: Mapping[str, Any], target: str) -> str:
        """The node of an integration's target: a component of that workload name (its own namespace first), else
        an external node."""
        same = [c for c in comps if c["name"] == target]
        same.sort(key=lambda c: c["namespace"] != comp["namespace"])
        if same:
            return self._id("c", f"{same[0]['namespace']}/{same[0]['name']}")
        node = self._id("x", target)
        if node not in self.nodes:
            self.nodes[node] = (EXTERNAL.get(target, target), False)
        return node


def _mermaid_text(text: str) -> str:
    """Text inside a quoted Mermaid label: entity codes for the characters Mermaid or HTML would act on."""
    text = text.replace("#", "#35;")
    for char, code in (('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("|", "#124;"), ("[", "#91;"),
                       ("]", "#93;"), ("{", "#123;"), ("}", "#125;"), ("`", "#96;")):
        text = text.replace(char, code)
    return text


def map_mermaid(components: Sequence[InstalledComponent], permissions_by_component: PermissionsByComponent,
                findings: Sequence[Finding], scrubber: SecretScrubber | None = None) -> str:
    """A `flowchart LR`: components as boxes, external targets as rounded nodes, arrows labelled "API / auth"."""
    graph = _Graph(_human(components, permissions_by_component, findings, scrubber))
    out = ["flowchart LR"]
    for node, (label, component) in graph.nodes.items():
        text = "<br/>".join(_mermaid_text(_line(part)) for part in label.split("\n"))
        out.append(f'    {node}["{text}"]' if component else f'    {node}(["{text}"])')
    for source, target, label in graph.edges:
        out.append(f'    {source} -->|"{_mermaid_text(_line(label))}"| {target}')
    return "\n".join(out)


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def map_dot(components: Sequence[InstalledComponent], permissions_by_component: PermissionsByComponent,
            findings: Sequence[Finding], scrubber: SecretScrubber | None = None) -> str:
    """A Graphviz digraph: components as boxes, external targets as ellipses, edges labelled "API / auth"."""
    graph = _Graph(_human(components, permissions_by_component, findings, scrubber))
    out = ["digraph argo {", "    rankdir=LR;", '    node [fontname="Helvetica", fontsize=10];',
           '    edge [fontname="Helvetica", fontsize=9];']
    for node, (label, component) in graph.nodes.items():
        text = "\\n".join(_dot_text(_line(part)) for part in label.split("\n"))
        out.append(f'    "{node}" [label="{text}", shape={"box" if component else "ellipse"}];')
    for source, target, label in graph.edges:
        out.append(f'    "{source}" -> "{target}" [label="{_dot_text(_line(label))}"];')
    out.append("}")
    return "\n".join(out)


def render(output: str, components: Sequence[InstalledComponent], permissions_by_component: PermissionsByComponent,
           findings: Sequence[Finding], scrubber: SecretScrubber | None = None, width: int | None = None,
           wide: bool = False) -> str:
    """The map in one of OUTPUTS (`table`, `json`, `mermaid`, `dot`), without a trailing newline; the table fitted
    to `width` unless `wide`."""
    if output == "json":
        return dumps(map_json(components, permissions_by_component, findings, scrubber))
    if output == "table":
        return map_table(components, permissions_by_component, findings, scrubber, width, wide)
    renderer = {"mermaid": map_mermaid, "dot": map_dot}.get(output)
    if renderer is None:
        raise ValueError(f"unknown map output {output!r}; one of {', '.join(OUTPUTS)}")
    return renderer(components, permissions_by_component, findings, scrubber)
