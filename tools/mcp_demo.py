#!/usr/bin/env python3
"""`make demo`'s look at `argo-doctor mcp`: start it over stdio on an example bundle, as an MCP client does, list its
tools, and ask what an assistant asks first (the most severe findings, then the first one in full).

    .venv/bin/python tools/mcp_demo.py examples/incidents/stuck-rollout
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp.client.stdio import StdioServerParameters

from mcp import Client


async def demo(bundle: str) -> None:
    server = StdioServerParameters(command=str(Path(sys.executable).with_name("argo-doctor")), args=["mcp", bundle])
    async with Client(server) as client:
        tools = await client.list_tools()
        print(f"argo-doctor mcp {bundle}: tools {', '.join(t.name for t in tools.tools)}")
        scan = json.loads((await client.call_tool("scan", {"minSeverity": "high"})).content[0].text)
        for finding in scan["findings"]:
            print(f"  {finding['severity']:8} {finding['id']}  {finding['title']}")
        if scan["findings"]:
            first = json.loads((await client.call_tool("finding", {"id": scan["findings"][0]["id"]})).content[0].text)
            print(f"finding {first['id']}: {first['summary'][:300]}…")


if __name__ == "__main__":
    anyio.run(demo, sys.argv[1] if len(sys.argv) > 1 else "examples/incidents/stuck-rollout")
