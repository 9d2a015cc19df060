"""Follow non-deterministic calls through defines, includes, variables and blocks to the output."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypeAlias, TypeVar

from argo_doctor.helm.conditions import Cond, Formula, to_formula
from argo_doctor.helm.expr import Call, Chain, Expr, Lit, Parsed, Ref, calls, render
from argo_doctor.helm.functions import FunctionInfo
from argo_doctor.helm.layout import field_path

_T = TypeVar("_T")
_ROOT = "\x01root"  # the dot is the chart's top-level context
_EMPTY = "\x02empty"  # alias of a variable known to be empty under `helm template` (a lookup result, `dict`)
_RELEASE_CONSTANTS: dict[tuple[str, ...], bool] = {("Release", "IsInstall"): True, ("Release", "IsUpgrade"): False}
"""`helm template` (what Argo CD runs) renders as an install: helm's template command sets IsInstall, never
IsUpgrade (helm v3 pkg/cmd/template.go runs action.Install with DryRun)."""


@dataclass(frozen=True)
class Act:
    """A parsed action at its place in a file."""

    file: str
    line: int
    col: int
    parsed: Parsed

    @property
    def loc(self) -> str:
        """chart-relative path:line."""
        return f"{self.file}:{self.line}"


@dataclass
class TemplateFile:
    """One file under templates/: its lines, skeleton, top-level actions."""

    rel: str
    raw_lines: tuple[str, ...]
    skeleton: tuple[str, ...]
    top: list[Act] = field(default_factory=list)


@dataclass
class Define:
    """A `define "name"` ... `end` block."""

    name: str
    file: str
    line: int
    body: list[Act]


@dataclass(frozen=True)
class Entry:
    """A non-deterministic value on its way to the output."""

    function: str
    kind: str
    call: str
    via: tuple[str, ...]
    conds: frozenset[Cond]
    field: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str, tuple[str, ...]]:
        """Identity of the call along one include chain."""
        return (self.function, self.call, self.via)


Placed: TypeAlias = tuple[Entry, Act]


@dataclass
class ScopeOut:
    """What a scope (a define or a whole file) sends out: values in its output, and calls that never reach it."""

    landed: list[Placed]
    unlanded: list[Placed]


def split_scopes(rel: str, acts: list[Act]) -> tuple[list[Act], list[Define], list[tuple[str, str]]]:
    """Separate a file's top-level actions from its define bodies."""
    top: list[Act] = []
    defines: list[Define] = []
    problems: list[tuple[str, str]] = []
    current: Define | None = None
    depth = 0
    for act in acts:
        kw = act.parsed.keyword
        if current is None:
            if kw == "define":
                current = Define(act.parsed.name or "", rel, act.line, [])
                depth = 0
                continue
            top.append(act)
            continue
        if kw == "define":
            problems.append((act.loc, f'define "{act.parsed.name}" inside define "{current.name}"'))
            continue
        if kw in ("if", "with", "range", "block"):
            depth += 1
        elif kw == "end":
            if depth == 0:
                defines.append(current)
                current = None
                continue
            depth -= 1
        current.body.append(act)
    if current is not None:
        problems.append((f"{rel}:{current.line}", f'define "{current.name}" has no matching end'))
        defines.append(current)
    return top, defines, problems


class Chart:
    """The templates of one chart (with its sub-charts' defines) and the analysis state."""

    def __init__(self, files: dict[str, TemplateFile], defines: dict[str, Define], functions: dict[str, FunctionInfo]):
        self.files = files
        self.defines = defines
        self.functions = functions
        self.problems: list[tuple[str, str]] = []
        self._cache: dict[str, ScopeOut] = {}
        self._stack: list[str] = []

    def problem(self, location: str, message: str) -> None:
        """Record a problem once."""
        if (location, message) not in self.problems:
            self.problems.append((location, message))

    def define_out(self, name: str, site: Act) -> ScopeOut | None:
        """Analyse a define once; None when unknown."""
        if name in self._cache:
            return self._cache[name]
        define = self.defines.get(name)
        if define is None:
            self.problem(site.loc, f'no template named "{name}" (include/template of an undefined name)')
            return None
        if name in self._stack:
            return ScopeOut([], [])
        self._stack.append(name)
        try:
            out = Walker(self, define.body, stop_line=define.line).run()
        finally:
            self._stack.pop()
        self._cache[name] = out
        return out

    def analyse_file(self, rel: str) -> ScopeOut:
        """Analyse the top level of one output template."""
        return Walker(self, self.files[rel].top, stop_line=1).run()


@dataclass
class _Frame:
    kind: str
    loc: str
    prior: list[Formula]
    conds: tuple[Cond, ...]
    dot: str | None
    dot_taint: list[Entry]
    outer_dot: str | None
    outer_taint: list[Entry]
    saved_pipe: dict[str, _Saved] = field(default_factory=dict)  # variables the block's own pipeline shadows
    saved_branch: dict[str, _Saved] = field(default_factory=dict)  # variables declared in the current branch


_Saved: TypeAlias = tuple[list[Entry] | None, str | None, int | None]
"""A variable's state before a `:=` shadowed it: its values, its alias, the depth it was declared at."""


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _filter(entries: list[Entry], path: tuple[str, ...]) -> list[Entry]:
    """Entries that `.path` of a tainted value still carries, their field made relative to it."""
    if not path:
        return list(entries)
    out: list[Entry] = []
    for e in entries:
        n = min(len(e.field), len(path))
        if e.field[:n] != path[:n]:
            continue
        out.append(replace(e, field=e.field[len(path) :]) if len(e.field) > len(path) else replace(e, field=()))
    return out


def _with_conds(entries: list[Entry], conds: frozenset[Cond]) -> list[Entry]:
    return [replace(e, conds=e.conds | conds) if not conds <= e.conds else e for e in entries]


class Walker:
    """One pass over the actions of a scope, in order, tracking conditions and variables."""

    def __init__(self, chart: Chart, acts: list[Act], stop_line: int) -> None:
        self.chart = chart
        self.acts = acts
        self.stop_idx = max(stop_line - 1, 0)
        self.vars: dict[str, list[Entry]] = {}
        self.alias: dict[str, str] = {}
        self.declared_at: dict[str, int] = {}  # block depth of each variable's visible declaration
        self.frames: list[_Frame] = []
        self.born: dict[tuple[str, str, tuple[str, ...]], Placed] = {}
        self.cond_sites: dict[tuple[str, str, tuple[str, ...]], Placed] = {}
        self.landed_keys: set[tuple[str, str, tuple[str, ...]]] = set()
        self.landed: list[Placed] = []
        self.passed: list[Placed] = []

    # -- context -------------------------------------------------------------------------------
    def dot(self) -> str | None:
        """Values path the dot stands for (_ROOT at the top, None when unknown)."""
        return self.frames[-1].dot if self.frames else _ROOT

    def dot_taint(self) -> list[Entry]:
        """Non-deterministic values the dot holds."""
        return self.frames[-1].dot_taint if self.frames else []

    def conds(self) -> frozenset[Cond]:
        """Conditions that hold where we are."""
        return frozenset(c for f in self.frames for c in f.conds)

    def resolve(self, expr: Expr) -> str | None:
        """Dotted values path of a reference, if it is one."""
        if not isinstance(expr, Ref):
            return None
        if expr.root in (".", "$"):
            dot = _ROOT if expr.root == "$" else self.dot()
            if dot == _ROOT:
                if expr.path[:1] == ("Values",) and len(expr.path) > 1:
                    return _join(*expr.path[1:])
                return None
            if dot is None:
                return None
            return _join(dot, *expr.path) or None
        alias = self.alias.get(expr.root)
        if alias is None or alias == _EMPTY:
            return None
        return _join(alias, *expr.path) or None

    def known(self, expr: Expr) -> bool | None:
        """Truth of an expression that does not depend on values under `helm template`: `lookup` finds nothing
        (no cluster), `dict`/`list` without arguments are empty, `.Release.IsInstall` is true."""
        if isinstance(expr, Call):
            if expr.name == "lookup" or (expr.name in ("dict", "list") and not expr.args):
                return False
            return None
        if isinstance(expr, Chain):
            return False if self.known(expr.base) is False else None
        if isinstance(expr, Ref):
            if expr.root not in (".", "$"):
                return False if self.alias.get(expr.root) == _EMPTY else None
            if expr.root == "$" or self.dot() == _ROOT:
                return _RELEASE_CONSTANTS.get(expr.path)
        return None

    def formula(self, expr: Expr | None) -> Formula:
        """The condition of a block as a formula."""
        if expr is None:
            return to_formula(Lit(None), self.resolve)
        return to_formula(expr, self.resolve, render(expr), self.known)

    def field_at(self, act: Act) -> tuple[str, ...]:
        """YAML path where the action writes."""
        nindent: int | None = None
        indent: int | None = None
        for c in calls(act.parsed.expr):
            if c.name in ("nindent", "indent") and c.args:
                first = c.args[0]
                if isinstance(first, Lit) and isinstance(first.value, int) and not isinstance(first.value, bool):
                    if c.name == "nindent":
                        nindent = first.value
                    else:
                        indent = first.value
                    break
        tf = self.chart.files.get(act.file)
        if tf is None:
            return ()
        return field_path(tf.skeleton, act.line - 1, act.col, self.stop_idx, nindent, indent)

    # -- taint ---------------------------------------------------------------------------------
    def bear(self, entry: Entry, act: Act) -> Entry:
        """Note where a value enters this scope."""
        self.born.setdefault(entry.key, (entry, act))
        return entry

    def include(self, name: str, act: Act) -> list[Entry]:
        """Values a define emits, seen from this include site."""
        out = self.chart.define_out(name, act)
        if out is None:
            return []
        here = self.conds()
        prefix = (act.loc, f"define {name}")
        result: list[Entry] = []
        for entry, _ in out.landed:
            result.append(self.bear(replace(entry, via=prefix + entry.via, conds=entry.conds | here), act))
        site_field = self.field_at(act) if out.unlanded else ()
        for entry, _ in out.unlanded:
            moved = replace(entry, via=prefix + entry.via, conds=entry.conds | here, field=site_field + entry.field)
            self.passed.append((moved, act))
        return result

    def taint(self, expr: Expr | None, act: Act) -> list[Entry]:
        """Non-deterministic values an expression carries."""
        if expr is None or isinstance(expr, Lit):
            return []
        if isinstance(expr, Ref):
            if expr.root == ".":
                return _filter(self.dot_taint(), expr.path)
            if expr.root == "$":
                return []
            return _filter(self.vars.get(expr.root, []), expr.path)
        if isinstance(expr, Chain):
            return _filter(self.taint(expr.base, act), expr.path)
        return self._taint_call(expr, act)

    def _taint_call(self, expr: Call, act: Act) -> list[Entry]:
        per_arg = [self.taint(a, act) for a in expr.args]
        name, args = expr.name, expr.args
        if name == "default" and len(args) == 2 and per_arg[0]:
            given = self.resolve(args[1])
            if given:
                per_arg[0] = _with_conds(
                    per_arg[0], frozenset({Cond(to_formula(args[1], self.resolve, known=self.known), False)})
                )
        elif name == "coalesce":
            before: list[Cond] = []
            for i, arg in enumerate(args):
                if per_arg[i] and before:
                    per_arg[i] = _with_conds(per_arg[i], frozenset(before))
                if self.resolve(arg):
                    before.append(Cond(to_formula(arg, self.resolve, known=self.known), False))
        elif name == "ternary" and len(args) == 3 and self.resolve(args[2]):
            test = to_formula(args[2], self.resolve, known=self.known)
            per_arg[0] = _with_conds(per_arg[0], frozenset({Cond(test, True)}))
            per_arg[1] = _with_conds(per_arg[1], frozenset({Cond(test, False)}))
        out = [e for entries in per_arg for e in entries]
        info = self.chart.functions.get(name)
        if info is not None and not info.requires:
            entry = Entry(name, info.kind, act.loc, (), self.conds(), ())
            out.append(self.bear(entry, act))
        if name == "include":
            if not args:
                self.chart.problem(act.loc, "include without a template name")
            elif isinstance(args[0], Lit) and isinstance(args[0].value, str):
                out.extend(self.include(args[0].value, act))
        return out

    # -- effects -------------------------------------------------------------------------------
    def assign(
        self, names: tuple[str, ...], expr: Expr | None, entries: list[Entry], reassign: bool, scoped: bool = True
    ) -> None:
        """`$x := ...` declares the variable until the end of the enclosing block (shadowing an outer one);
        `$x = ...` assigns the visible one: it replaces its values at the depth it was declared, and adds to them
        from inside a block, which may not run. `scoped=False`: the caller scopes the declaration itself (a
        block's own pipeline)."""
        here = self.conds()
        depth = len(self.frames)
        for name in names:
            carried = _with_conds(entries, here)
            if reassign and name in self.vars and self.declared_at.get(name, 0) < depth:
                known = self.vars[name]
                known.extend(e for e in carried if e not in known)
            else:
                if not reassign and scoped and self.frames:
                    frame = self.frames[-1]
                    if name not in frame.saved_branch and name not in frame.saved_pipe:
                        frame.saved_branch[name] = (self.vars.get(name), self.alias.get(name),
                                                    self.declared_at.get(name))
                self.vars[name] = carried
                if not reassign:
                    self.declared_at[name] = depth
            path = self.resolve(expr) if expr is not None and len(names) == 1 else None
            empty = expr is not None and len(names) == 1 and self.known(expr) is False
            if path:
                self.alias[name] = path
            elif empty and (not reassign or self.alias.get(name) == _EMPTY or self.declared_at.get(name) == depth):
                self.alias[name] = _EMPTY
            elif not reassign or self.declared_at.get(name, 0) == depth or self.alias.get(name) == _EMPTY:
                self.alias.pop(name, None)

    def _restore(self, saved: dict[str, _Saved]) -> None:
        """Put back the variables a closing scope shadowed."""
        for name, (entries, alias, depth) in saved.items():
            _put_back(self.vars, name, entries)
            _put_back(self.alias, name, alias)
            _put_back(self.declared_at, name, depth)
        saved.clear()

    def sink(self, entries: list[Entry], act: Act) -> None:
        """The action writes its value into the output."""
        if not entries:
            return
        site = self.field_at(act)
        here = self.conds()
        for e in entries:
            self.landed_keys.add(e.key)
            placed = replace(e, field=site + e.field, conds=e.conds | here)
            if (placed, act) not in self.landed:
                self.landed.append((placed, act))

    def condition_use(self, entries: list[Entry], act: Act) -> None:
        """A tainted value decides a branch."""
        here = self.conds()
        for e in entries:
            self.cond_sites.setdefault(e.key, (replace(e, conds=e.conds | here), act))

    # -- walk ----------------------------------------------------------------------------------
    def _open(self, act: Act) -> None:
        p = act.parsed
        entries = self.taint(p.expr, act)
        shadowed: dict[str, _Saved] = {}
        if p.decl:
            if not p.assign:
                shadowed = {n: (self.vars.get(n), self.alias.get(n), self.declared_at.get(n)) for n in p.decl}
            self.assign(p.decl, p.expr if p.keyword != "range" else None, entries, p.assign, scoped=False)
        self.condition_use(entries, act)
        formula = self.formula(p.expr)
        outer_dot, outer_taint = self.dot(), self.dot_taint()
        dot: str | None = outer_dot
        dot_taint = outer_taint
        if p.keyword == "with":
            dot = self.resolve(p.expr) if p.expr is not None else None
            dot = dot if dot is not None else (None if p.expr is None or not _is_values_root(p.expr) else "")
            dot_taint = entries
        elif p.keyword == "range":
            dot, dot_taint = None, entries
        self.frames.append(
            _Frame(p.keyword, act.loc, [formula], (Cond(formula, True),), dot, dot_taint, outer_dot, outer_taint,
                   saved_pipe=shadowed)
        )
        for name in shadowed:
            self.declared_at[name] = len(self.frames)

    def _else(self, act: Act) -> None:
        p = act.parsed
        if not self.frames or self.frames[-1].kind == "block":
            self.chart.problem(act.loc, "else without a matching if/with/range")
            return
        frame = self.frames[-1]
        self._restore(frame.saved_branch)
        negated = tuple(Cond(f, False) for f in frame.prior)
        frame.dot, frame.dot_taint = frame.outer_dot, frame.outer_taint
        if p.keyword == "else":
            frame.conds = negated
            return
        entries = self.taint(p.expr, act)
        if p.decl:
            self.assign(p.decl, p.expr, entries, p.assign)
        self.condition_use(entries, act)
        formula = self.formula(p.expr)
        frame.conds = (*negated, Cond(formula, True))
        frame.prior.append(formula)
        if p.keyword == "elsewith":
            resolved = self.resolve(p.expr) if p.expr is not None else None
            frame.dot, frame.dot_taint = resolved, entries

    def run(self) -> ScopeOut:
        """Walk the scope and report what lands in its output and what does not."""
        for act in self.acts:
            p = act.parsed
            kw = p.keyword
            if kw in ("if", "with", "range"):
                self._open(act)
            elif kw in ("else", "elseif", "elsewith"):
                self._else(act)
            elif kw == "block":
                self.sink(self.taint(p.expr, act), act)
                dot = self.dot()
                self.frames.append(_Frame("block", act.loc, [], (), dot, self.dot_taint(), dot, self.dot_taint()))
            elif kw == "end":
                if self.frames:
                    frame = self.frames.pop()
                    self._restore(frame.saved_branch)
                    self._restore(frame.saved_pipe)
                else:
                    self.chart.problem(act.loc, "end without a matching if/with/range/define")
            elif kw == "template":
                self.sink(self.include(p.name, act) if p.name else [], act)
            elif kw == "":
                entries = self.taint(p.expr, act)
                if p.decl:
                    self.assign(p.decl, p.expr, entries, p.assign)
                else:
                    self.sink(entries, act)
        for frame in self.frames:
            self.chart.problem(frame.loc, f"{frame.kind} has no matching end")
        unlanded: list[Placed] = []
        for key, (entry, act) in self.born.items():
            if key in self.landed_keys:
                continue
            where = self.cond_sites.get(key, (entry, act))
            unlanded.append((replace(where[0], field=self.field_at(where[1]) + entry.field), where[1]))
        unlanded.extend(self.passed)
        return ScopeOut(self.landed, unlanded)


def _put_back(table: dict[str, _T], name: str, value: _T | None) -> None:
    if value is None:
        table.pop(name, None)
    else:
        table[name] = value


def _is_values_root(expr: Expr) -> bool:
    return isinstance(expr, Ref) and expr.root in (".", "$") and expr.path == ("Values",)
