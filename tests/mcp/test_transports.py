"""`argo-doctor mcp` as MCP clients run it: a process over stdio, or over streamable HTTP with (and without) the
bearer token; with --live, against the fake API server, and `refresh`; its usage errors."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from argo_doctor.cli import main
from mcp import Client
from tests import children
from tests.live.fakeapi import FakeApiServer, load_bundle, write_kubeconfig
from tests.mcp import EXAMPLES, answer, cli_json

SCRIPT = Path(sys.executable).with_name("argo-doctor")
EXAMPLE = EXAMPLES / "incidents" / "stuck-rollout"
TOKEN = "3f9a6c1e8b2d4f70a5c9e1b3d7f20486"


def test_stdio_serves_the_scan_of_the_input() -> None:
    expected = cli_json("scan", EXAMPLE, "-o", "json", "--fail-on", "never")

    async def dialogue() -> list[Any]:
        params = StdioServerParameters(command=str(SCRIPT), args=["mcp", str(EXAMPLE)])
        async with Client(params) as client:
            tools = await client.list_tools()
            scan = await client.call_tool("scan", {"full": True})
            first = await client.call_tool("finding", {"id": expected["findings"][0]["id"]})
            return [tools, scan, first]

    tools, scan, first = anyio.run(dialogue)
    assert "refresh" not in {t.name for t in tools.tools} and "scan" in {t.name for t in tools.tools}
    assert answer(scan)["findings"] == expected["findings"]
    assert answer(first)["summary"] == expected["findings"][0]["summary"]


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`argo-doctor mcp --http 127.0.0.1:0` on the example, and the URL it says it serves."""
    token = tmp_path_factory.mktemp("token") / "token"
    token.write_text(TOKEN + "\n")
    process = children.popen([str(SCRIPT), "mcp", "--http", "0", "--token-file", str(token), str(EXAMPLE)],
                             stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
    assert found, line
    try:
        yield found.group(), process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def _http_scan(url: str, token: str | None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http, streamable_http_client(url, http_client=http) as (
            read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await session.call_tool("scan", {})


def test_http_answers_with_the_token_and_refuses_without(http_server: tuple[str, subprocess.Popen[str]]) -> None:
    url, _ = http_server
    expected = cli_json("scan", EXAMPLE, "-o", "json", "--fail-on", "never")
    scan = anyio.run(_http_scan, url, TOKEN)
    assert [f["id"] for f in answer(scan)["findings"]] == [f["id"] for f in expected["findings"]]
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Authorization": f"Basic {TOKEN}"}):
        refused = httpx2.post(url, headers={**headers, "Accept": "application/json, text/event-stream"},
                              json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        assert TOKEN not in refused.text
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client fails as its transport does, in a group
        anyio.run(_http_scan, url, None)


def test_http_stops_on_sigterm_with_status_0(http_server: tuple[str, subprocess.Popen[str]]) -> None:
    url, process = http_server
    anyio.run(_http_scan, url, TOKEN)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert process.stderr is not None and "Traceback" not in process.stderr.read()


def test_live_reads_the_cluster_once_and_refresh_reads_it_again(tmp_path: Path) -> None:
    objects, logs = load_bundle(EXAMPLE)
    with FakeApiServer(objects, logs) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")
        expected = cli_json("scan", "--live", "--kubeconfig", kubeconfig, "-q", "-o", "json", "--fail-on", "never")

        async def dialogue() -> list[Any]:
            params = StdioServerParameters(command=str(SCRIPT), args=["mcp", "--live", "--kubeconfig",
                                                                      str(kubeconfig), "-q"])
            async with Client(params) as client:
                tools = await client.list_tools()
                before = answer(await client.call_tool("scan", {"full": True}))
                first = answer(await client.call_tool("scan", {"rule": "rollout-stuck-degraded"}))
                api.set_objects([o for o in objects if o.get("kind") != "Rollout"])
                still = answer(await client.call_tool("scan", {}))
                refreshed = answer(await client.call_tool("refresh", {}))
                after = answer(await client.call_tool("scan", {}))
                return [tools, before, first, still, refreshed, after]

        tools, before, first, still, refreshed, after = anyio.run(dialogue)
    assert "refresh" in {t.name for t in tools.tools}
    assert [f["id"] for f in before["findings"]] == [f["id"] for f in expected["findings"]]
    assert before["source"]["inputs"].startswith("live: ")
    assert first["total"] >= 1 and still["total"] == before["total"]  # the input is fixed until refresh
    assert refreshed["findings"] == after["total"] < before["total"]
    assert not [f for f in after["findings"] if f["rule"] == "rollout-stuck-degraded"]


USAGE = [
    (["--token-file", "TOKEN"], "--token-file is the token of --http"),
    (["--http", "127.0.0.1:0"], "--http needs --token-file"),
    (["--http", "localhost:port", "--token-file", "TOKEN"], "--http 'localhost:port' is not HOST:PORT"),
    (["--max-result-bytes", "100"], "--max-result-bytes 100: at least 4096"),
    (["--option", "nope.x=1"], "nope.x"),
]


@pytest.mark.parametrize(("args", "message"), USAGE, ids=[a[0] for a, _ in USAGE])
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    result = CliRunner().invoke(main, ["mcp", *(str(token) if a == "TOKEN" else a for a in args), str(EXAMPLE)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_unreadable_input_is_one_line_before_serving(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["mcp", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "missing" in result.stderr and "serving" not in result.stderr
    assert result.stdout == ""  # stdout belongs to the protocol
