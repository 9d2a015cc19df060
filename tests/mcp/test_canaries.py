"""No secret planted in the input reaches any answer of `argo-doctor mcp`: every tool, with every argument that
shows more (full findings, each finding, the whole timeline, health by name, the map with permissions, an upgrade
check), and the tool errors, whose text may quote what the caller gave and what the input holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp import Client
from tests.hostile.test_canaries import CANARY, bundle, leaks
from tests.mcp import every_page, server_of, talk, text

__all__ = ["bundle"]  # the canary bundle of the command-line test, a fixture here too


@pytest.fixture(scope="module")
def answers(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The text of every answer of every tool on the canary bundle, pages small so that items get shortened too."""
    server = server_of(bundle, tmp_path_factory.mktemp("mcp"), cap=6000)

    async def dialogue(client: Client) -> list[str]:
        said: list[str] = []

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
            result = await client.call_tool(tool, arguments)
            said.append(text(result))
            return None if result.is_error else json.loads(text(result))

        findings = await every_page(client, "scan", "findings", {"full": True})
        said.append(json.dumps(findings))
        for finding in findings:
            await call("finding", {"id": finding["id"]})
            await call("timeline", {"around": finding["id"], "window": "2h"})
        said.append(json.dumps(await every_page(client, "timeline", "entries", {})))
        objects = await every_page(client, "health", "objects", {})
        said.append(json.dumps(objects))
        for obj in objects:
            await call("health", {"kind": obj["kind"], "namespace": obj["namespace"], "name": obj["name"]})
        for name in ("argocd-secret", "argocd-cm", "*"):
            await call("health", {"name": name})
        said.append(json.dumps(await every_page(client, "map", "components", {})))
        said.append(json.dumps(await every_page(client, "deprecations", "uses", {})))
        said.append(json.dumps(await every_page(client, "rules", "rules", {})))
        await call("upgrade_check", {"to": "v3.0.0", "installed": "v2.13.0", "full": True})
        # errors that quote the caller's text: the values of the input's Secrets, which the scrubber knows, are
        # redacted there too (a text the caller invents is its own)
        for place, value in list(CANARY.items())[:5]:
            await call("finding", {"id": value})
            await call("scan", {"app": value, "namespace": place})
            await call("timeline", {"around": value})
        return said

    return talk(server, dialogue)


def test_no_canary_in_any_answer(answers: list[str]) -> None:
    assert {n: leaks(said) for n, said in enumerate(answers) if leaks(said)} == {}


def test_the_canaries_were_reached(answers: list[str]) -> None:
    """The answers cite the places the canaries were planted in, redacted: the test above can fail."""
    everything = "\n".join(answers)
    for needle in ("with password=<redacted>", "Authorization: Bearer <redacted>", "client_secret=<redacted>",
                   "<redacted private key>", "DB_PASSWORD=<redacted> rejected", "<redacted secret value>"):
        assert needle in everything, needle
    assert any("truncated" in said for said in answers)
