"""Conditions of `if`/`with` blocks as formulas over values, and the settings that flip them."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from argo_doctor.helm.expr import Call, Expr, Lit

Scalar: TypeAlias = str | int | float | bool | None


@dataclass(frozen=True)
class Truthy:
    """`.Values.<path>` is non-empty."""

    path: str


@dataclass(frozen=True)
class Equals:
    """`eq .Values.<path> <value>`."""

    path: str
    value: Scalar


@dataclass(frozen=True)
class Not:
    """Negation."""

    inner: Formula


@dataclass(frozen=True)
class AllOf:
    """`and ...`."""

    parts: tuple[Formula, ...]


@dataclass(frozen=True)
class AnyOf:
    """`or ...`."""

    parts: tuple[Formula, ...]


@dataclass(frozen=True)
class Unknown:
    """A condition not expressed in values alone (lookup results, release fields, includes...)."""

    text: str


@dataclass(frozen=True)
class Const:
    """A condition whose value is known without values (a `lookup` result is empty under `helm template`)."""

    value: bool


Formula: TypeAlias = Truthy | Equals | Not | AllOf | AnyOf | Unknown | Const


@dataclass(frozen=True)
class Cond:
    """A condition that must have truth value `want` for the code under it to run."""

    formula: Formula
    want: bool


@dataclass(frozen=True)
class Setting:
    """One values change: op is truthy, falsy, eq or ne."""

    path: str
    op: str
    value: Scalar = None


Resolver: TypeAlias = Callable[[Expr], str | None]
Known: TypeAlias = Callable[[Expr], bool | None]
_MAX_ALTERNATIVES = 16


def to_formula(expr: Expr, resolve: Resolver, text: str = "", known: Known | None = None) -> Formula:
    """Translate a condition expression into a formula over values paths; `known` gives the truth of expressions
    that do not depend on values (None when it does not know)."""
    path = resolve(expr)
    if path:
        return Truthy(path)
    constant = known(expr) if known is not None else None
    if constant is not None:
        return Const(constant)
    if isinstance(expr, Call):
        name, args = expr.name, expr.args
        if name == "not" and len(args) == 1:
            return Not(to_formula(args[0], resolve, text, known))
        if name in ("and", "or") and args:
            parts = tuple(to_formula(a, resolve, text, known) for a in args)
            return AllOf(parts) if name == "and" else AnyOf(parts)
        if name == "empty" and len(args) == 1:
            return Not(to_formula(args[0], resolve, text, known))
        if name in ("eq", "ne") and len(args) >= 2:
            subject = resolve(args[0])
            others = args[1:]
            if subject is None and len(args) == 2:
                subject, others = resolve(args[1]), args[:1]
            if subject and all(isinstance(a, Lit) for a in others):
                eqs = tuple(Equals(subject, a.value) for a in others if isinstance(a, Lit))
                formula: Formula = eqs[0] if len(eqs) == 1 else AnyOf(eqs)
                return formula if name == "eq" else Not(formula)
    return Unknown(text)


def _product(options: list[list[frozenset[Setting]]]) -> list[frozenset[Setting]]:
    out: list[frozenset[Setting]] = []
    for combo in itertools.product(*options):
        merged = frozenset().union(*combo)
        if merged not in out:
            out.append(merged)
        if len(out) >= _MAX_ALTERNATIVES:
            break
    return out


def ways_to_make(formula: Formula, want: bool) -> list[frozenset[Setting]]:
    """Alternative sets of settings, each enough to give the formula truth value `want`."""
    if isinstance(formula, Truthy):
        return [frozenset({Setting(formula.path, "truthy" if want else "falsy")})]
    if isinstance(formula, Equals):
        return [frozenset({Setting(formula.path, "eq" if want else "ne", formula.value)})]
    if isinstance(formula, Not):
        return ways_to_make(formula.inner, not want)
    if isinstance(formula, (AllOf, AnyOf)):
        conjunctive = isinstance(formula, AllOf) == want  # every part must reach `want`
        per_part = [ways_to_make(p, want) for p in formula.parts]
        if conjunctive:
            if any(not ways for ways in per_part):
                return []
            return _product(per_part)
        out: list[frozenset[Setting]] = []
        for ways in per_part:
            for way in ways:
                if way not in out:
                    out.append(way)
        return out[:_MAX_ALTERNATIVES]
    return []


MISSING = object()
"""What `lookup_value` gives for a path the values do not hold."""


def lookup_value(values: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path, or the MISSING marker."""
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return MISSING
        node = node[part]
    return node


def go_truthy(value: Any) -> bool:
    """Truth as Go templates see it: false, 0, nil and empty values are false."""
    if value is MISSING or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (str, list, dict, tuple)):
        return len(value) > 0
    return True


def show_value(value: Any) -> str:
    """A short display of a current value."""
    if value is MISSING or value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + '..."'
    if isinstance(value, Mapping):
        return "a map" if value else "{}"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "[]"
    return type(value).__name__


def _literal(value: Scalar) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _same(current: Any, value: Scalar) -> bool:
    if current is MISSING:
        return False
    if isinstance(current, bool) or isinstance(value, bool):
        return current is value
    return bool(current == value)


def shown_path(path: str, prefix: str) -> str:
    """A sub-chart's values path as the parent chart sets it (`global.` ones are copied down as they are)."""
    return path if not prefix or path == "global" or path.startswith("global.") else prefix + path


def describe(setting: Setting, values: Mapping[str, Any], prefix: str = "") -> tuple[str, str, str]:
    """(path, value token, phrase) for one setting; the phrase's current-value note follows a NUL. `prefix` is
    the sub-chart's section in the parent's values ("metrics.")."""
    current = lookup_value(values, setting.path)
    shown = show_value(current)
    path = shown_path(setting.path, prefix)
    if setting.op in ("truthy", "falsy"):
        want = setting.op == "truthy"
        done = go_truthy(current) == want
        if isinstance(current, bool) or (current is MISSING and path.split(".")[-1].startswith("enable")):
            token = "true" if want else "false"
            phrase = f"{path}: {token}"
        else:
            token = "<set>" if want else "<empty>"
            phrase = path if want else f"{path} to empty"
    elif setting.op == "eq":
        token = _literal(setting.value)
        done = _same(current, setting.value)
        phrase = f"{path}: {token}"
    else:
        token = f"!= {_literal(setting.value)}"
        done = not _same(current, setting.value)
        phrase = f"{path} to something other than {_literal(setting.value)}"
    return path, token, phrase + "\x00" + (f"(already {shown})" if done else f"(now {shown})")


def _join(phrases: list[str]) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    return ", ".join(phrases[:-1]) + " and " + phrases[-1]


def settings_text(
    settings: frozenset[Setting], values: Mapping[str, Any], prefix: str = ""
) -> tuple[tuple[tuple[str, str], ...], str]:
    """The (path, value) pairs of a switch in stable order, and a sentence for people."""
    described = sorted((describe(s, values, prefix) for s in settings), key=lambda d: d[0])
    pairs = tuple((path, token) for path, token, _ in described)
    groups: list[tuple[list[str], str]] = []  # settings sharing the same current value are named together
    for _, _, phrase in described:
        core, note = phrase.split("\x00", 1)
        if groups and groups[-1][1] == note:
            groups[-1][0].append(core)
        else:
            groups.append(([core], note))
    return pairs, "set " + _join([f"{_join(cores)} {note}" for cores, note in groups])


def evaluate(formula: Formula, values: Mapping[str, Any]) -> bool | None:
    """The formula's truth value with these values; None when it cannot be told from values alone."""
    if isinstance(formula, Const):
        return formula.value
    if isinstance(formula, Truthy):
        return go_truthy(lookup_value(values, formula.path))
    if isinstance(formula, Equals):
        return _same(lookup_value(values, formula.path), formula.value)
    if isinstance(formula, Not):
        inner = evaluate(formula.inner, values)
        return None if inner is None else not inner
    if isinstance(formula, (AllOf, AnyOf)):
        decisive = isinstance(formula, AnyOf)  # the part value that decides the whole
        results = [evaluate(p, values) for p in formula.parts]
        if decisive in results:
            return decisive
        return None if None in results else not decisive
    return None


def reach(conds: frozenset[Cond], values: Mapping[str, Any]) -> bool | None:
    """Whether code under these conditions runs with these values: True, False, or None when some condition
    cannot be evaluated statically (and none is known to fail)."""
    unknown = False
    for cond in conds:
        value = evaluate(cond.formula, values)
        if value is None:
            unknown = True
        elif value != cond.want:
            return False
    return None if unknown else True


def override_of(path: str, token: str) -> Any:
    """A value that realises a switch's (path, token) pair, for `--set`-style application: "<set>" becomes a
    placeholder string, "<empty>" an empty one, "!= v" something other than v."""
    if token == "<set>":
        return "set-by-argo-doctor"
    if token == "<empty>":
        return ""
    if token.startswith("!= "):
        other = json.loads(token[3:])
        return "" if other not in ("", None) else "other"
    return json.loads(token)
