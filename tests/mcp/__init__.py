"""Tests of `argo-doctor mcp`: its tools through the official SDK's client (in process, over stdio and over HTTP),
checked against the command line's JSON of the same input."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from click.testing import CliRunner
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

from argo_doctor.cli import main
from argo_doctor.mcp.paging import DEFAULT_CAP
from argo_doctor.mcp.server import build_server
from argo_doctor.mcp.session import Session
from argo_doctor.sources import bundle
from mcp import Client

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
T = TypeVar("T")


def session_of(path: Path, workdir: Path) -> Session:
    """A session on files, read as `argo-doctor mcp PATH` reads them."""
    return Session(lambda folder: (bundle.load([path], folder), (path,)), workdir, False)


def server_of(path: Path, workdir: Path, cap: int = DEFAULT_CAP) -> MCPServer:
    return build_server(session_of(path, workdir), cap)


def talk(server: MCPServer, dialogue: Callable[[Client], Awaitable[T]]) -> T:
    """What `dialogue` makes of a client connected in process to `server`."""
    async def run() -> T:
        async with Client(server) as client:
            return await dialogue(client)
    return anyio.run(run)


def text(result: CallToolResult) -> str:
    """The one text a tool answers with."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


def answer(result: CallToolResult) -> dict[str, Any]:
    """A tool's JSON answer (the call must have succeeded)."""
    assert not result.is_error, text(result)
    doc: dict[str, Any] = json.loads(text(result))
    return doc


async def every_page(client: Client, tool: str, key: str, arguments: dict[str, Any] | None = None,
                     cap: int | None = None) -> list[dict[str, Any]]:
    """Every item of a paged answer, following `nextCursor`; each page within `cap` bytes when given."""
    arguments = dict(arguments or {})
    items: list[dict[str, Any]] = []
    while True:
        result = await client.call_tool(tool, arguments)
        if cap is not None:
            assert len(text(result).encode()) <= cap
        doc = answer(result)
        assert doc["offset"] == len(items)
        items += doc[key]
        if "nextCursor" not in doc:
            assert len(items) == doc["total"]
            return items
        arguments["cursor"] = doc["nextCursor"]


def cli_json(*args: str | Path) -> dict[str, Any]:
    """The JSON a command prints (exit 0 or 1)."""
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc
