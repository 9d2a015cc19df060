"""The MCP server: read-only tools over one input, on the official MCP Python SDK, served over stdio or streamable
HTTP behind a bearer token. Nothing here writes to a cluster: `fix` and `serve` are not reachable from it."""

from __future__ import annotations

import hmac
import importlib.resources
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import TextResource
from mcp_types import ToolAnnotations
from pydantic import Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from argo_doctor import __version__
from argo_doctor.engine import select_analyzers
from argo_doctor.errors import ArgoDoctorError
from argo_doctor.mcp import tools
from argo_doctor.mcp.session import Session
from argo_doctor.report.json import compact
from argo_doctor.sources.redact import clean

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
INSTRUCTIONS = """\
argo-doctor diagnoses Argo CD, Argo Rollouts, Argo Events, Argo Workflows and the Argo CD Image Updater from one
input fixed when this server started (a bundle, a tarball, or a live cluster read once). Its rules are
deterministic: each finding comes with evidence (objects, log lines with file:line, audit events) and a fix.
Start with `scan` (compact findings, most severe first), then `finding` for the one that matters, `timeline` around
it for what happened across components, `health` for an object's Argo CD health and why. `map` shows components,
integrations and permissions; `deprecations` and `upgrade_check` answer version questions; `rules` says what was
checked, so that no finding means checked and fine. Results are paged: pass `nextCursor` back as `cursor`."""

CursorArg = Annotated[str | None, Field(description="`nextCursor` of the previous page of the same call; omit for "
                                                    "the first page.")]
Texts = str | list[str] | None


class _Server(MCPServer):
    """MCPServer whose rejected arguments are one line naming the argument (pydantic's report is several)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            problems = "; ".join(f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
                                 for error in exc.__cause__.errors())
            raise ToolError(f"{name}: bad arguments: {problems}") from exc.__cause__


def docs_folder() -> Path:
    """The project's documentation (`docs/*.md`), shipped in the package (a link to docs/ in the checkout)."""
    return Path(str(importlib.resources.files("argo_doctor"))) / "docs"


def rules_markdown() -> str:
    """The rules' documentation, from the rules themselves: id, title, what each looks for, its options."""
    lines = ["# argo-doctor rules", ""]
    for analyzer in select_analyzers():
        module = sys.modules[type(analyzer).__module__]
        lines += [f"## {analyzer.id}", "", f"**{analyzer.title}**", "", (module.__doc__ or "").strip(), ""]
        lines += [f"- option `{analyzer.id}.{key}`: {meaning}" for key, meaning in analyzer.options.items()]
        lines += [""] if analyzer.options else []
    return "\n".join(lines)


def _resources(server: MCPServer) -> None:
    """The project's own texts, as they are: nothing of the input is in them (and redaction would mangle the
    examples of what it redacts)."""
    server.add_resource(TextResource(uri="argo-doctor://rules", name="rules", title="argo-doctor rules",
                                     description="Every rule: what it looks for and its options.",
                                     mime_type="text/markdown", text=rules_markdown()))
    folder = docs_folder()
    for path in sorted(folder.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), path.stem)
        server.add_resource(TextResource(uri=f"argo-doctor://docs/{path.name}", name=path.stem, title=title,
                                         description=f"argo-doctor documentation: {title}",
                                         mime_type="text/markdown", text=text))


def build_server(session: Session, cap: int) -> MCPServer:
    """The server of one session, each result at most `cap` bytes."""
    server = _Server(name="argo-doctor", title="argo-doctor", version=__version__, instructions=INSTRUCTIONS,
                     log_level="WARNING")

    def call(tool: Callable[..., str], **arguments: Any) -> str:
        with session.using() as state:
            try:
                return tool(state, cap, **arguments)
            except ArgoDoctorError as exc:
                raise ToolError(clean(str(exc), state.snap.scrubber, human=True)) from None

    def tool(description: str, name: str | None = None) -> Callable[[Callable[..., str]], Callable[..., str]]:
        return server.tool(name=name, description=description, annotations=READ_ONLY, structured_output=False)

    @tool("Findings of every argo-doctor rule on this input, most severe first: start here. Compact by default "
          "(id, severity, rule, title, objects); `full` gives each as the JSON contract has it (summary, evidence, "
          "remediation). Filters narrow by rule id, Application, namespace and least severity. Returns "
          "{source, bySeverity, errors (the first input problems, each of kind error or note), errorCount, noteCount, "
          "total, offset, findings, nextCursor?}.")
    def scan(
        rule: Annotated[Texts, Field(description="Only these rule ids (see `rules`).")] = None,
        app: Annotated[Texts, Field(description="Only what these Argo CD Applications manage: NAME or NS/NAME.")]
        = None,
        namespace: Annotated[Texts, Field(description="Only findings about objects of these namespaces.")] = None,
        minSeverity: Annotated[Literal["critical", "high", "medium", "low", "info"] | None,
                               Field(description="Only findings at least this severe.")] = None,
        full: Annotated[bool, Field(description="Each finding in full instead of compact.")] = False,
        cursor: CursorArg = None,
    ) -> str:
        return call(tools.scan, rule=rule, app=app, namespace=namespace, minSeverity=minSeverity, full=full,
                    cursor=cursor)

    @tool("One finding in full by its id (from `scan`): summary (the root cause), objects, evidence with exact "
          "locations (file:line, object and field, audit event id) and times, the causal chain (evidence indexes in "
          "order), and the remediation (text, docs, patch or command). Long evidence is paged.")
    def finding(
        id: Annotated[str, Field(description="The finding id, RULE:HEX, as `scan` gives it.")],
        cursor: CursorArg = None,
    ) -> str:
        return call(tools.finding, id=id, cursor=cursor)

    @tool("What happened across components, in one order: log lines, Kubernetes events, audit records and object "
          "timestamps, each with its location and the findings it is evidence of. Give `around` (a time, a "
          "duration before the input's end like -2h, or a finding id) to see a window of `window` around it; "
          "without it, every entry, oldest first.")
    def timeline(
        around: Annotated[str | None, Field(description="2026-11-22T15:03:00Z, -2h, or a finding id.")] = None,
        window: Annotated[str, Field(description="Width of the window around `around` (Go duration).")] = "10m",
        components: Annotated[Texts, Field(description="Only these components, as this timeline names them (each "
                                                       "answer lists them in `components`).")] = None,
        cursor: CursorArg = None,
    ) -> str:
        return call(tools.timeline, around=around, window=window, components=components, cursor=cursor)

    @tool("The health Argo CD shows (or would show) for objects matching kind, namespace and name: status, message, "
          "which check decided it (Argo CD's built-in check, a Lua customization, the Application's own status), "
          "and the ids of findings about the object. Objects whose kind has no health check (status null) appear "
          "only when asked for by kind or name.")
    def health(
        kind: Annotated[str | None, Field(description="Kind, as kubectl takes it: Rollout, rollout, rollouts.")]
        = None,
        namespace: Annotated[str | None, Field(description="Namespace.")] = None,
        name: Annotated[str | None, Field(description="Name, or a glob like payments-*.")] = None,
        unhealthyOnly: Annotated[bool, Field(description="Only what is not Healthy.")] = False,
        cursor: CursorArg = None,
    ) -> str:
        return call(tools.health, kind=kind, namespace=namespace, name=name, unhealthyOnly=unhealthyOnly,
                    cursor=cursor)

    @tool("The installation: each Argo component with its version, replicas, nodes and ServiceAccount, how it "
          "integrates (which API, what auth, for what), the permissions its ServiceAccount really has, and the "
          "findings of the permission and known-bug rules.", name="map")
    def installation_map(
        component: Annotated[str | None, Field(description="Only this component (name, component like "
                                                           "repo-server, or product like argo-rollouts).")] = None,
        permissions: Annotated[bool, Field(description="Include each component's permissions.")] = True,
        cursor: CursorArg = None,
    ) -> str:
        return call(tools.installation, component=component, permissions=permissions, cursor=cursor)

    @tool("Uses of deprecated and removed Kubernetes APIs in the input (objects per managedFields manager, "
          "manifests, chart templates), at a target Kubernetes version: what is removed there, what replaces it.")
    def deprecations(
        targetVersion: Annotated[str | None, Field(description="Kubernetes version, e.g. 1.32; default: the "
                                                               "cluster's, else every known deprecation.")] = None,
        cursor: CursorArg = None,
    ) -> str:
        return call(tools.deprecated_apis, targetVersion=targetVersion, cursor=cursor)

    @tool("Before an upgrade: each breaking or behaviour change documented between the installed Argo CD release "
          "and `to` (and, when given, the Image Updater's, Rollouts', Workflows' and Events' targets) that applies "
          "to this installation, with the evidence and the guide's section. A product without a target (Image "
          "Updater, Rollouts, Workflows, Events) gets every change documented after its installed release, at medium "
          "at most; `products` says what is installed and which target was used. Changes that do not apply are not "
          "listed; `breaking` counts those at high or critical. Compact by default; `full`, or `finding` with an id "
          "once this has run, gives them in full.")
    def upgrade_check(
        to: Annotated[str, Field(description="The Argo CD release to upgrade to, vX.Y.Z.")],
        installed: Annotated[str | None, Field(description="The installed Argo CD release (default: read from its "
                                                           "images).")] = None,
        toImageUpdater: Annotated[str | None, Field(description="Argo CD Image Updater target, vX.Y.Z.")] = None,
        toRollouts: Annotated[str | None, Field(description="Argo Rollouts target, vX.Y.Z.")] = None,
        toWorkflows: Annotated[str | None, Field(description="Argo Workflows target, vX.Y.Z.")] = None,
        toEvents: Annotated[str | None, Field(description="Argo Events target, vX.Y.Z.")] = None,
        full: Annotated[bool, Field(description="Each change in full instead of compact.")] = False,
        cursor: CursorArg = None,
    ) -> str:
        return call(tools.upgrade_check, to=to, installed=installed, full=full, cursor=cursor,
                    toImageUpdater=toImageUpdater, toRollouts=toRollouts, toWorkflows=toWorkflows, toEvents=toEvents)

    @tool("Every rule argo-doctor ran: its id, title, what it looks for, its options, and how many findings it "
          "raised on this input. A rule with no finding looked and found nothing.")
    def rules(cursor: CursorArg = None) -> str:
        return call(tools.rules, cursor=cursor)

    if session.live:
        @tool("Read the live cluster again (the input is otherwise the one read when the server started); "
              "cursors given before are then refused. Returns what was read and the count of findings.")
        def refresh() -> str:
            try:
                session.refresh()
            except ArgoDoctorError as exc:
                raise ToolError(clean(str(exc), human=True)) from None
            with session.using() as state:
                return compact(tools.summary(state))

    _resources(server)
    return server


class BearerAuth:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` gets 401 and reaches nothing."""

    def __init__(self, app: ASGIApp, token: bytes) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, token = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), self.token):
                body = b'{"error":"unauthorized: send Authorization: Bearer <the token of --token-file>"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="argo-doctor"'),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(server: MCPServer, host: str, port: int, token: bytes, ready: Callable[[str], None]) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted; `ready` is told the URL once bound."""
    import uvicorn

    from argo_doctor.listen import QuietServer, bind

    sock = bind(host, port, "--http")
    bound = sock.getsockname()[1]
    app = BearerAuth(server.streamable_http_app(host=host), token)
    shown = f"[{host}]" if ":" in host else host
    ready(f"http://{shown}:{bound}/mcp")
    config = uvicorn.Config(app, log_level="warning", lifespan="on", server_header=False)
    with sock:
        QuietServer(config).run(sockets=[sock])
