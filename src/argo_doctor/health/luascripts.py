"""Lua health customizations: where Argo CD finds them, and running them in a sandbox.

Sources, in Argo CD's order of precedence:

1. argocd-cm overrides: `resource.customizations.health.<group>_<Kind>` keys (with
   `resource.customizations.useOpenLibs.<group>_<Kind>`), and the older
   `resource.customizations` YAML block (`<group>/<Kind>: {health.lua, health.lua.useOpenLibs}`),
   whose keys may hold globs (`*.aws.crossplane.io/*`). An exact key beats a glob.
2. Built-in scripts: a directory in the layout of Argo CD's `resource_customizations`
   (`DIR/<group>/<Kind>/health.lua`, `DIR/<Kind>/health.lua` for the core group). As in Argo
   CD's util/lua (v3.5.1), the exact directory wins; else the directories whose path holds `_`
   are tried in the sorted order of their names, `_` acting as a `*` that does not cross `/`
   (`_.crossplane.io/_` matches `ec2.aws.crossplane.io/Instance`). Argo CD runs these with the
   standard libraries open. `--lua-dir` directories come first, then the scripts `lua fetch`
   cached for the installation's Argo CD version (`fallback`).

Scripts run in LuaJIT 2.1 with its compiler off (Lua 5.1 plus `goto`, as gopher-lua) with fresh globals per object,
holding what Argo CD provides. Runtime errors take gopher-lua's wording where it differs from LuaJIT's (indexing,
calling or operating on nil, booleans, numbers; bad arguments; comparisons) and name the script's location
(`.../health.lua:10:`, `argocd-cm resource.customizations.health.<key>:3:`) where Argo CD says `<string>:10:`.
Unlike Argo CD, `useOpenLibs` never grants io, the full os, debug or file loading here. A script is stopped after
an instruction budget (Argo CD: a one second timeout), a CPU-time budget or a memory cap (Argo CD: none);
`luaworker` runs scripts in a child process so that a wall-clock timeout can stop even a library call that never
returns.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from argo_doctor.health.types import Health, HealthProblem, HealthStatus
from argo_doctor.sources import goyaml

CUSTOMIZATIONS_KEY = "resource.customizations"
INVALID_HEALTH_STATUS = "Lua returned an invalid health status"
DEFAULT_MAX_INSTRUCTIONS = 10_000_000
DEFAULT_MAX_MEMORY = 64 * 1024 * 1024
DEFAULT_MAX_CPU_SECONDS = 2.0
DEFAULT_WALL_TIMEOUT = 10.0
_TICK = 100
_IGNORED_TYPES = {"actions", "ignoreDifferences", "ignoreResourceUpdates", "knownTypeFields"}


@dataclass(frozen=True)
class LuaScript:
    """One health script and where it came from."""

    key: str  # "<group>/<Kind>", "<Kind>" for the core group, or a glob of those
    source: str
    use_open_libs: bool
    location: str
    builtin: bool = False  # from a resource_customizations directory rather than argocd-cm


# --- glob matching (gobwas/glob without separators, as Argo CD's util/glob uses it) ---------


@functools.lru_cache(maxsize=1024)
def _glob_regex(pattern: str) -> re.Pattern[str] | None:
    """The pattern as a regex for `fullmatch`; None when it is invalid or nested too deeply to compile. Without
    alternatives (`{a,b}`), each `*` but the last finds the leftmost match of what follows it and never gives it
    back (an atomic group): every piece between stars has one length, so the leftmost match is the one to take, and
    `*a*a*a…b` cannot make the regex engine backtrack for minutes."""
    atomic = "{" not in pattern
    out: list[str] = []
    stars: list[int] = []
    i, depth = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == "*":
            stars.append(len(out))
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                return None
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end
        elif ch == "{":
            depth += 1
            out.append("(?:")
        elif ch == "}" and depth:
            depth -= 1
            out.append(")")
        elif ch == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(ch))
        i += 1
    if depth:
        return None
    if atomic and len(stars) > 1:
        for start, end in itertools.pairwise(stars):
            out[start] = "(?>.*?" + "".join(out[start + 1:end]) + ")"
            out[start + 1:end] = [""] * (end - start - 1)
    try:
        return re.compile("".join(out), re.DOTALL)
    except (re.error, RecursionError):
        return None


def glob_match(pattern: str, text: str) -> bool:
    """Whether `text` matches `pattern`; an invalid pattern matches nothing."""
    regex = _glob_regex(pattern)
    return regex is not None and regex.fullmatch(text) is not None


def path_match(pattern: str, key: str) -> bool:
    """doublestar's PathMatch for a built-in directory's pattern: `*` and `?` never match `/`."""
    parts, names = pattern.split("/"), key.split("/")
    return len(parts) == len(names) and all(glob_match(p, n) for p, n in zip(parts, names, strict=True))


def config_key(group: str, kind: str) -> str:
    """Argo CD's override key for a group and kind."""
    return f"{group}/{kind}" if group else kind


# --- loading -------------------------------------------------------------------------------


def _parse_go_bool(text: str) -> bool | None:
    """strconv.ParseBool."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def _split_key_to_override(group_kind: str) -> str | None:
    """`<group>_<Kind>` or `<Kind>` from a split argocd-cm key, as Argo CD's convertToOverrideKey."""
    parts = group_kind.split("_")
    if len(parts) == 2:
        key = f"{parts[0]}/{parts[1]}"
    elif len(parts) == 1 and group_kind:
        key = group_kind
    else:
        return None
    return "*/*" if key == "all" else key


class LuaHealthScripts:
    """The Lua health scripts in effect, by Argo CD's lookup order."""

    def __init__(
        self,
        overrides: Mapping[str, LuaScript] | None = None,
        builtins: Mapping[str, LuaScript] | None = None,
        problems: Iterable[HealthProblem] = (),
        fallback: LuaHealthScripts | None = None,
    ) -> None:
        self.overrides: dict[str, LuaScript] = dict(overrides or {})
        self.builtins: dict[str, LuaScript] = dict(builtins or {})
        self.problems: tuple[HealthProblem, ...] = tuple(problems)
        self.fallback = fallback
        """Scripts looked up after all of these (the cached built-in scripts of the installation's version)."""

    def __len__(self) -> int:
        return len(self.overrides) + len(self.builtins) + (len(self.fallback) if self.fallback is not None else 0)

    def __repr__(self) -> str:
        return (f"LuaHealthScripts(overrides={sorted(self.overrides)}, builtins={sorted(self.builtins)}, "
                f"fallback={self.fallback!r})")

    @classmethod
    def from_argocd_cm(cls, data: Mapping[str, str], location: str = "argocd-cm") -> LuaHealthScripts:
        """Health scripts from argocd-cm `data` (split keys win over the YAML block)."""
        problems: list[HealthProblem] = []
        sources: dict[str, tuple[str, str]] = {}  # key -> (source, location)
        open_libs: dict[str, bool] = {}

        block: Any = data.get(CUSTOMIZATIONS_KEY)
        if isinstance(block, Mapping):  # already parsed, e.g. from a manifest in Git
            block = yaml.safe_dump(dict(block))
        if isinstance(block, str) and block.strip():
            cls._parse_block(block, location, sources, open_libs, problems)

        for cm_key in sorted(data):
            value = data[cm_key]
            if not cm_key.startswith(CUSTOMIZATIONS_KEY):
                continue
            parts = cm_key.split(".", 3)
            if len(parts) < 4:
                continue
            where = f"{location} {cm_key}"
            key = _split_key_to_override(parts[3])
            if key is None:
                problems.append(
                    HealthProblem(
                        where,
                        "group kind should be `<group>_<Kind>` or `<Kind>`; "
                        "Argo CD rejects all resource customizations",
                    )
                )
                continue
            kind_of = parts[2]
            if kind_of == "health":
                if isinstance(value, str) and value:
                    sources[key] = (value, where)
            elif kind_of == "useOpenLibs":
                parsed = _parse_go_bool(str(value).strip()) if value is not None else None
                if parsed is None:
                    problems.append(
                        HealthProblem(where, f"not a boolean: {value!r}; Argo CD rejects all resource customizations")
                    )
                else:
                    open_libs[key] = parsed
            elif kind_of not in _IGNORED_TYPES:
                problems.append(HealthProblem(where, f"resource customization type {kind_of} not supported"))

        overrides = {
            key: LuaScript(key, source, open_libs.get(key, False), where) for key, (source, where) in sources.items()
        }
        return cls(overrides=overrides, problems=problems)

    @staticmethod
    def _parse_block(
        block: str,
        location: str,
        sources: dict[str, tuple[str, str]],
        open_libs: dict[str, bool],
        problems: list[HealthProblem],
    ) -> None:
        where = f"{location} {CUSTOMIZATIONS_KEY}"
        try:
            parsed = goyaml.load(block)
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problems.append(HealthProblem(where, f"invalid YAML: {first}; Argo CD ignores all customizations"))
            return
        except RecursionError:  # the pure-Python composer recurses once per level
            problems.append(HealthProblem(where, "YAML nested too deeply to read; these customizations are not used"))
            return
        if parsed is None:
            return
        if not isinstance(parsed, dict):
            problems.append(HealthProblem(where, "not a mapping of <group>/<Kind> to customizations"))
            return
        for raw_key, entry in parsed.items():
            key = str(raw_key)
            entry_where = f"{where}[{key}]"
            if entry is None:
                continue
            if not isinstance(entry, dict):
                problems.append(HealthProblem(entry_where, "customization is not a mapping"))
                continue
            source = entry.get("health.lua")
            if source is not None and not isinstance(source, str):
                problems.append(HealthProblem(f"{entry_where}.health.lua", "health.lua is not a string"))
                continue
            if source:
                sources[key] = (source, f"{entry_where}.health.lua")
            flag = entry.get("health.lua.useOpenLibs")
            if isinstance(flag, bool):
                open_libs[key] = flag
            elif flag is not None:
                problems.append(HealthProblem(f"{entry_where}.health.lua.useOpenLibs", f"not a boolean: {flag!r}"))

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str], vet: Callable[[str, bytes], str | None] | None = None
                 ) -> LuaHealthScripts:
        """Built-in-style scripts from `DIR/<group>/<Kind>/health.lua` (and `DIR/<Kind>/health.lua`).

        `vet` (the script's path below DIR with `/`, its bytes) says why a script is not to be used, if it is not.
        """
        root = Path(path)
        if not root.is_dir():
            return cls(problems=[HealthProblem(str(root), "Lua customization directory not found")])
        builtins: dict[str, LuaScript] = {}
        problems: list[HealthProblem] = []
        for file in sorted(root.rglob("health.lua")):
            parts = file.parent.relative_to(root).parts
            if len(parts) not in (1, 2) or not file.is_file():
                continue
            key = "/".join(p.replace("_", "*") for p in parts)
            try:
                data = file.read_bytes()
                source = data.decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(HealthProblem(str(file), f"cannot read: {exc}"))
                continue
            refused = vet("/".join((*parts, file.name)), data) if vet is not None else None
            if refused is not None:
                problems.append(HealthProblem(str(file), refused))
                continue
            builtins[key] = LuaScript(key, source, True, str(file), builtin=True)
        return cls(builtins=builtins, problems=problems)

    def merged(self, other: LuaHealthScripts) -> LuaHealthScripts:
        """Both sets of scripts; `other` wins where both define the same key at the same level."""
        return LuaHealthScripts(
            {**self.overrides, **other.overrides},
            {**self.builtins, **other.builtins},
            self.problems + other.problems,
            other.fallback if other.fallback is not None else self.fallback,
        )

    def with_fallback(self, fallback: LuaHealthScripts | None, problems: Iterable[HealthProblem] = ()
                      ) -> LuaHealthScripts:
        """These scripts, then `fallback` for the kinds none of these covers; `problems` added."""
        inherited = fallback.problems if fallback is not None else ()
        return LuaHealthScripts(self.overrides, self.builtins, (*self.problems, *inherited, *problems), fallback)

    def script_for(self, group: str, kind: str) -> LuaScript | None:
        """The script Argo CD would run for this kind: override, glob override, built-in, wildcard built-in,
        then the fallback's."""
        key = config_key(group, kind)
        if key in self.overrides:
            return self.overrides[key]
        for pattern in sorted(self.overrides):
            if glob_match(pattern, key):
                return self.overrides[pattern]
        if key in self.builtins:
            return self.builtins[key]
        for pattern in sorted(self.builtins, key=lambda p: p.replace("*", "_")):  # Argo CD sorts the `_` names
            if "*" in pattern and path_match(pattern, key):
                return self.builtins[pattern]
        return self.fallback.script_for(group, kind) if self.fallback is not None else None


# --- running -------------------------------------------------------------------------------

Stop = Literal["instructions", "cpu", "memory", "wall", "crash"]
"""Why a script did not finish: a limit, or the process running it ended."""

TIMEOUTS: frozenset[Stop] = frozenset({"instructions", "cpu", "wall"})
"""The stops that mean a script ran too long."""


@dataclass(frozen=True)
class LuaLimits:
    """How far one health script may go before it is stopped."""

    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS
    max_memory: int = DEFAULT_MAX_MEMORY  # bytes beyond the object
    max_cpu_seconds: float = DEFAULT_MAX_CPU_SECONDS  # checked between instructions, and by the worker's timer
    wall_timeout: float = DEFAULT_WALL_TIMEOUT  # enforced by killing the worker

    def message(self, stop: Stop) -> str:
        """The health message of a script stopped by one of these limits."""
        if stop == "instructions":
            return f"Lua health script exceeded {self.max_instructions} instructions"
        if stop == "cpu":
            return f"Lua health script exceeded {self.max_cpu_seconds:g} s of CPU time"
        if stop == "memory":
            return f"Lua health script exceeded its memory limit of {self.max_memory} bytes"
        if stop == "wall":
            return f"Lua health script did not finish within {self.wall_timeout:g} s"
        raise ValueError(f"no limit message for {stop!r}")


@dataclass(frozen=True)
class LuaOutcome:
    """The health a script gives (None: Argo CD shows none), what went wrong, and why it stopped."""

    health: Health | None
    problem: str | None = None
    stop: Stop | None = None


_sandbox_source: str | None = None

_GOPHER_ERRORS = """
-- argo-doctor: gopher-lua's (Argo CD's) runtime errors for nil, booleans, numbers and functions, which LuaJIT words
-- otherwise and names the variable rather than the key; the metatables stay hidden from getmetatable.
local error, type, tostring, getmetatable = error, type, tostring, getmetatable
local mt = {}
function mt.__index(value, key)
  error("attempt to index a non-table object(" .. type(value) .. ") with key '" .. tostring(key) .. "'", 2)
end
mt.__newindex = mt.__index
function mt.__call() error("attempt to call a non-function object", 2) end
function mt.__concat(a, b) error("cannot perform concat operation between " .. type(a) .. " and " .. type(b), 2) end
function mt.__len() error("__len undefined", 2) end
function mt.__unm() error("__unm undefined", 2) end
for _, op in ipairs({"add", "sub", "mul", "div", "mod", "pow"}) do
  mt["__" .. op] = function(a, b)
    error("cannot perform " .. op .. " operation between " .. type(a) .. " and " .. type(b), 2)
  end
end
for _, value in ipairs({false, 0, print}) do debug.setmetatable(value, mt) end
debug.setmetatable(nil, mt)
_G.getmetatable = function(...)
  local found = getmetatable(...)
  if found == mt then return nil end
  return found
end
"""
_CHUNK_LINE = re.compile(r"<string>:(\d+):")
_BAD_ARGUMENT = re.compile(r"bad argument #(\d+) to '([^']*)'")
_COMPARE_SAME = re.compile(r"attempt to compare two (\w+) values")


def _sandbox() -> str:
    global _sandbox_source
    if _sandbox_source is None:
        _sandbox_source = resources.files("argo_doctor.health").joinpath("lua/sandbox.lua").read_text("utf-8")
    return _sandbox_source


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _lua_module() -> Any:
    """lupa's LuaJIT 2.1 build: Lua 5.1 plus `goto` and labels, the language gopher-lua implements.

    Lua 5.2+ would also parse `goto` but drops `setfenv`, `unpack` and `loadstring`, which 5.1
    scripts use; lupa's lua51 build (the fallback) cannot parse `goto`.
    """
    try:
        from lupa import luajit21 as module
    except ImportError:  # pragma: no cover - a lupa built without LuaJIT
        from lupa import lua51 as module
    return module


LUA_VERSION = ".".join(str(n) for n in _lua_module().LUA_VERSION)
"""The Lua version scripts run under here ("5.1": LuaJIT 2.1, the JIT compiler off so that hooks fire)."""


def syntax_errors(sources: Mapping[str, str]) -> dict[str, str]:
    """The scripts of `sources` (name → text) that do not compile in the runtime scripts run in, with why."""
    lua = _lua_module().LuaRuntime(register_eval=False, register_builtins=False, attribute_filter=_deny_attributes)
    compile_text = lua.globals().loadstring
    errors = {}
    for name, source in sources.items():
        if source[:1] == "\x1b":
            errors[name] = "a precompiled chunk, not source text"
            continue
        compiled = compile_text(source, "=" + name)
        if isinstance(compiled, tuple):  # nil and the error
            errors[name] = _one_line(str(compiled[1]))
    return errors


def json_values(value: Any) -> Any:
    """The object as JSON would carry it: timestamps and other scalars become strings."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): json_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_values(v) for v in value]
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None and value.utcoffset() == datetime.timedelta(0):
            return value.replace(tzinfo=None).isoformat() + "Z"
        return value.isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("Python attributes are not available to health scripts")


class LuaSandbox:
    """Runs health scripts one after another, each with fresh globals, as Argo CD's ExecuteHealthLua does.

    One Lua state serves many scripts (the sandbox gives each run new globals and library
    copies); it is replaced after any run that did not end normally. Stops: the instruction
    budget, CPU time (checked between instructions) and memory beyond the object. A library
    call that never returns is not stopped here: the process running it is ended instead
    (see `luaworker`).
    """

    def __init__(self) -> None:
        self._module = _lua_module()
        self._source = _sandbox()
        self._lua: Any = None
        self._runner: Any = None

    def run(self, source: str, use_open_libs: bool, obj: Any, limits: LuaLimits, chunk: str = "<string>"
            ) -> LuaOutcome:
        """Run `source` with `obj` (JSON values, see `json_values`) as the global `obj`; errors are located in
        `chunk` (the script's location) as `<chunk>:<line>:`."""
        module = self._module
        if self._lua is None:
            self._lua = module.LuaRuntime(
                register_eval=False, register_builtins=False, max_memory=0, attribute_filter=_deny_attributes
            )
            self._lua.execute(_GOPHER_ERRORS)
            self._runner = self._lua.execute(self._source)
        lua = self._lua
        result: Any = None
        error: BaseException | None = None
        try:
            lua.set_max_memory(0)
            table = lua.table_from(obj, recursive=True)
            lua.set_max_memory(lua.get_memory_used(total=True) + limits.max_memory, total=True)
            result = self._runner(
                source,
                table,
                use_open_libs,
                max(1, limits.max_instructions // _TICK),
                _TICK,
                limits.message("instructions"),
                limits.max_cpu_seconds,
                limits.message("cpu"),
            )
        except Exception as exc:  # a memory error outside the script's pcall, or bad text
            error = exc
        outcome = self._outcome(result, error, limits, chunk)
        if error is not None or outcome.stop is not None:
            self._lua = self._runner = None  # start the next script from a clean state
        return outcome

    def _outcome(self, result: Any, error: BaseException | None, limits: LuaLimits, chunk: str) -> LuaOutcome:
        module = self._module
        if isinstance(error, module.LuaMemoryError):
            return _stopped(limits, "memory")
        if isinstance(error, module.LuaError):
            text = str(error)
            for limit in ("instructions", "cpu"):
                if limits.message(limit) in text:
                    return _stopped(limits, limit)
            if "not enough memory" in text:
                return _stopped(limits, "memory")
            return _failed(_as_gopher(text, chunk))
        if error is not None:  # e.g. a returned string that is not UTF-8
            return _failed(f"{type(error).__name__}: {error}")
        values = result if isinstance(result, tuple) else (result,)
        outcome = values[0] if values else None
        if outcome == "stopped":
            message = str(values[1])
            stop: Stop = "cpu" if message == limits.message("cpu") else "instructions"
            return LuaOutcome(Health(HealthStatus.UNKNOWN, message), message, stop)
        if outcome == "memory":
            return _stopped(limits, "memory")
        if outcome == "error":
            return _failed(_as_gopher(str(values[1]), chunk))
        return _interpret(values[1:])


def stopped_outcome(message: str, stop: Stop) -> LuaOutcome:
    """Unknown health for a script that was stopped, with `message` as both health message and problem."""
    return LuaOutcome(Health(HealthStatus.UNKNOWN, message), message, stop)


def _stopped(limits: LuaLimits, stop: Stop) -> LuaOutcome:
    return stopped_outcome(limits.message(stop), stop)


def _as_gopher(text: str, chunk: str) -> str:
    """A LuaJIT error in gopher-lua's (Argo CD's) wording where the two differ in text only, located in `chunk`
    rather than `<string>`."""
    text = _BAD_ARGUMENT.sub(r"bad argument #\1 to \2", text)
    text = _COMPARE_SAME.sub(r"attempt to compare \1 with \1", text)
    return _CHUNK_LINE.sub(lambda found: f"{chunk}:{found[1]}:", text)


def _failed(message: str) -> LuaOutcome:
    return LuaOutcome(Health(HealthStatus.UNKNOWN, message), f"Lua health script failed: {_one_line(message)}")


def _interpret(values: tuple[Any, ...]) -> LuaOutcome:
    """Argo CD's reading of the returned value (JSON-encode the table, decode into HealthStatus)."""
    padded = [*values, *([None] * 8)]
    result_type, status_type, status, message_type, message, empty, is_array = padded[:7]
    if result_type == "nil":
        return LuaOutcome(None, "Lua health script returned nothing; Argo CD shows no health for the resource")
    if result_type != "table":
        text = f"expect table output from Lua script, not {result_type}"
        return LuaOutcome(Health(HealthStatus.UNKNOWN, text), f"Lua health script failed: {text}")
    if empty or is_array:
        return LuaOutcome(None, "Lua health script returned an empty table; Argo CD shows no health")
    if status_type not in ("nil", "string") or message_type not in ("nil", "string"):
        return LuaOutcome(
            None,
            "Lua health script returned a non-string status or message; Argo CD shows no health",
        )
    valid = {s.value for s in HealthStatus}
    if status not in valid:
        shown = "no status" if status is None else f"status {status!r}"
        return LuaOutcome(
            Health(HealthStatus.UNKNOWN, INVALID_HEALTH_STATUS),
            f"Lua health script returned an invalid health status ({shown})",
        )
    return LuaOutcome(Health(HealthStatus(status), message or ""))
