"""Lua health customizations: where they come from, precedence, results, sandbox and limits."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from argo_doctor.health import Health, HealthAssessor, HealthProblem, LuaHealthScripts
from argo_doctor.health.luascripts import glob_match
from tests.health.objects import D, H, P, S, U, obj

CERTIFICATE_SCRIPT = """\
local hs = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Ready" then
      if condition.status == "True" then
        hs.status = "Healthy"
      else
        hs.status = "Degraded"
      end
      hs.message = condition.message
      return hs
    end
  end
end
hs.status = "Progressing"
hs.message = "Waiting for certificate"
return hs
"""

CERTIFICATE: dict[str, Any] = {
    "apiVersion": "cert-manager.io/v1",
    "kind": "Certificate",
    "metadata": {
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "generation": 1,
        "name": "storefront-tls",
        "namespace": "shop",
        "uid": "0a1b2c3d-4e5f-4a6b-7c8d-9e0f1a2b3c4d",
    },
    "spec": {
        "dnsNames": ["shop.example.com"],
        "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"},
        "secretName": "storefront-tls",
    },
    "status": {
        "conditions": [
            {
                "lastTransitionTime": "2024-05-01T10:01:12Z",
                "message": "Certificate is up to date and has not expired",
                "observedGeneration": 1,
                "reason": "Ready",
                "status": "True",
                "type": "Ready",
            }
        ],
        "notAfter": "2024-07-30T09:01:11Z",
        "notBefore": "2024-05-01T09:01:12Z",
        "renewalTime": "2024-06-30T09:01:11Z",
        "revision": 1,
    },
}

CROSSPLANE_INSTANCE: dict[str, Any] = {
    "apiVersion": "ec2.aws.crossplane.io/v1alpha1",
    "kind": "Instance",
    "metadata": {"name": "bastion", "generation": 2, "uid": "1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"},
    "spec": {"forProvider": {"region": "eu-west-1", "instanceType": "t3.micro"}},
    "status": {
        "conditions": [
            {
                "lastTransitionTime": "2024-05-14T10:00:00Z",
                "reason": "Available",
                "status": "True",
                "type": "Ready",
            },
            {
                "lastTransitionTime": "2024-05-14T10:00:00Z",
                "reason": "ReconcileSuccess",
                "status": "True",
                "type": "Synced",
            },
        ]
    },
}

CROSSPLANE_SCRIPT = """\
hs = {status = "Progressing", message = "Waiting for the managed resource"}
for _, c in ipairs((obj.status or {}).conditions or {}) do
  if c.type == "Ready" and c.status == "True" then
    hs = {status = "Healthy", message = "Ready (" .. c.reason .. ")"}
  end
end
return hs
"""

ALWAYS_DEGRADED = 'return {status = "Degraded", message = "custom check for " .. obj.kind}'


def _assess(script: str, target: dict[str, Any], **limits: Any) -> tuple[Health | None, list[HealthProblem]]:
    kind = target["kind"]
    group = target["apiVersion"].rpartition("/")[0]
    key = f"{group}_{kind}" if group else kind
    scripts = LuaHealthScripts.from_argocd_cm({f"resource.customizations.health.{key}": script})
    assessor = HealthAssessor(scripts, **limits)
    return assessor.assess(target), assessor.problems


# --- sources and precedence ----------------------------------------------------------------


def test_argocd_cm_script_overrides_builtin_check() -> None:
    deployment = obj("workloads.yaml", "checkout")  # Healthy for the built-in check
    health, problems = _assess(ALWAYS_DEGRADED, deployment)
    assert health == Health(D, "custom check for Deployment")
    assert problems == []


def test_argocd_cm_script_for_core_kind() -> None:
    service = obj("networking.yaml", "ingress-nginx-controller")  # LoadBalancer without address
    script = 'return {status = "Healthy", message = "address managed elsewhere: " .. obj.metadata.name}'
    health, _ = _assess(script, service)
    assert health == Health(H, "address managed elsewhere: ingress-nginx-controller")


def test_argocd_cm_script_for_custom_resource() -> None:
    health, problems = _assess(CERTIFICATE_SCRIPT, CERTIFICATE)
    assert health == Health(H, "Certificate is up to date and has not expired")
    assert problems == []


def test_unconfigured_custom_resource_has_no_health() -> None:
    assert HealthAssessor().assess(CERTIFICATE) is None


def test_resource_customizations_block_with_open_libs() -> None:
    block = """\
cert-manager.io/Certificate:
  health.lua: |
    local ready = obj.status.conditions[1]
    return {status = "Healthy", message = string.format("%s until %s", ready.reason, obj.status.notAfter)}
  health.lua.useOpenLibs: true
  ignoreDifferences: |
    jsonPointers:
    - /spec/duration
"""
    scripts = LuaHealthScripts.from_argocd_cm({"resource.customizations": block})
    assessor = HealthAssessor(scripts)
    assert assessor.assess(CERTIFICATE) == Health(H, "Ready until 2024-07-30T09:01:11Z")
    script = scripts.script_for("cert-manager.io", "Certificate")
    assert script is not None and script.use_open_libs
    assert script.location == "argocd-cm resource.customizations[cert-manager.io/Certificate].health.lua"


def test_split_keys_win_over_the_block_and_set_open_libs() -> None:
    data = {
        "resource.customizations": 'cert-manager.io/Certificate:\n  health.lua: return {status = "Degraded"}\n',
        "resource.customizations.health.cert-manager.io_Certificate": (
            'return {status = "Healthy", message = string.upper(obj.metadata.name)}'
        ),
        "resource.customizations.useOpenLibs.cert-manager.io_Certificate": "true",
    }
    assessor = HealthAssessor(LuaHealthScripts.from_argocd_cm(data, location="argocd/argocd-cm"))
    assert assessor.assess(CERTIFICATE) == Health(H, "STOREFRONT-TLS")


def test_wildcard_key_in_the_block() -> None:
    block = f'"*.crossplane.io/*":\n  health.lua: |\n{_indent(CROSSPLANE_SCRIPT, 4)}'
    scripts = LuaHealthScripts.from_argocd_cm({"resource.customizations": block})
    assert HealthAssessor(scripts).assess(CROSSPLANE_INSTANCE) == Health(H, "Ready (Available)")
    assert scripts.script_for("ec2.aws.crossplane.io", "Instance") is not None
    assert scripts.script_for("cert-manager.io", "Certificate") is None


def test_exact_key_beats_wildcard() -> None:
    data = {
        "resource.customizations": '"*.crossplane.io/*":\n  health.lua: return {status = "Degraded"}\n',
        "resource.customizations.health.ec2.aws.crossplane.io_Instance": CROSSPLANE_SCRIPT,
    }
    assert HealthAssessor(LuaHealthScripts.from_argocd_cm(data)).assess(CROSSPLANE_INSTANCE) == Health(
        H, "Ready (Available)"
    )


def test_hostile_glob_keys_neither_hang_nor_crash() -> None:
    """`*a*a…b` against a long group made the regex engine backtrack for minutes; 2,000 nested braces made the
    regex compiler recurse. Now the first is answered at once (no match), the second matches nothing."""
    data = {"resource.customizations.health.*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b_X": ALWAYS_DEGRADED,
            "resource.customizations.health." + "{" * 2000 + "x" + "}" * 2000 + "_Y": ALWAYS_DEGRADED,
            "resource.customizations.health.*.crossplane.io_*": ALWAYS_DEGRADED}
    scripts = LuaHealthScripts.from_argocd_cm(data)
    started = time.monotonic()
    assert scripts.script_for("a" * 40, "X") is None
    assert scripts.script_for("x", "Y") is None
    assert scripts.script_for("ec2.aws.crossplane.io", "Instance") is not None
    assert scripts.script_for("a" * 20 + "b", "X") is not None
    assert time.monotonic() - started < 1


@pytest.mark.parametrize(("pattern", "text", "matches"), [
    ("*a*b", "xaxb", True), ("*a*b", "xabx", False), ("a*?c", "abbc", True), ("a*?c", "ac", False),
    ("*[xy]*z?", "qyqqzq", True), ("*[xy]*z?", "qqzq", False), ("**", "", True), ("*b*b*", "bb", True),
    ("*b*b*", "b", False), ("{a,ab}*c", "abc", True), ("*{a,ab}c", "abc", True),
])
def test_glob_keys_match_as_gobwas_glob_matches_them(pattern: str, text: str, matches: bool) -> None:
    assert glob_match(pattern, text) is matches


def test_all_key_is_a_group_wildcard_that_misses_core_kinds() -> None:
    scripts = LuaHealthScripts.from_argocd_cm({"resource.customizations.health.all": ALWAYS_DEGRADED})
    assessor = HealthAssessor(scripts)
    assert assessor.assess(obj("workloads.yaml", "checkout")) == Health(D, "custom check for Deployment")
    # The key "*/*" needs a "/", and core kinds are keyed by their bare kind ("Pod").
    assert assessor.assess(obj("pods.yaml", "checkout-6d9f7b8c5d-4kq2x")) == Health(H, "")


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_lua_dir_layout(tmp_path: Path) -> None:
    _write(tmp_path, "cert-manager.io/Certificate/health.lua", CERTIFICATE_SCRIPT)
    _write(tmp_path, "cert-manager.io/Certificate/health_test.yaml", "tests: []\n")
    _write(tmp_path, "ConfigMap/health.lua", 'return {status = "Healthy", message = "core group"}')
    _write(tmp_path, "_.crossplane.io/_/health.lua", CROSSPLANE_SCRIPT)
    _write(tmp_path, "cert-manager.io/Certificate/actions/renew/action.lua", "return obj")
    scripts = LuaHealthScripts.from_dir(tmp_path)
    assessor = HealthAssessor(scripts)
    assert assessor.assess(CERTIFICATE) == Health(H, "Certificate is up to date and has not expired")
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "shop"}}
    assert assessor.assess(config_map) == Health(H, "core group")
    assert assessor.assess(CROSSPLANE_INSTANCE) == Health(H, "Ready (Available)")
    script = scripts.script_for("cert-manager.io", "Certificate")
    assert script is not None and script.use_open_libs and script.builtin
    assert script.location == str(tmp_path / "cert-manager.io" / "Certificate" / "health.lua")


def test_lua_dir_script_replaces_the_builtin_rollout_check(tmp_path: Path) -> None:
    _write(tmp_path, "argoproj.io/Rollout/health.lua", 'return {status = "Suspended", message = "from dir"}')
    assessor = HealthAssessor(LuaHealthScripts.from_dir(tmp_path))
    assert assessor.assess(obj("rollouts.yaml", "checkout")) == Health(S, "from dir")


def test_argocd_cm_beats_lua_dir_whatever_the_merge_order(tmp_path: Path) -> None:
    _write(tmp_path, "cert-manager.io/Certificate/health.lua", 'return {status = "Degraded", message = "dir"}')
    from_cm = LuaHealthScripts.from_argocd_cm(
        {"resource.customizations.health.cert-manager.io_Certificate": ('return {status = "Healthy", message = "cm"}')}
    )
    from_dir = LuaHealthScripts.from_dir(tmp_path)
    for scripts in (from_cm.merged(from_dir), from_dir.merged(from_cm)):
        assert HealthAssessor(scripts).assess(CERTIFICATE) == Health(H, "cm")


def test_merged_other_wins_on_the_same_key(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _write(first, "cert-manager.io/Certificate/health.lua", 'return {status = "Degraded", message = "a"}')
    _write(second, "cert-manager.io/Certificate/health.lua", 'return {status = "Healthy", message = "b"}')
    scripts = LuaHealthScripts.from_dir(first).merged(LuaHealthScripts.from_dir(second))
    assert HealthAssessor(scripts).assess(CERTIFICATE) == Health(H, "b")


def test_missing_lua_dir_is_a_problem(tmp_path: Path) -> None:
    assessor = HealthAssessor(LuaHealthScripts.from_dir(tmp_path / "nope"))
    assert assessor.problems == [HealthProblem(str(tmp_path / "nope"), "Lua customization directory not found")]


def test_pending_deletion_wins_over_lua() -> None:
    certificate = {**CERTIFICATE, "metadata": {**CERTIFICATE["metadata"], "deletionTimestamp": "2024-05-14T18:00:00Z"}}
    health, _ = _assess(ALWAYS_DEGRADED, certificate)
    assert health == Health(P, "Pending deletion")


# --- configuration problems ----------------------------------------------------------------


def test_configuration_problems_are_reported() -> None:
    data = {
        "resource.customizations.useOpenLibs.cert-manager.io_Certificate": "yes",
        "resource.customizations.health.a_b_c": "return {}",
        "resource.customizations.frobnicate.apps_Deployment": "x",
        "resource.customizations": "cert-manager.io/Certificate: [unclosed\n",
        "resource.customizations.actions.apps_Deployment": "discovery.lua: return {}",
    }
    problems = LuaHealthScripts.from_argocd_cm(data).problems
    locations = sorted(p.location for p in problems)
    assert locations == [
        "argocd-cm resource.customizations",
        "argocd-cm resource.customizations.frobnicate.apps_Deployment",
        "argocd-cm resource.customizations.health.a_b_c",
        "argocd-cm resource.customizations.useOpenLibs.cert-manager.io_Certificate",
    ]
    assert all("\n" not in p.message for p in problems)


# --- results Argo CD makes of a script ------------------------------------------------------


def test_script_error_is_unknown_and_reported_once() -> None:
    script = 'local hs = {}\nif obj.spec.secretName ~= nil then\n  error("cannot judge " .. obj.spec.secretName)\nend\n'
    key = "resource.customizations.health.cert-manager.io_Certificate"
    assessor = HealthAssessor(LuaHealthScripts.from_argocd_cm({key: script}))
    where = f"argocd-cm {key}"
    assert assessor.assess(CERTIFICATE) == Health(U, f"{where}:3: cannot judge storefront-tls")
    assessor.assess(CERTIFICATE)
    assert assessor.problems == [
        HealthProblem(where, f"Lua health script failed: {where}:3: cannot judge storefront-tls")
    ]


def test_runtime_error_indexing_nil_in_gopher_lua_wording() -> None:
    health, problems = _assess("local hs = {}\nhs.status = obj.status.missing.field\nreturn hs", CERTIFICATE)
    where = "argocd-cm resource.customizations.health.cert-manager.io_Certificate"
    assert health == Health(U, f"{where}:2: attempt to index a non-table object(nil) with key 'field'")
    assert len(problems) == 1


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("obj.spec.secretName .. obj.status.missing", "cannot perform concat operation between string and nil"),
        ("#obj.status.missing", "__len undefined"),
        ("obj.metadata.generation + obj.status.missing", "cannot perform add operation between number and nil"),
        ("obj.status.missing()", "attempt to call a non-function object"),
        ("obj.metadata.generation.value", "attempt to index a non-table object(number) with key 'value'"),
        ("ipairs(obj.status.missing)", "bad argument #1 to ipairs (table expected, got nil)"),
        ("obj.status < obj.spec", "attempt to compare table with table"),
    ],
)
def test_runtime_errors_in_gopher_lua_wording(expression: str, message: str) -> None:
    health, _ = _assess(f"local value = {expression}\nreturn {{status = 'Healthy'}}", CERTIFICATE)
    where = "argocd-cm resource.customizations.health.cert-manager.io_Certificate"
    assert health == Health(U, f"{where}:1: {message}")


def test_getmetatable_does_not_reach_the_error_metatables() -> None:
    script = "return {status = 'Healthy', message = tostring(getmetatable(nil)) .. ' ' .. tostring(getmetatable(1))}"
    health, _ = _assess(script, CERTIFICATE)
    assert health == Health(H, "nil nil")


def test_syntax_error() -> None:
    health, problems = _assess("hs = {\nreturn hs", CERTIFICATE)
    where = "argocd-cm resource.customizations.health.cert-manager.io_Certificate"
    assert health is not None and health.status is U and health.message.startswith(f"{where}:2:")
    assert problems[0].message.startswith(f"Lua health script failed: {where}:2:")


def test_invalid_status_is_unknown() -> None:
    health, problems = _assess('return {status = "Ready", message = "looks fine"}', CERTIFICATE)
    assert health == Health(U, "Lua returned an invalid health status")
    assert problems[0].message == "Lua health script returned an invalid health status (status 'Ready')"


def test_missing_status_is_unknown() -> None:
    health, _ = _assess('return {message = "forgot the status"}', CERTIFICATE)
    assert health == Health(U, "Lua returned an invalid health status")


def test_non_table_result_is_unknown() -> None:
    health, _ = _assess('return "Healthy"', CERTIFICATE)
    assert health == Health(U, "expect table output from Lua script, not string")


@pytest.mark.parametrize("script", ["hs = {}", "return {}", "return nil"])
def test_no_result_means_no_health(script: str) -> None:
    health, problems = _assess(script, CERTIFICATE)
    assert health is None
    assert len(problems) == 1


def test_last_returned_value_is_read() -> None:
    health, _ = _assess('return {status = "Healthy"}, "extra"', CERTIFICATE)
    assert health == Health(U, "expect table output from Lua script, not string")


def test_object_is_passed_as_json_values() -> None:
    script = """\
local c = obj.status.conditions[1]
return {status = "Healthy", message = type(obj.status.revision) .. " " .. type(c.observedGeneration)
  .. " " .. type(obj.metadata.creationTimestamp) .. " " .. tostring(#obj.spec.dnsNames)}
"""
    health, _ = _assess(script, CERTIFICATE)
    assert health == Health(H, "number number string 1")


# --- sandbox ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "error_part"),
    [
        ('os.execute("touch /tmp/argo-doctor-pwned")', "attempt to call a non-function object"),
        ('io.open("/etc/passwd")', "attempt to index a non-table object(nil) with key 'open'"),
        ('require("io")', "module 'io' not found"),
        ('require("debug")', "module 'debug' not found"),
        ('dofile("/etc/passwd")', "attempt to call a non-function object"),
        ('loadfile("/etc/passwd")', "attempt to call a non-function object"),
        ("debug.getregistry()", "attempt to index a non-table object(nil) with key 'getregistry'"),
        ('python.eval("1")', "attempt to index a non-table object(nil) with key 'eval'"),
        ("getfenv(0)", "attempt to call a non-function object"),
        ("string.dump(print)", "attempt to index a non-table object(nil) with key 'dump'"),
        ('local s = ("abc"):upper()', "attempt to index"),
        ('loadstring("\\027Lua")()', "attempt to call a non-function object"),
    ],
)
def test_sandbox_denies(script: str, error_part: str) -> None:
    health, problems = _assess(script, CERTIFICATE)
    assert health is not None and health.status is U
    assert error_part in health.message
    assert len(problems) == 1


@pytest.mark.parametrize(
    "script",
    [
        'os.execute("true")',
        'io.open("/etc/passwd")',
        'require("io")',
        "string.dump(print)",
        "debug.sethook()",
    ],
)
def test_open_libs_still_deny_host_access(script: str) -> None:
    key = "cert-manager.io_Certificate"
    scripts = LuaHealthScripts.from_argocd_cm(
        {f"resource.customizations.health.{key}": script, f"resource.customizations.useOpenLibs.{key}": "true"}
    )
    health = HealthAssessor(scripts).assess(CERTIFICATE)
    assert health is not None and health.status is U


def test_sandbox_allows_what_argo_cd_provides() -> None:
    script = """\
local os = require("os")
local t = require("table")
local parts = {}
t.insert(parts, tostring(os.time() > 1700000000))
t.insert(parts, os.date("!%Y", 0))
t.insert(parts, tostring(table.getn({1, 2, 3})))
t.insert(parts, tostring(select("#", unpack({1, 2}))))
local ok = pcall(error, "caught")
t.insert(parts, tostring(ok))
local f = loadstring("return obj.kind")
t.insert(parts, f())
return {status = "Healthy", message = t.concat(parts, ",")}
"""
    health, problems = _assess(script, CERTIFICATE)
    assert health == Health(H, "true,1970,3,2,false,Certificate")
    assert problems == []


def test_globals_do_not_leak_between_runs() -> None:
    script = 'counter = (counter or 0) + 1\nreturn {status = "Healthy", message = tostring(counter)}'
    key = "resource.customizations.health.cert-manager.io_Certificate"
    assessor = HealthAssessor(LuaHealthScripts.from_argocd_cm({key: script}))
    assert assessor.assess(CERTIFICATE) == assessor.assess(CERTIFICATE) == Health(H, "1")


# --- limits ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "open_libs"),
    [
        ("while true do end", False),
        ("local n = 0\nrepeat n = n + 1 until false", False),
        ("while true do pcall(function() while true do end end) end", False),
        ("while true do xpcall(function() while true do end end, function(e) return e end) end", False),
        ("local co = coroutine.create(function() while true do end end)\ncoroutine.resume(co)", True),
        ("coroutine.wrap(function() while true do end end)()", True),
        ("local function f() return f() end\nreturn f()", False),
    ],
)
def test_endless_script_is_stopped_quickly(script: str, open_libs: bool) -> None:
    key = "cert-manager.io_Certificate"
    data = {f"resource.customizations.health.{key}": script}
    if open_libs:
        data[f"resource.customizations.useOpenLibs.{key}"] = "true"
    assessor = HealthAssessor(LuaHealthScripts.from_argocd_cm(data), max_instructions=1_000_000)
    started = time.monotonic()
    health = assessor.assess(CERTIFICATE)
    assert time.monotonic() - started < 5
    message = "Lua health script exceeded 1000000 instructions"
    assert health == Health(U, message)
    assert assessor.problems == [HealthProblem(f"argocd-cm resource.customizations.health.{key}", message)]


@pytest.mark.parametrize(
    "script",
    [
        "local t = {}\nlocal i = 0\nwhile true do i = i + 1; t[i] = {i, tostring(i)} end",
        'local s = "x"\nwhile true do s = s .. s end',
        'local t = {}\nwhile true do pcall(function() t[#t + 1] = tostring(#t) .. ("y"):rep(64) end) end',
    ],
)
def test_unbounded_allocation_is_stopped(script: str) -> None:
    key = "cert-manager.io_Certificate"
    data = {
        f"resource.customizations.health.{key}": script,
        f"resource.customizations.useOpenLibs.{key}": "true",
    }
    assessor = HealthAssessor(LuaHealthScripts.from_argocd_cm(data), max_memory=4 * 1024 * 1024)
    started = time.monotonic()
    health = assessor.assess(CERTIFICATE)
    assert time.monotonic() - started < 10
    message = "Lua health script exceeded its memory limit of 4194304 bytes"
    assert health == Health(U, message)
    assert [p.message for p in assessor.problems] == [message]


def test_cpu_time_in_library_calls_is_limited() -> None:
    script = 'while true do local s = ("x"):rep(4000000) end'
    key = "cert-manager.io_Certificate"
    data = {f"resource.customizations.health.{key}": script, f"resource.customizations.useOpenLibs.{key}": "true"}
    assessor = HealthAssessor(LuaHealthScripts.from_argocd_cm(data), max_cpu_seconds=0.3)
    started = time.monotonic()
    health = assessor.assess(CERTIFICATE)
    assert time.monotonic() - started < 5
    assert health == Health(U, "Lua health script exceeded 0.3 s of CPU time")


def test_single_runaway_library_call_hits_the_watchdog() -> None:
    # One string.find with heavy backtracking: no instruction runs until it returns (~1 s).
    script = 'local s = ("a"):rep(130)\nreturn {status = "Healthy", message = tostring(s:find(".-.-.-.-b"))}'
    key = "cert-manager.io_Certificate"
    data = {f"resource.customizations.health.{key}": script, f"resource.customizations.useOpenLibs.{key}": "true"}
    assessor = HealthAssessor(LuaHealthScripts.from_argocd_cm(data), wall_timeout=0.2)
    started = time.monotonic()
    health = assessor.assess(CERTIFICATE)
    assert time.monotonic() - started < 1
    assert health == Health(U, "Lua health script did not finish within 0.2 s")


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))
