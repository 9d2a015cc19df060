"""Each tool of `argo-doctor mcp`, called through the SDK's client in process, answers what the command line answers
for the same input: `scan -o json`, `finding`'s part of it, `timeline -o json`, `health -o json`, `map -o json`,
`deprecations -o json`, `upgrade-check -o json`; filters, paging and bad arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from argo_doctor.engine import select_analyzers
from mcp import Client
from tests.mcp import EXAMPLES, answer, cli_json, every_page, server_of, talk, text

INCIDENTS = EXAMPLES / "incidents"
COMPARED = [INCIDENTS / "stuck-rollout", INCIDENTS / "repo-flapping", INCIDENTS / "unwanted-sync",
            INCIDENTS / "events-pipeline", EXAMPLES / "argocd-basic"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, MCPServer]:
    return {path.name: server_of(path, tmp_path_factory.mktemp(path.name)) for path in
            [*COMPARED, INCIDENTS / "upgrade-readiness", INCIDENTS / "deprecated-callers"]}


def test_the_tools_and_their_schemas(servers: dict[str, MCPServer]) -> None:
    listed = talk(servers["stuck-rollout"], lambda c: c.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == ["deprecations", "finding", "health", "map", "rules", "scan", "timeline", "upgrade_check"]
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint, tool.name
        assert len(tool.description or "") > 80, tool.name
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), (tool.name, name)
    scan = tools["scan"].input_schema
    assert scan.get("required", []) == []
    severity = next(s for s in scan["properties"]["minSeverity"]["anyOf"] if "enum" in s)
    assert severity["enum"] == ["critical", "high", "medium", "low", "info"]
    assert tools["finding"].input_schema["required"] == ["id"]
    assert tools["upgrade_check"].input_schema["required"] == ["to"]


@pytest.mark.parametrize("example", COMPARED, ids=lambda p: p.name)
def test_scan_pages_hold_the_findings_of_scan_json(servers: dict[str, MCPServer], example: Path) -> None:
    expected = cli_json("scan", example, "-o", "json", "--fail-on", "never")

    async def dialogue(client: Client) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        first = answer(await client.call_tool("scan", {}))
        return first, await every_page(client, "scan", "findings", {"full": True}), \
            await every_page(client, "scan", "findings")

    first, full, compact = talk(servers[example.name], dialogue)
    assert full == expected["findings"]
    assert [f["id"] for f in compact] == [f["id"] for f in expected["findings"]]
    for short, whole in zip(compact, expected["findings"], strict=True):
        assert set(short) <= {"id", "severity", "rule", "title", "objects", "group"}
        assert (short["severity"], short["rule"], short["title"]) == (whole["severity"], whole["rule"], whole["title"])
        assert len(short["objects"]) == len(whole["objects"])
    assert first["source"] == expected["source"]
    assert first["errors"] == expected["errors"][:10]
    assert first["errorCount"] == sum(1 for e in expected["errors"] if e["kind"] == "error")
    assert first["noteCount"] == sum(1 for e in expected["errors"] if e["kind"] == "note")
    counts: dict[str, int] = {}
    for f in expected["findings"]:
        counts[f["severity"]] = counts.get(f["severity"], 0) + 1
    assert first["bySeverity"] == counts


def test_scan_filters_as_the_command_line_narrows(servers: dict[str, MCPServer]) -> None:
    example = INCIDENTS / "stuck-rollout"
    everything = cli_json("scan", example, "-o", "json", "--fail-on", "never")["findings"]
    rule = everything[0]["rule"]
    namespace = next(r["namespace"] for f in everything for r in f["objects"] if r["namespace"])
    narrowed = cli_json("scan", example, "-o", "json", "--fail-on", "never", "-n", namespace)["findings"]

    async def dialogue(client: Client) -> list[Any]:
        return [
            await every_page(client, "scan", "findings", {"rule": rule}),
            await every_page(client, "scan", "findings", {"rule": [rule, "sync-failed"], "minSeverity": "high"}),
            await every_page(client, "scan", "findings", {"namespace": namespace}),
            await every_page(client, "scan", "findings", {"minSeverity": "critical"}),
        ]

    by_rule, by_rules, by_namespace, critical = talk(servers["stuck-rollout"], dialogue)
    assert [f["id"] for f in by_rule] == [f["id"] for f in everything if f["rule"] == rule]
    assert [f["id"] for f in by_rules] == [f["id"] for f in everything if f["rule"] in (rule, "sync-failed")
                                           and f["severity"] in ("critical", "high")]
    assert [f["id"] for f in by_namespace] == [f["id"] for f in narrowed]
    assert [f["id"] for f in critical] == [f["id"] for f in everything if f["severity"] == "critical"]


def test_scan_by_application_is_scan_app(servers: dict[str, MCPServer]) -> None:
    example = INCIDENTS / "unwanted-sync"
    everything = cli_json("scan", example, "-o", "json", "--fail-on", "never")["findings"]
    apps = sorted({r["name"] for f in everything for r in f["objects"] if r["kind"] == "Application"})
    assert apps
    narrowed = cli_json("scan", example, "-o", "json", "--fail-on", "never", "--app", apps[0])["findings"]
    found = talk(servers["unwanted-sync"], lambda c: every_page(c, "scan", "findings", {"app": apps[0]}))
    assert [f["id"] for f in found] == [f["id"] for f in narrowed] and found


@pytest.mark.parametrize("example", COMPARED[:3], ids=lambda p: p.name)
def test_finding_is_the_json_contract_finding(servers: dict[str, MCPServer], example: Path) -> None:
    expected = cli_json("scan", example, "-o", "json", "--fail-on", "never")["findings"]

    async def dialogue(client: Client) -> list[dict[str, Any]]:
        found = []
        for whole in expected:
            doc = answer(await client.call_tool("finding", {"id": whole["id"]}))
            evidence = doc.pop("evidence")
            while "nextCursor" in doc:
                more = answer(await client.call_tool("finding", {"id": whole["id"], "cursor": doc["nextCursor"]}))
                evidence += more["evidence"]
                doc = {k: v for k, v in more.items() if k != "evidence"}
            doc.pop("total"), doc.pop("offset")
            assert [e.pop("index") for e in evidence] == list(range(len(evidence)))
            found.append({**doc, "evidence": evidence})
        return found

    found = talk(servers[example.name], dialogue)
    assert [{**f, "evidence": f["evidence"]} for f in found] == [
        {k: w[k] for k in f} for f, w in zip(found, expected, strict=True)]
    assert all(set(f) == set(w) for f, w in zip(found, expected, strict=True))


def test_timeline_around_a_finding_is_the_timeline_command(servers: dict[str, MCPServer]) -> None:
    example = INCIDENTS / "stuck-rollout"
    finding = cli_json("scan", example, "-o", "json", "--fail-on", "never")["findings"][0]["id"]
    expected = cli_json("timeline", example, "--around", finding, "--window", "30m", "-o", "json")["timeline"]
    everything = cli_json("timeline", example, "-o", "json")["timeline"]
    components = sorted({e["component"] for e in everything})

    async def dialogue(client: Client) -> list[Any]:
        window = await every_page(client, "timeline", "entries", {"around": finding, "window": "30m"})
        whole = await every_page(client, "timeline", "entries", {})
        one = await every_page(client, "timeline", "entries", {"components": components[0]})
        head = answer(await client.call_tool("timeline", {"around": finding, "window": "30m"}))
        return [window, whole, one, head]

    window, whole, one, head = talk(servers["stuck-rollout"], dialogue)
    assert window == expected and expected
    assert whole == everything
    assert one == [e for e in everything if e["component"] == components[0]]
    assert head["components"] == components and set(head["window"]) == {"from", "to"}


def test_health_is_the_health_command_with_its_basis(servers: dict[str, MCPServer]) -> None:
    example = INCIDENTS / "stuck-rollout"
    expected = {(o["kind"], o["namespace"], o["name"]): o["health"]
                for o in cli_json("health", example, "-o", "json")["objects"] if o["health"]}

    async def dialogue(client: Client) -> list[Any]:
        return [await every_page(client, "health", "objects", {}),
                await every_page(client, "health", "objects", {"kind": "rollouts", "unhealthyOnly": True}),
                await every_page(client, "health", "objects", {"kind": "ConfigMap", "name": "argocd-*"})]

    assessed, rollouts, maps = talk(servers["stuck-rollout"], dialogue)
    assert {(o["kind"], o["namespace"], o["name"]): {"status": o["status"], "message": o["message"]}
            for o in assessed} == expected
    assert rollouts and all(o["kind"] == "Rollout" and o["status"] != "Healthy" for o in rollouts)
    scan = cli_json("scan", example, "-o", "json", "--fail-on", "never")["findings"]
    for row in rollouts:
        assert row["basis"] == "Argo CD's built-in health check for argoproj.io/Rollout"
        assert row["findings"] == [f["id"] for f in scan if any(
            (r["kind"], r["namespace"], r["name"]) == ("Rollout", row["namespace"], row["name"]) for r in f["objects"])]
    assert maps and all(o["status"] is None and "no health check" in o["basis"] for o in maps)
    every_map = talk(servers["stuck-rollout"], lambda c: every_page(c, "health", "objects", {"kind": "configmaps"}))
    every_cli = cli_json("health", example, "-o", "json")["objects"]  # a kind asked for: those without a check too
    assert sorted(o["name"] for o in every_map) == sorted(o["name"] for o in every_cli if o["kind"] == "ConfigMap")
    assert every_map and all(o["status"] is None for o in every_map)


def test_map_is_the_map_command(servers: dict[str, MCPServer]) -> None:
    example = EXAMPLES / "argocd-basic"
    expected = cli_json("map", example, "-o", "json")

    async def dialogue(client: Client) -> list[Any]:
        whole = await every_page(client, "map", "components", {})
        head = answer(await client.call_tool("map", {}))
        bare = await every_page(client, "map", "components", {"component": "repo-server", "permissions": False})
        return [whole, head, bare]

    whole, head, bare = talk(servers["argocd-basic"], dialogue)
    assert whole == expected["components"]
    assert [f["id"] for f in head["findings"]] == [f["id"] for f in expected["findings"]]
    assert [c["name"] for c in bare] == [c["name"] for c in expected["components"] if c["component"] == "repo-server"]
    assert bare and all("permissions" not in c for c in bare)


def test_deprecations_is_the_deprecations_command(servers: dict[str, MCPServer]) -> None:
    example = INCIDENTS / "deprecated-callers"
    for target in (None, "1.22"):
        args = ["--target-version", target] if target else []
        expected = cli_json("deprecations", example, "-o", "json", *args)
        given = {"targetVersion": target} if target else {}
        found = talk(servers["deprecated-callers"], lambda c, g=given: every_page(c, "deprecations", "uses", g))
        assert found == expected["uses"] and found


def test_upgrade_check_is_the_upgrade_check_command(servers: dict[str, MCPServer]) -> None:
    example = INCIDENTS / "upgrade-readiness"
    expected = cli_json("upgrade-check", example, "--to", "v3.0.12", "--to-workflows", "v4.0.0", "-o", "json")

    async def dialogue(client: Client) -> list[Any]:
        args = {"to": "v3.0.12", "toWorkflows": "v4.0.0"}
        full = await every_page(client, "upgrade_check", "changes", {**args, "full": True})
        head = answer(await client.call_tool("upgrade_check", args))
        one = answer(await client.call_tool("finding", {"id": full[0]["id"]}))
        older = await client.call_tool("upgrade_check", {"to": "v2.0.0"})
        return [full, head, one, older]

    full, head, one, older = talk(servers["upgrade-readiness"], dialogue)
    assert full == expected["findings"] and full
    assert head["installed"] == "v2.14.11" and head["breaking"] == sum(
        1 for f in full if f["severity"] in ("critical", "high"))
    assert head["products"]["argo-cd"] == {"installed": "v2.14.11", "to": "v3.0.12"}
    assert head["products"]["argo-workflows"]["to"] == "v4.0.0"
    assert head["products"]["argocd-image-updater"]["to"] is None  # no target: the changes after it, at medium
    assert one["id"] == full[0]["id"]
    assert [{k: v for k, v in e.items() if k != "index"} for e in one["evidence"]] == full[0]["evidence"]
    assert older.is_error and text(older).endswith("to v2.0.0 is not after the installed v2.14.11")


def test_rules_say_what_was_checked(servers: dict[str, MCPServer]) -> None:
    example = INCIDENTS / "stuck-rollout"
    findings = cli_json("scan", example, "-o", "json", "--fail-on", "never")["findings"]
    rules = talk(servers["stuck-rollout"], lambda c: every_page(c, "rules", "rules"))
    assert [r["id"] for r in rules] == [a.id for a in select_analyzers()]
    for rule in rules:
        assert rule["findings"] == sum(1 for f in findings if f["rule"] == rule["id"])
        assert rule["looksFor"].startswith(rule["id"] + ":") and rule["title"]
    assert next(r for r in rules if r["id"] == "node-clock-skew")["options"]


BAD = [
    ("scan", {"minSeverity": "urgent"}, "scan: bad arguments: minSeverity: Input should be"),
    ("scan", {"full": "sometimes"}, "scan: bad arguments: full: Input should be a valid boolean"),
    ("scan", {"rule": "stuck-rollouts"}, "unknown rule"),
    ("scan", {"namespace": "nowhere"}, "namespace nowhere: no object of the input is in that namespace"),
    ("scan", {"app": "argocd/nope"}, "app argocd/nope: no such Application in the input"),
    ("scan", {"cursor": "not-a-cursor!"}, "cursor: not a cursor this server gave"),
    ("finding", {}, "finding: bad arguments: id: Field required"),
    ("finding", {"id": "sync-failed:000000000000"}, "no finding 'sync-failed:000000000000' in this input"),
    ("timeline", {"around": "yesterday"}, "around 'yesterday' is neither a time"),
    ("timeline", {"window": "ten minutes"}, "window 'ten minutes' is not a positive Go duration"),
    ("timeline", {"components": "dex"}, "components dex: not in this timeline"),
    ("map", {"component": "dex"}, "component 'dex': none in this installation"),
    ("health", {"kind": "Frobnicator"}, "kind 'Frobnicator': no object of that kind in this input (kinds: "),
    ("finding", {"id": "upgrade-check:000000000000"}, "upgrade_check's changes answer here once upgrade_check has run"),
    ("deprecations", {"targetVersion": "latest"}, "targetVersion 'latest' is not a Kubernetes version"),
    ("upgrade_check", {"to": "latest"}, "to 'latest' is not a release"),
    ("upgrade_check", {"to": "v3.0.0"}, "the installed Argo CD release is not in the input"),
    ("upgrade_check", {"to": "v3.0.0", "toRollouts": "soon"}, "toRollouts 'soon' is not a release"),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), BAD, ids=[f"{t}-{'-'.join(a)}" for t, a, _ in BAD])
def test_bad_arguments_are_one_line_tool_errors(servers: dict[str, MCPServer], tool: str, arguments: dict[str, Any],
                                                message: str) -> None:
    async def dialogue(client: Client) -> list[Any]:
        bad = await client.call_tool(tool, arguments)
        after = await client.call_tool("scan", {})  # the server goes on
        return [bad, after]

    bad, after = talk(servers["stuck-rollout"], dialogue)
    assert bad.is_error and message in text(bad) and "\n" not in text(bad), text(bad)
    assert answer(after)["total"] >= 1


def test_a_cursor_of_another_call_is_refused(servers: dict[str, MCPServer], tmp_path: Path) -> None:
    small = server_of(INCIDENTS / "stuck-rollout", tmp_path, cap=4096)

    async def dialogue(client: Client) -> list[Any]:
        first = answer(await client.call_tool("scan", {"full": True}))
        other = await client.call_tool("scan", {"full": True, "minSeverity": "high", "cursor": first["nextCursor"]})
        same = await client.call_tool("scan", {"full": True, "cursor": first["nextCursor"]})
        return [first, other, same]

    first, other, same = talk(small, dialogue)
    assert other.is_error and "belongs to a call with other arguments" in text(other)
    assert answer(same)["offset"] == len(first["findings"])


def test_resources_are_the_docs_and_the_rules(servers: dict[str, MCPServer]) -> None:
    async def dialogue(client: Client) -> list[Any]:
        listed = await client.list_resources()
        contract = await client.read_resource("argo-doctor://docs/json-output.md")
        rules = await client.read_resource("argo-doctor://rules")
        return [listed, contract, rules]

    listed, contract, rules = talk(servers["stuck-rollout"], dialogue)
    uris = sorted(str(r.uri) for r in listed.resources)
    docs = sorted((Path(__file__).resolve().parents[2] / "docs").glob("*.md"))
    assert uris == sorted(["argo-doctor://rules", *(f"argo-doctor://docs/{d.name}" for d in docs)])
    assert contract.contents[0].text == (Path(__file__).resolve().parents[2] / "docs" / "json-output.md").read_text()
    for analyzer in select_analyzers():
        assert f"## {analyzer.id}\n" in rules.contents[0].text


def test_results_stay_within_the_cap_and_pages_cover_everything(tmp_path: Path) -> None:
    example = INCIDENTS / "events-pipeline"
    cap = 4096
    server = server_of(example, tmp_path, cap=cap)
    expected = cli_json("scan", example, "-o", "json", "--fail-on", "never")
    timeline = cli_json("timeline", example, "-o", "json")["timeline"]

    async def dialogue(client: Client) -> list[Any]:
        findings = await every_page(client, "scan", "findings", {"full": True}, cap)
        entries = await every_page(client, "timeline", "entries", {}, cap)
        rules = await every_page(client, "rules", "rules", {}, cap)
        health = await every_page(client, "health", "objects", {}, cap)
        components = await every_page(client, "map", "components", {}, cap)
        one = []
        for f in expected["findings"]:
            one.append(await client.call_tool("finding", {"id": f["id"]}))
        return [findings, entries, rules, health, components, one]

    findings, entries, rules, health, components, one = talk(server, dialogue)
    assert len(findings) == len(expected["findings"]) and len(entries) == len(timeline)
    for got, want in [*zip(findings, expected["findings"], strict=True), *zip(entries, timeline, strict=True)]:
        if got.get("truncated"):  # a finding larger than a page alone: its texts shortened, saying so
            assert got.get("id") == want.get("id") and "more characters]" in json.dumps(got)
        else:
            assert got == want
    assert any(f.get("truncated") for f in findings) and not all(f.get("truncated") for f in findings)
    assert len(rules) == len(select_analyzers()) and health and components
    assert all(len(text(r).encode()) <= cap for r in one)
