"""The Lua runtime (LuaJIT 2.1 with its compiler off: Lua 5.1 plus goto, as gopher-lua) and Argo CD's lookup of
built-in scripts in a resource_customizations directory (exact, then `_` wildcards in sorted order)."""

from __future__ import annotations

from pathlib import Path

from argo_doctor.health import Health, HealthAssessor, HealthStatus, LuaHealthScripts
from argo_doctor.health.luascripts import LUA_VERSION, LuaLimits, LuaSandbox, path_match, syntax_errors

SKIP_READY = """\
local waiting = {}
for _, c in ipairs(obj.status.conditions) do
  if c.status == "True" then goto next end
  waiting[#waiting + 1] = c.type
  ::next::
end
return {status = "Progressing", message = "waiting for " .. table.concat(waiting, ", ")}
"""

GATEWAY_CLASS = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "GatewayClass",
    "metadata": {"name": "internal"},
    "spec": {"controllerName": "example.net/gateway-controller"},
    "status": {"conditions": [
        {"type": "Accepted", "status": "True", "reason": "Accepted"},
        {"type": "SupportedVersion", "status": "False", "reason": "UnsupportedVersion"},
        {"type": "Programmed", "status": "Unknown", "reason": "Pending"},
    ]},
}


def test_runtime_is_lua_51_with_goto() -> None:
    assert LUA_VERSION == "5.1"
    outcome = LuaSandbox().run(SKIP_READY, True, GATEWAY_CLASS, LuaLimits())
    assert outcome.health == Health(HealthStatus.PROGRESSING, "waiting for SupportedVersion, Programmed")


def test_lua_51_globals_stay_and_52_ones_are_absent() -> None:
    script = """
local seen = {}
for _, name in ipairs({"unpack", "loadstring", "setfenv", "getfenv", "jit", "bit", "io", "debug", "dofile"}) do
  seen[#seen + 1] = name .. "=" .. type(_G[name])
end
return {status = "Healthy", message = table.concat(seen, " ") .. " table.unpack=" .. type(table.unpack)}
"""
    outcome = LuaSandbox().run(script, True, {}, LuaLimits())
    assert outcome.health is not None
    assert outcome.health.message == (  # base functions as Argo CD gives them, never LuaJIT's jit or bit modules
        "unpack=function loadstring=function setfenv=nil getfenv=nil jit=nil bit=nil io=nil debug=nil dofile=nil "
        "table.unpack=nil"
    )


def test_a_loop_the_jit_compiler_would_run_outside_the_hook_is_stopped() -> None:
    # with LuaJIT's compiler on, this trace runs to its end without calling the count hook
    script = 'local n = 0 for i = 1, 3e8 do n = n + i end return {status = "Healthy", message = tostring(n)}'
    outcome = LuaSandbox().run(script, True, {}, LuaLimits(max_instructions=1_000_000))
    assert outcome.stop == "instructions"
    assert outcome.health == Health(HealthStatus.UNKNOWN, "Lua health script exceeded 1000000 instructions")


def test_memory_cap_holds_under_luajit() -> None:
    script = "local t = {} for i = 1, 1e7 do t[i] = string.rep('x', 64) .. i end return {status = 'Healthy'}"
    outcome = LuaSandbox().run(script, True, {}, LuaLimits(max_memory=8 << 20))
    assert outcome.stop == "memory"


def test_syntax_errors_name_the_script() -> None:
    errors = syntax_errors({"ok.io/A": SKIP_READY, "bad.io/B": "if x then\n", "bin.io/C": "\x1bLuaJ"})
    assert errors == {"bad.io/B": "bad.io/B:2: 'end' expected (to close 'if' at line 1) near '<eof>'",
                      "bin.io/C": "a precompiled chunk, not source text"}


def test_path_match_never_crosses_a_slash() -> None:
    assert path_match("*.crossplane.io/*", "ec2.aws.crossplane.io/Instance")
    assert not path_match("*.crossplane.io/*", "Instance")
    assert not path_match("*", "apps/Deployment")
    assert not path_match("*/*", "a/b/c")


def _script(root: Path, folder: str, message: str) -> None:
    path = root / folder / "health.lua"
    path.parent.mkdir(parents=True)
    path.write_text(f'return {{status = "Healthy", message = "{message}"}}\n')


def test_exact_directory_beats_wildcards(tmp_path: Path) -> None:
    _script(tmp_path, "_.crossplane.io/_", "wildcard")
    _script(tmp_path, "s3.aws.crossplane.io/Bucket", "exact")
    scripts = LuaHealthScripts.from_dir(tmp_path)
    exact = scripts.script_for("s3.aws.crossplane.io", "Bucket")
    other = scripts.script_for("s3.aws.crossplane.io", "BucketPolicy")
    assert exact is not None and exact.location.endswith("s3.aws.crossplane.io/Bucket/health.lua")
    assert other is not None and other.location.endswith("_.crossplane.io/_/health.lua")
    assert other.use_open_libs  # built-in scripts run with the standard libraries
    assert scripts.script_for("crossplane.io", "Provider") is None  # `_.` needs something before the dot
    assert scripts.script_for("", "Pod") is None


def test_wildcards_are_tried_in_the_order_of_their_directory_names(tmp_path: Path) -> None:
    # Argo CD sorts the names with `_`; sorting them with `*` would put `x_/_` (x*/*) first
    _script(tmp_path, "x_/_", "x-anything")
    _script(tmp_path, "x.y.io/_", "x.y.io-anything")
    found = LuaHealthScripts.from_dir(tmp_path).script_for("x.y.io", "Thing")
    assert found is not None and found.location.endswith("x.y.io/_/health.lua")


def test_fallback_comes_after_every_directory(tmp_path: Path) -> None:
    _script(tmp_path / "cache", "_.crossplane.io/_", "cached wildcard")
    _script(tmp_path / "cache", "cert-manager.io/Certificate", "cached")
    _script(tmp_path / "own", "_.crossplane.io/_", "own wildcard")
    scripts = LuaHealthScripts.from_dir(tmp_path / "own").with_fallback(LuaHealthScripts.from_dir(tmp_path / "cache"))
    assessor = HealthAssessor(scripts)
    bucket = {"apiVersion": "s3.aws.crossplane.io/v1beta1", "kind": "Bucket", "metadata": {"name": "b"}}
    cert = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "c", "namespace": "n"}}
    with assessor:
        assert assessor.assess(bucket) == Health(HealthStatus.HEALTHY, "own wildcard")
        assert assessor.assess(cert) == Health(HealthStatus.HEALTHY, "cached")
    assert len(scripts) == 3


def test_errors_of_a_directory_script_name_its_file(tmp_path: Path) -> None:
    script = tmp_path / "gateway.networking.k8s.io" / "GatewayClass" / "health.lua"
    script.parent.mkdir(parents=True)
    script.write_text("local hs = {}\nhs.message = obj.spec.parametersRef.name\nreturn hs\n")
    with HealthAssessor(LuaHealthScripts.from_dir(tmp_path)) as assessor:
        health = assessor.assess(GATEWAY_CLASS)
        assert health == Health(HealthStatus.UNKNOWN,
                                f"{script}:2: attempt to index a non-table object(nil) with key 'name'")
        assert [p.message for p in assessor.problems] == [f"Lua health script failed: {health.message}"]
