"""Which apiVersion a chart template emits at a Kubernetes version, with `.Capabilities` decided statically.

At a target vX.Y, `.Capabilities.KubeVersion` (`.Version`, `.GitVersion`) is `vX.Y.0`, `.Major` "X" and `.Minor`
"Y", as with `helm template --kube-version vX.Y.0`; `.Capabilities.APIVersions.Has` asks the caller (it knows
which APIs a release serves). Helpers (`include`, `template`) run on the chart's own defines. Conditions that
read `.Capabilities`, call `semverCompare` or an unknown helper decide the branch; when such a condition also
depends on something unknown (values, lookups), the branch "may" be taken. Conditions on values alone do
not hide anything: both sides are reported, as the chart may be rendered either way.

Version constraints follow helm's `semverCompare` (sprig, on Masterminds/semver v3); the rules, from the
Masterminds/semver v3 README ("Checking Version Constraints") and its constraint code:

* A constraint is `||`-separated groups; a group is comparisons separated by spaces or commas, all of which
  must hold. Operators: `=` (or none), `!=`, `>`, `<`, `>=` (`=>`), `<=` (`=<`), `~` (`~>`), `^`.
* `A - B` (spaces around the hyphen) is `>= A, <= B`; without spaces `1.2-1.4.5` is 1.2.0 with prerelease 1.4.5.
* Missing parts and `x`/`X`/`*` are wildcards: `1.2.x` and `=1.2` are `~1.2` (>= 1.2.0, < 1.3.0), `<= 2.x` is
  `< 3`, `> 1.21` means a minor above 21 (1.21.5 does not match), `*` is `>= 0.0.0`.
* `~1.2.3` is `>= 1.2.3, < 1.3.0`; `~1` is `>= 1, < 2`. `^1.2.3` is `>= 1.2.3, < 2.0.0`; `^0.2.3` is
  `>= 0.2.3, < 0.3.0`; `^0.0.3` is `>= 0.0.3, < 0.0.4`; `^0` is `< 1.0.0`.
* Prereleases: a version with a prerelease (`v1.25.0-eks-3f1c2a`) only satisfies a group in which some
  comparison names a prerelease; so `>=1.19` rejects `v1.25.0-eks-3f1c2a` and `>=1.19-0` accepts it. That is
  the group-wide rule of Masterminds/semver v3.4; v3.0 to v3.3 applied it to each comparison (`>=1.19-0 <1.30`
  rejects a prerelease there). Build metadata (`+k3s1`) is ignored. The target versions this project judges
  at (`vX.Y.0`) have no prerelease, so the two rules agree for them.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from argo_doctor.helm.conditions import MISSING, go_truthy, lookup_value, show_value
from argo_doctor.helm.expr import Call, Chain, Expr, Lit, Parsed, ParseError, Ref, parse_action, render
from argo_doctor.helm.layout import document_range, shape
from argo_doctor.helm.lexer import HOLE, RawAction, lex

_WILD = {"x", "X", "*"}
_PART = r"[0-9xX*]+"
_VERSION_TEXT = (rf"v?({_PART})(?:\.({_PART}))?(?:\.({_PART}))?"
                 r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?")
_OPS = r"!=|>=|=>|<=|=<|~>|>|<|=|~|\^"
_COMPARISON = re.compile(rf"\s*({_OPS})?\s*({_VERSION_TEXT})\s*")
_HYPHEN = re.compile(rf"\s*({_VERSION_TEXT})\s+-\s+({_VERSION_TEXT})\s*")
_LOOSE = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
                    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$")


@dataclass(frozen=True, order=False)
class SemVer:
    """A semantic version; `pre` is the prerelease text ('' for a release)."""

    major: int
    minor: int
    patch: int
    pre: str = ""

    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        """Precedence: a release after its prereleases, numeric identifiers before alphanumeric ones."""
        idents = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre.split(".")) if self.pre else ()
        return self.major, self.minor, self.patch, 0 if self.pre else 1, idents


def parse_version(text: str) -> SemVer | None:
    """A version as Masterminds' `NewVersion` reads it: `v` prefix and missing minor/patch allowed."""
    found = _LOOSE.match(text.strip())
    if not found:
        return None
    major, minor, patch, pre = found.groups()
    return SemVer(int(major), int(minor or 0), int(patch or 0), pre or "")


@dataclass(frozen=True)
class _Comparison:
    op: str
    version: SemVer
    wild: int  # 0: exact; 1: patch missing or x; 2: minor missing or x; 3: major missing or x


def _comparison(op: str, major: str, minor: str | None, patch: str | None, pre: str | None) -> _Comparison:
    if major in _WILD:
        return _Comparison(op, SemVer(0, 0, 0, pre or ""), 3)
    if minor is None or minor in _WILD:
        return _Comparison(op, SemVer(int(major), 0, 0, pre or ""), 2)
    if patch is None or patch in _WILD:
        return _Comparison(op, SemVer(int(major), int(minor), 0, pre or ""), 1)
    return _Comparison(op, SemVer(int(major), int(minor), int(patch), pre or ""), 0)


def _group(text: str) -> list[_Comparison]:
    text = _HYPHEN.sub(lambda m: f" >= {m.group(1)}, <= {m.group(6)} ", text)
    out: list[_Comparison] = []
    pos = 0
    while pos < len(text):
        if text[pos] in " \t,":
            pos += 1
            continue
        found = _COMPARISON.match(text, pos)
        if not found:
            raise ValueError(f"improper constraint: {text.strip()!r}")
        out.append(_comparison(found.group(1) or "=", *found.group(3, 4, 5, 6)))
        pos = found.end()
    if not out:
        raise ValueError("empty constraint")
    return out


def _holds(c: _Comparison, v: SemVer) -> bool:
    con, cmp = c.version, (v.key() > c.version.key()) - (v.key() < c.version.key())
    if c.op in ("=", "~", "~>"):
        if c.op == "=" and not c.wild:
            return cmp == 0
        if cmp < 0:
            return False
        if con == SemVer(0, 0, 0, con.pre) and c.wild in (0, 3):
            return True
        return v.major == con.major and (c.wild >= 2 or v.minor == con.minor)
    if c.op == "!=":
        if not c.wild:
            return cmp != 0
        return v.major != con.major or (c.wild == 1 and v.minor != con.minor)
    if c.op == ">":
        if not c.wild:
            return cmp > 0
        if c.wild == 3 or v.major != con.major:
            return cmp > 0 if c.wild == 3 else v.major > con.major
        return c.wild == 1 and v.minor > con.minor
    if c.op in ("<=", "=<"):
        if not c.wild:
            return cmp <= 0
        return v.major < con.major or (v.major == con.major and (c.wild == 2 or v.minor <= con.minor))
    if c.op == "<":
        return cmp < 0
    if c.op in (">=", "=>"):
        return cmp >= 0
    # ^: within the same major, or the same minor below 1.0.0, or the same patch below 0.1.0
    if cmp < 0:
        return False
    if con.major > 0 or c.wild == 2:
        return v.major == con.major
    if v.major > 0:
        return False
    if con.minor > 0 or c.wild == 1:
        return v.minor == con.minor
    return v.minor == 0 and v.patch == con.patch


def satisfies(constraint: str, version: str) -> bool:
    """Whether `version` meets `constraint` (`semverCompare constraint version`); ValueError when either is not
    valid, where helm fails the render."""
    parsed = parse_version(version)
    if parsed is None:
        raise ValueError(f"invalid semantic version: {version!r}")
    for group in [_group(text) for text in constraint.split("||")]:
        if parsed.pre and not any(c.version.pre for c in group):
            continue
        if all(_holds(c, parsed) for c in group):
            return True
    return False


# ---- templates

Verdict: TypeAlias = bool | None  # True: emitted; False: not emitted; None: cannot tell
_MAX_ALTERNATIVES = 16
_MAX_DEPTH = 24
_MAX_SWITCHES = 6
_MAX_NESTING = 64  # blocks inside blocks; deeper files are not judged
_MAX_REGEX_SUBJECT = 64  # regexMatch/regexFind run on short texts only (versions), never on long ones


class _Opaque:
    """A value the evaluator tracks by identity: the root context, `.Capabilities` and its parts, unknown."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNKNOWN = _Opaque("unknown")
_SETTING = _Opaque("setting")  # unknown, read from .Values (a setting of the chart's user)
_ROOT, _CAPS, _KUBE, _APIS = _Opaque("root"), _Opaque("Capabilities"), _Opaque("KubeVersion"), _Opaque("APIVersions")
_IGNORE = _Opaque("ignore")  # a condition on values alone: every branch may be rendered
_RANK: dict[Verdict, int] = {False: 0, None: 1, True: 2}


@dataclass(frozen=True)
class TemplateApi:
    """An apiVersion and kind a template emits: `verdict` True when emitted at the version, None when that
    cannot be decided statically; `why`, the conditions on `.Capabilities` that chose it and their values."""

    file: str
    line: int
    api_version: str
    kind: str
    verdict: Verdict
    why: tuple[str, ...]


@dataclass(frozen=True)
class _Alt:
    """One possible value of an expression or output of a helper; `sure` when it is the one at the version."""

    value: Any
    sure: bool = True
    why: tuple[str, ...] = ()
    capabilities: bool = False  # held in a variable, computed from .Capabilities


@dataclass
class _Text:
    text: str


@dataclass
class _Act:
    index: int
    parsed: Parsed | None  # None: not valid template syntax


@dataclass
class _Branch:
    index: int
    expr: Expr | None  # None for a plain `else`
    decl: tuple[str, ...]
    body: list[_Node] = field(default_factory=list)


@dataclass
class _Block:
    keyword: str  # if, with, range
    branches: list[_Branch]
    end: int = -1


_Node: TypeAlias = _Text | _Act | _Block
_Item: TypeAlias = str | tuple[int, RawAction]


def _build(items: Sequence[_Item]) -> tuple[list[_Node], dict[str, list[_Node]], bool]:
    """The block tree of text and actions, the defines, and whether every block was closed."""
    root: list[_Node] = []
    defines: dict[str, list[_Node]] = {}
    frames: list[tuple[_Block | None, list[_Node]]] = []
    current = root
    for item in items:
        if isinstance(item, str):
            if item:
                current.append(_Text(item))
            continue
        index, raw = item
        if raw.comment:
            continue
        try:
            parsed = parse_action(raw.text)
        except ParseError:
            current.append(_Act(index, None))
            continue
        keyword = parsed.keyword
        if len(frames) > _MAX_NESTING:
            return root, defines, False
        if keyword in ("if", "with", "range"):
            block = _Block(keyword, [_Branch(index, parsed.expr, parsed.decl)])
            current.append(block)
            frames.append((block, current))
            current = block.branches[0].body
        elif keyword in ("else", "elseif", "elsewith"):
            if not frames or frames[-1][0] is None:
                return root, defines, False
            block = frames[-1][0]
            block.branches.append(_Branch(index, parsed.expr, parsed.decl))
            current = block.branches[-1].body
        elif keyword in ("define", "block"):
            if keyword == "block":
                current.append(_Act(index, Parsed("template", name=parsed.name, expr=parsed.expr)))
            frames.append((None, current))
            current = defines.setdefault(parsed.name or "", [])
        elif keyword == "end":
            if not frames:
                return root, defines, False
            closed, current = frames.pop()
            if closed is not None:
                closed.end = index
        else:
            current.append(_Act(index, parsed))
    return root, defines, not frames


@dataclass(frozen=True)
class _File:
    actions: tuple[RawAction, ...]
    starts: tuple[int, ...]  # offset of each action's `{{`
    items: tuple[_Item, ...]
    skeleton: tuple[str, ...]
    lines: tuple[str, ...]
    line_starts: tuple[int, ...]


def _read(text: str) -> _File:
    result = lex(text)
    lines = text.split("\n")
    line_starts = tuple(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    flat = "\n".join(result.skeleton)
    starts = tuple(line_starts[a.line - 1] + a.col for a in result.actions)
    items: list[_Item] = []
    position = 0
    for index, action in enumerate(result.actions):
        piece = flat[position:starts[index]]
        if action.trim_left:
            piece = piece.rstrip()
        if index and result.actions[index - 1].trim_right:
            piece = piece.lstrip()
        items += [piece, (index, action)]
        position = line_starts[action.end_line - 1] if action.end_line != action.line else starts[index]
        following = starts[index + 1] if index + 1 < len(starts) else len(flat)
        while position < following and flat[position] == HOLE:
            position += 1
    if result.error is None:  # after an unclosed action helm renders nothing; keep the text out
        tail = flat[position:]
        items.append(tail.lstrip() if result.actions and result.actions[-1].trim_right else tail)
    return _File(result.actions, starts, tuple(items), result.skeleton, tuple(lines), line_starts)


def _and(a: Verdict, b: Verdict) -> Verdict:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _unknown(value: Any) -> bool:
    return value is UNKNOWN or value is _SETTING


def _truthy(value: Any) -> bool | None:
    """Truth as Go templates see it; None for an unknown value."""
    if _unknown(value):
        return None
    if value is None or value is False:
        return False
    if isinstance(value, (int, float, str, list, dict, tuple)) and not isinstance(value, bool):
        return bool(value)
    return True


def _truth(alts: Sequence[_Alt]) -> bool | None:
    """The truth of an expression whatever alternative is taken, None when they differ or one is unknown."""
    truths = {_truthy(alt.value) for alt in alts}
    return truths.pop() if len(truths) == 1 else None


def _text(value: Any) -> Any:
    if value is UNKNOWN or isinstance(value, _Opaque | dict | list):
        return UNKNOWN
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(value: Any) -> int | None:
    """sprig `int`: a number, a numeric string, else 0."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip(), 10)
        except ValueError:
            return 0
    return None if _unknown(value) else 0


def _compare(name: str, a: Any, b: Any) -> Any:
    if _unknown(a) or _unknown(b):
        return UNKNOWN
    if isinstance(a, bool) or isinstance(b, bool) or (type(a) is not type(b) and not (
        isinstance(a, int | float) and isinstance(b, int | float)
    )):
        return UNKNOWN  # helm fails on incompatible types
    try:
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[name]
    except TypeError:
        return UNKNOWN


def _printf(fmt: str, args: Sequence[Any]) -> Any:
    parts = re.split(r"(%[sdvq%])", fmt)
    out, rest = [], list(args)
    for part in parts:
        if part == "%%":
            out.append("%")
        elif part in ("%s", "%d", "%v", "%q"):
            if not rest or _text(rest[0]) is UNKNOWN:
                return UNKNOWN
            value = _text(rest.pop(0))
            out.append(f'"{value}"' if part == "%q" else value)
        else:
            out.append(part)
    return "".join(out)


def _call(name: str, args: Sequence[Any]) -> Any:
    """A template function on known values (UNKNOWN when one is needed and unknown, or not modelled)."""
    if name == "not":
        truth = _truthy(args[0]) if len(args) == 1 else None
        return UNKNOWN if truth is None else not truth
    if name in ("eq", "ne") and len(args) >= 2:
        if any(_unknown(a) for a in args):
            return UNKNOWN
        same = any(args[0] == other for other in args[1:])
        return same if name == "eq" else not same
    if name in ("lt", "le", "gt", "ge") and len(args) == 2:
        return _compare(name, args[0], args[1])
    if name == "empty" and len(args) == 1:
        truth = _truthy(args[0])
        return UNKNOWN if truth is None else not truth
    if name == "dict":
        if len(args) % 2 or any(not isinstance(k, str) for k in args[::2]):
            return UNKNOWN
        return dict(zip(args[::2], args[1::2], strict=True))
    if name == "ternary" and len(args) == 3:
        truth = _truthy(args[2])
        return UNKNOWN if truth is None else args[0] if truth else args[1]
    if name in ("int", "atoi", "int64") and len(args) == 1:
        number = _number(args[0])
        return UNKNOWN if number is None else number
    if name == "printf" and args and isinstance(args[0], str):
        return _printf(args[0], args[1:])
    texts = [_text(a) for a in args]
    if any(t is UNKNOWN for t in texts):
        return UNKNOWN
    if name in ("print", "toString"):
        return "".join(texts) if name == "toString" or len(texts) < 2 else " ".join(texts)
    one: dict[str, Callable[[str], Any]] = {"trim": str.strip, "lower": str.lower, "upper": str.upper,
                                              "quote": lambda t: f'"{t}"', "squote": lambda t: f"'{t}'"}
    two: dict[str, Callable[[str, str], Any]] = {
        "trimSuffix": lambda a, t: t.removesuffix(a), "trimPrefix": lambda a, t: t.removeprefix(a),
        "trimAll": lambda a, t: t.strip(a), "contains": lambda a, t: a in t,
        "hasPrefix": lambda a, t: t.startswith(a), "hasSuffix": lambda a, t: t.endswith(a),
    }
    if name in one and len(texts) == 1:
        return one[name](texts[0])
    if name in two and len(texts) == 2:
        return two[name](texts[0], texts[1])
    if name == "replace" and len(texts) == 3:
        return texts[2].replace(texts[0], texts[1])
    if (name in ("regexMatch", "regexFind") and len(texts) == 2 and len(texts[1]) <= _MAX_REGEX_SUBJECT
            and _bounded_regex(texts[0])):
        try:
            found = re.search(texts[0], texts[1])
        except (re.error, RecursionError):
            return UNKNOWN
        return found is not None if name == "regexMatch" else found.group(0) if found else ""
    return UNKNOWN


_QUANTIFIED_GROUP = re.compile(r"\)[*+{]")
_MAX_REGEX = 256
_MAX_QUANTIFIERS = 3


def _bounded_regex(pattern: str) -> bool:
    """Whether Python's backtracking engine runs `pattern` on a short subject in bounded time, as Go's RE2 runs any
    pattern: no quantified group (`(a|a)*`, `(a+)+` take exponential time), at most three `*` or `+` (each adds a
    power of the subject's length) and a short pattern. Other patterns are not run: can't tell."""
    return (len(pattern) <= _MAX_REGEX and not _QUANTIFIED_GROUP.search(pattern)
            and pattern.count("*") + pattern.count("+") <= _MAX_QUANTIFIERS)


def _values_read(expr: Expr) -> bool:
    """Whether an expression reads `.Values` (directly, through `$`, a context map or a parenthesised base)."""
    if isinstance(expr, Ref):
        return "Values" in expr.path
    if isinstance(expr, Chain):
        return _values_read(expr.base)
    if isinstance(expr, Call) and expr.name not in ("include", "tpl"):
        return any(_values_read(a) for a in expr.args)
    return False


def _values_path(expr: Expr, dot: Any) -> str | None:
    """The dotted path in the values that `.Values.a.b` (or `$.Values.a.b`) reads, where `.` is the root context."""
    if not isinstance(expr, Ref) or len(expr.path) < 2 or expr.path[0] != "Values":
        return None
    if expr.root != "$" and not (expr.root == "." and dot is _ROOT):
        return None
    return ".".join(expr.path[1:])


def _product(lists: Sequence[Sequence[_Alt]]) -> list[tuple[_Alt, ...]] | None:
    size = 1
    for alts in lists:
        size *= len(alts)
    return list(itertools.product(*lists)) if size <= _MAX_ALTERNATIVES else None


def _merge(combo: Sequence[_Alt], value: Any) -> _Alt:
    why = tuple(dict.fromkeys(w for alt in combo for w in alt.why))
    return _Alt(value, all(alt.sure for alt in combo), why)


@dataclass
class _Mark:
    """What holds after an action: the verdict of the text that follows, why, the dot and the variables."""

    verdict: Verdict
    why: tuple[str, ...]
    dot: Any
    env: dict[str, list[_Alt]]


class _Evaluator:
    """Runs templates abstractly at one Kubernetes version."""

    def __init__(self, version: tuple[int, int, int], has: Callable[[str], bool | None],
                 defines: Mapping[str, list[_Node]]) -> None:
        self.version = "v{}.{}.{}".format(*version)
        self.major, self.minor = str(version[0]), str(version[1])
        self.has = has
        self.defines = defines
        self.decisive = False  # the expression read .Capabilities, semverCompare or an unknown helper
        self.depth = 0
        self.cache: dict[str, tuple[list[_Alt], bool]] = {}
        self.truth_position = False
        self.switches: dict[str, bool] = {}  # `.Values` switches set while a chain of conditions is tried
        self.seen_switches: set[str] = set()
        self.values: Mapping[str, Any] | None = None  # the values the file at hand renders with, when known
        self.use_values = False  # while a condition is evaluated a second time, with those values
        self.values_read: dict[str, Any] = {}

    # -- expressions

    def field(self, value: Any, name: str) -> Any:
        if name == "Capabilities":  # even on an unknown dot, the template asks about the cluster
            self.decisive = True
        if value is _ROOT:
            return _CAPS if name == "Capabilities" else _SETTING if name == "Values" else UNKNOWN
        if value is _SETTING:
            return _SETTING
        if value is _CAPS:
            return {"KubeVersion": _KUBE, "APIVersions": _APIS}.get(name, UNKNOWN)
        if value is _KUBE:
            return {"Version": self.version, "GitVersion": self.version, "Major": self.major,
                    "Minor": self.minor}.get(name, UNKNOWN)
        if isinstance(value, dict):
            return value.get(name)
        return UNKNOWN

    def path(self, alts: Sequence[_Alt], path: Sequence[str]) -> list[_Alt]:
        out = []
        for alt in alts:
            value = alt.value
            for name in path:
                value = self.field(value, name)
            out.append(_Alt(self.version if value is _KUBE else value, alt.sure, alt.why))
        return out

    def eval(self, expr: Expr, dot: Any, env: Mapping[str, list[_Alt]]) -> list[_Alt]:
        """The possible values of an expression. In a truth position (a condition, or under and/or/not) a
        value read from `.Values` is a switch: its value in `self.switches`, else unknown (and noted)."""
        if isinstance(expr, Ref | Chain) and self.truth_position and _values_read(expr):
            key = _show(expr)
            if key in self.switches:
                return [_Alt(self.switches[key])]
            path = _values_path(expr, dot)
            if self.use_values and self.values is not None and path is not None:
                value = lookup_value(self.values, path)
                self.values_read[path] = value
                return [_Alt(go_truthy(value))]
            self.seen_switches.add(key)
        outer = self.truth_position
        if isinstance(expr, Call) and expr.name not in ("and", "or", "not"):
            self.truth_position = False
        try:
            return self.value(expr, dot, env)
        finally:
            self.truth_position = outer

    def value(self, expr: Expr, dot: Any, env: Mapping[str, list[_Alt]]) -> list[_Alt]:
        if isinstance(expr, Lit):
            return [_Alt(expr.value)]
        if isinstance(expr, Ref):
            base = [_Alt(dot)] if expr.root == "." else env.get(expr.root, [_Alt(UNKNOWN)])
            if any(alt.capabilities for alt in base):
                self.decisive = True
            return self.path(base, expr.path)
        if isinstance(expr, Chain):
            return self.path(self.eval(expr.base, dot, env), expr.path)
        if expr.name == "<method>":
            return self.method(expr, dot, env)
        if expr.name == "include" and expr.args:
            return self.include(expr.args[0], expr.args[1] if len(expr.args) > 1 else None, dot, env)
        if expr.name in ("default", "coalesce"):
            return self.default(expr, dot, env)
        args = [self.eval(arg, dot, env) for arg in expr.args]
        if expr.name == "semverCompare":
            self.decisive = True
        combos = _product(args)
        if combos is None:
            return [_Alt(UNKNOWN, False)]
        if expr.name in ("and", "or"):
            return [_merge(combo, self.logic(expr.name, [a.value for a in combo])) for combo in combos]
        if expr.name == "semverCompare":
            chosen = [combo for combo in combos if combo[-1].value is not _SETTING] or combos
            unset = f"{_show(expr.args[-1])}: a version set in values assumed unset"
            note = (unset,) if len(chosen) < len(combos) else ()
            return [_Alt(alt.value, alt.sure, (*alt.why, *note)) for alt in
                    (_merge(combo, self.semver_compare([a.value for a in combo])) for combo in chosen)]
        if expr.name == "ternary" and len(args) == 3:  # an unknown switch: either value
            return [_merge(combo, choice) for combo in combos
                    for choice in ((combo[0].value, combo[1].value) if _truthy(combo[2].value) is None
                                   else (combo[0].value if _truthy(combo[2].value) else combo[1].value,))]
        return [_merge(combo, _call(expr.name, [a.value for a in combo])) for combo in combos]

    @staticmethod
    def logic(name: str, values: Sequence[Any]) -> Any:
        """`and` returns its first false argument (else the last), `or` its first true one; with unknown
        arguments only the truth can be known."""
        stop = name == "or"
        unknown = False
        for value in values:
            truth = _truthy(value)
            if truth is None:
                unknown = True
            elif truth is stop:
                return stop if unknown else value
        return UNKNOWN if unknown or not values else values[-1]

    def semver_compare(self, values: Sequence[Any]) -> Any:
        if len(values) != 2 or not all(isinstance(v, str) for v in values):
            return UNKNOWN
        try:
            return satisfies(values[0], values[1])
        except ValueError:
            return UNKNOWN

    def method(self, expr: Call, dot: Any, env: Mapping[str, list[_Alt]]) -> list[_Alt]:
        head = expr.args[0]
        if isinstance(head, Ref | Chain) and head.path and head.path[-1] == "Has" and len(expr.args) == 2:
            holder = (self.eval(Ref(head.root, head.path[:-1]), dot, env) if isinstance(head, Ref)
                      else self.path(self.eval(head.base, dot, env), head.path[:-1]))
            names = self.eval(expr.args[1], dot, env)
            combos = _product([holder, names])
            if combos is None:
                return [_Alt(UNKNOWN, False)]
            out = []
            for apis, name in combos:
                answer = self.has(name.value) if apis.value is _APIS and isinstance(name.value, str) else None
                out.append(_merge((apis, name), UNKNOWN if answer is None else answer))
            return out
        return [_Alt(UNKNOWN)]

    def default(self, expr: Call, dot: Any, env: Mapping[str, list[_Alt]]) -> list[_Alt]:
        """`default D X` / `X | default D` and `coalesce`. A value read from `.Values` in front of a fallback
        that reads `.Capabilities` (a chart's override of the Kubernetes version) is taken as unset; that
        assumption is part of the answer."""
        args = list(expr.args)
        if expr.name == "default" and len(args) == 2:
            args = [args[1], args[0]]  # the given value first, then the default
        evaluated: list[tuple[Expr, list[_Alt], bool]] = []
        for arg in args:
            outer, self.decisive = self.decisive, False
            evaluated.append((arg, self.eval(arg, dot, env), self.decisive))
            self.decisive = outer or self.decisive
        assumed: list[str] = []
        for number, (arg, alts, _) in enumerate(evaluated):
            truth = _truth(alts)
            if (truth is None and any(d for _, _, d in evaluated[number + 1:]) and _values_read(arg)
                    and all(_unknown(a.value) for a in alts)):
                assumed.append(f"{_show(arg)} assumed unset")
                continue
            if truth is False and number < len(evaluated) - 1:
                continue
            return [_Alt(a.value, a.sure, (*a.why, *assumed)) for a in alts]
        return [_Alt(None, True, tuple(assumed))]

    def include(self, name_expr: Expr, ctx_expr: Expr | None, dot: Any,
                env: Mapping[str, list[_Alt]]) -> list[_Alt]:
        names = self.eval(name_expr, dot, env)
        contexts = self.eval(ctx_expr, dot, env) if ctx_expr is not None else [_Alt(None)]
        combos = _product([names, contexts])
        if combos is None:
            return [_Alt(UNKNOWN, False)]
        out: list[_Alt] = []
        for name, ctx in combos:
            body = self.defines.get(name.value) if isinstance(name.value, str) else None
            if body is None or self.depth >= _MAX_DEPTH:
                self.decisive = True  # what an unknown helper checks is unknown
                out.append(_Alt(UNKNOWN, False))
                continue
            key = name.value if ctx.value is _ROOT and not self.switches and not self.use_values else None
            if key is not None and key in self.cache:
                alts, decisive = self.cache[key]
            else:
                outer, self.decisive = self.decisive, False
                self.depth += 1
                alts = self.run(body, ctx.value, {"$": [_Alt(ctx.value)]})
                self.depth -= 1
                decisive, self.decisive = self.decisive, outer
                if key is not None:
                    self.cache[key] = (alts, decisive)
            self.decisive = self.decisive or decisive
            out += [_merge((name, ctx, alt), alt.value) for alt in alts]
        return out if len(out) <= _MAX_ALTERNATIVES else [_Alt(UNKNOWN, False)]

    def decide(self, expr: Expr, dot: Any, env: Mapping[str, list[_Alt]]) -> tuple[Any, tuple[str, ...]]:
        """A condition: True, False, None (decisive but unknown) or _IGNORE (on values alone), and why."""
        outer, self.decisive, position, self.truth_position = self.decisive, False, self.truth_position, True
        alts = self.eval(expr, dot, env)
        decisive, self.decisive, self.truth_position = self.decisive, outer or self.decisive, position
        truth = _truth(alts)
        if not decisive:
            return (_IGNORE if truth is None else truth), ()
        why = tuple(dict.fromkeys(w for alt in alts for w in alt.why))
        text = _show(expr)
        if truth is None:
            return None, (*why, f"{text} cannot be decided statically")
        return (truth if all(a.sure for a in alts) else None), (*why, f"{text} is {'true' if truth else 'false'}")

    def with_values(self, block: _Block, dot: Any, env: Mapping[str, list[_Alt]]
                    ) -> list[tuple[Verdict, tuple[str, ...]]]:
        """The verdict of each branch of an if/else chain (then of "no branch taken") with the switches its
        conditions read set as the chart's values set them, and why."""
        decisions: list[tuple[Any, tuple[str, ...]]] = []
        for branch in block.branches:
            if branch.expr is None:
                decisions.append((True, ()))
                continue
            outer, self.values_read, self.use_values = self.values_read, {}, True
            try:
                decision, why = self.decide(branch.expr, dot, env)
                read = self.values_read
            finally:
                self.values_read, self.use_values = outer, False
            if read and decision in (True, False):
                settings = ", ".join(f"{path}: " + ("not set" if value is MISSING else show_value(value))
                                     for path, value in read.items())
                why = (*why, f"{_show(branch.expr)} is {'true' if decision else 'false'} with the chart's values "
                             f"({settings})")
            decisions.append((decision, why))
        return self.chain(block, decisions)

    # -- blocks

    def branches(self, block: _Block, dot: Any, env: dict[str, list[_Alt]]
                 ) -> Iterator[tuple[_Branch | None, Verdict, tuple[str, ...], Any]]:
        """Each branch of an if/with/range with its verdict, why and the dot inside it; then, when the block
        has no `else`, None for "no branch taken". When a condition on `.Capabilities` also reads `.Values`
        switches, the chain is tried with every setting of up to six of them: a branch some setting takes is
        taken (the chart may be rendered so), one no setting takes is not."""
        if block.keyword == "range":
            for branch in block.branches:
                for name in branch.decl:
                    env[name] = [_Alt(UNKNOWN)]
                yield branch, True, (), UNKNOWN if branch.expr is not None else dot
            return
        outer_seen, self.seen_switches = self.seen_switches, set()
        decisions: list[tuple[Any, tuple[str, ...]]] = []
        dots: list[Any] = []
        for branch in block.branches:
            if branch.expr is None:
                decisions.append((True, ()))
                dots.append(dot)
                continue
            decisions.append(self.decide(branch.expr, dot, env))
            value = self.eval(branch.expr, dot, env) if block.keyword == "with" or branch.decl else []
            dots.append((value[0].value if len(value) == 1 else UNKNOWN) if block.keyword == "with" else dot)
            for name in branch.decl:
                env[name] = value
        switches, self.seen_switches = sorted(self.seen_switches), outer_seen
        results = self.chain(block, decisions)
        if any(d is None for d, _ in decisions) and 0 < len(switches) <= _MAX_SWITCHES:
            outer = self.switches
            best: list[tuple[Verdict, tuple[str, ...]]] = [(False, ())] * len(results)
            for setting in itertools.product((True, False), repeat=len(switches)):
                self.switches = {**outer, **dict(zip(switches, setting, strict=True))}
                tried = [(True, ()) if b.expr is None else self.decide(b.expr, dot, env) for b in block.branches]
                shown = ", ".join(f"{k} {'set' if v else 'unset'}" for k, v in zip(switches, setting, strict=True))
                for number, (verdict, why) in enumerate(self.chain(block, tried)):
                    if _RANK[verdict] > _RANK[best[number][0]]:
                        best[number] = (verdict, (*why, f"with {shown}"))
            self.switches = outer
            results = best
        if self.values is not None and any(verdict is True for verdict, _ in results):
            for number, (verdict, why) in enumerate(self.with_values(block, dot, env)):
                if results[number][0] is True and verdict is False:  # the chart's values do not render it
                    results[number] = (None, (*results[number][1], *why))
        for branch, inner, (verdict, why) in zip(block.branches, dots, results, strict=False):
            yield branch, verdict, why, inner
        if block.branches[-1].expr is not None:
            yield None, *results[-1], dot

    @staticmethod
    def chain(block: _Block, decisions: Sequence[tuple[Any, tuple[str, ...]]]
              ) -> list[tuple[Verdict, tuple[str, ...]]]:
        """The verdict and why of each branch of an if/else chain, then of "no branch taken"."""
        reach: Verdict = True
        reach_why: tuple[str, ...] = ()
        out: list[tuple[Verdict, tuple[str, ...]]] = []
        for branch, (decision, why) in zip(block.branches, decisions, strict=True):
            if branch.expr is None:
                out.append((reach, reach_why))
                reach = False
            elif reach is False:
                out.append((False, reach_why))
            elif decision is _IGNORE:
                out.append((reach, reach_why))
            elif decision is True:
                out.append((reach, (*reach_why, *why)))
                reach = False
            elif decision is False:
                out.append((False, (*reach_why, *why)))
                reach_why = (*reach_why, *why)
            else:
                reach, reach_why = None, (*reach_why, *why)
                out.append((None, reach_why))
        out.append((reach, reach_why))
        return out

    def run(self, nodes: Sequence[_Node], dot: Any, env: dict[str, list[_Alt]]) -> list[_Alt]:
        """The possible outputs of a helper body."""
        outs = [_Alt("")]
        for node in nodes:
            if isinstance(node, _Text):
                pieces = [_Alt(node.text)]
            elif isinstance(node, _Act):
                printed = self.act(node, dot, env)
                if printed is None:
                    continue
                pieces = printed
            elif node.keyword == "range":
                pieces = [_Alt(UNKNOWN)]
            else:
                pieces = []
                for branch, verdict, why, inner in self.branches(node, dot, env):
                    if verdict is False:
                        continue
                    for alt in self.run(branch.body, inner, env) if branch is not None else [_Alt("")]:
                        pieces.append(_Alt(alt.value, alt.sure and verdict is True, (*why, *alt.why)))
                if not pieces:
                    pieces = [_Alt("")]
            combos = _product([outs, pieces])
            if combos is None:
                return [_Alt(UNKNOWN, False)]
            outs = []
            for before, piece in combos:
                if {before.value, piece.value} == {"", _SETTING}:
                    value = _SETTING  # a helper that prints a setting, such as a version override
                else:
                    text = _text(before.value), _text(piece.value)
                    value = UNKNOWN if UNKNOWN in text else text[0] + text[1]
                outs.append(_merge((before, piece), value))
        return outs

    def act(self, node: _Act, dot: Any, env: dict[str, list[_Alt]]) -> list[_Alt] | None:
        """What an action prints (None for an assignment or a control word)."""
        parsed = node.parsed
        if parsed is None:
            return [_Alt(UNKNOWN)]
        if parsed.keyword == "template":
            return self.include(Lit(parsed.name), parsed.expr, dot, env)
        if parsed.keyword != "" or parsed.expr is None:
            return None
        outer, self.decisive = self.decisive, False
        value = self.eval(parsed.expr, dot, env)
        decisive, self.decisive = self.decisive, outer or self.decisive
        if parsed.decl:
            for name in parsed.decl:
                env[name] = [replace(alt, capabilities=True) for alt in value] if decisive else value
            return None
        return value

    def walk(self, nodes: Sequence[_Node], mark: _Mark, marks: dict[int, _Mark]) -> None:
        """Record what holds after each action of a template, from the verdict and why of its branches."""
        for node in nodes:
            if isinstance(node, _Text):
                continue
            if isinstance(node, _Act):
                if node.parsed is not None and node.parsed.decl:  # only assignments matter here
                    self.act(node, mark.dot, mark.env)
                marks[node.index] = _Mark(mark.verdict, mark.why, mark.dot, dict(mark.env))
                continue
            for branch, verdict, why, inner in self.branches(node, mark.dot, mark.env):
                if branch is None:
                    continue
                inside = _Mark(_and(mark.verdict, verdict), (*mark.why, *why), inner, mark.env)
                marks[branch.index] = _Mark(inside.verdict, inside.why, inner, dict(mark.env))
                self.walk(branch.body, inside, marks)
            marks[node.end] = _Mark(mark.verdict, mark.why, mark.dot, dict(mark.env))


def _show(expr: Expr) -> str:
    """An expression as written (method calls without the parser's marker)."""
    return render(expr).replace("<method> ", "")


def _literal(text: str) -> str:
    text = re.sub(r"\s+#.*$", "", text).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text.strip()


def _kind_line(file: _File, index: int) -> tuple[int, int] | None:
    """The line and value column of the top-level `kind` of the document holding the `apiVersion` on line
    `index`: the first one after it, else the last one before."""
    here = shape(file.skeleton[index])
    start, end = document_range(file.skeleton, index)
    before: tuple[int, int] | None = None
    for number in range(start, end):
        sh = shape(file.skeleton[number])
        if here is None or sh is None or sh.key != "kind" or (sh.indent, sh.dashes) != (here.indent, here.dashes):
            continue
        if number > index:
            return number, sh.value_col
        before = number, sh.value_col
    return before


class _Chart:
    """The template files of one chart (with its subcharts: helm shares defines among them)."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = {name: _read(text) for name, text in files.items()}
        self.trees: dict[str, tuple[list[_Node], dict[str, list[_Node]]]] = {}
        self.defines: dict[str, list[_Node]] = {}
        for name, file in self.files.items():
            top, defines, _ = _build(file.items)
            self.trees[name] = (top, defines)
            self.defines.update(defines)

    def apis(self, version: tuple[int, int, int], has: Callable[[str], bool | None],
             values: Mapping[str, Mapping[str, Any] | str] | None = None) -> Iterator[TemplateApi]:
        evaluator = _Evaluator(version, has, self.defines)
        for name, file in self.files.items():
            known = (values or {}).get(name)
            if isinstance(known, str):  # a sub-chart the values do not render: each use only may be
                yield from (replace(api, verdict=_and(api.verdict, None), why=(*api.why, known))
                            for api in self.file_apis(evaluator, name, file))
                continue
            evaluator.values = known
            evaluator.cache.clear()  # helpers ran with another file's values
            yield from self.file_apis(evaluator, name, file)

    def file_apis(self, evaluator: _Evaluator, name: str, file: _File) -> Iterator[TemplateApi]:
        """The apiVersion/kind pairs of one template file."""
        top, defines = self.trees[name]
        marks: dict[int, _Mark] = {}
        for body in (top, *defines.values()):
            evaluator.walk(body, _Mark(True, (), _ROOT, {"$": [_Alt(_ROOT)]}), marks)
        found: dict[tuple[int, str, str], TemplateApi] = {}
        for index, line in enumerate(file.skeleton):
            sh = shape(line) if "apiVersion" in line else None
            top_level = sh is not None and sh.key == "apiVersion" and sh.indent == 0  # not a scaleTargetRef
            place = _kind_line(file, index) if top_level else None
            if sh is None or place is None:
                continue
            mark = self.mark(file, marks, index, sh.key_col)
            kinds = self.values(evaluator, file, place[0], place[1], self.mark(file, marks, *place))
            for alt, kind in itertools.product(self.values(evaluator, file, index, sh.value_col, mark), kinds):
                verdict = _and(mark.verdict, True if alt.sure and kind.sure else None)
                if verdict is False or not all(isinstance(a.value, str) and _literal(a.value) for a in (alt, kind)):
                    continue
                api = TemplateApi(name, index + 1, _literal(alt.value), _literal(kind.value), verdict,
                                  tuple(dict.fromkeys((*mark.why, *alt.why))))
                key = (api.line, api.api_version, api.kind)
                if key not in found or found[key].verdict is None:
                    found[key] = api
        yield from found.values()

    @staticmethod
    def mark(file: _File, marks: Mapping[int, _Mark], index: int, column: int) -> _Mark:
        """What holds at a place of a file: the mark of the last action before it."""
        position = bisect_right(file.starts, file.line_starts[index] + column) - 1
        while position >= 0 and position not in marks:
            position -= 1
        return marks[position] if position >= 0 else _Mark(True, (), _ROOT, {"$": [_Alt(_ROOT)]})

    @staticmethod
    def values(evaluator: _Evaluator, file: _File, index: int, column: int, mark: _Mark) -> list[_Alt]:
        """The values the `apiVersion:` or `kind:` on line `index` may take, from its literal text or its
        actions."""
        text = file.skeleton[index][column:]
        if HOLE not in text:
            return [_Alt(_literal(file.lines[index][column:]))]
        start = file.line_starts[index] + column
        inline = [i for i, a in enumerate(file.actions) if a.line == index + 1 and file.starts[i] >= start]
        if not inline or any(file.actions[i].end_line != index + 1 for i in inline):
            return []
        items: list[_Item] = [file.lines[index][column:file.actions[inline[0]].col]]
        for i in inline:
            position = 2 * i + 1  # _read lays out text, action, text, action...
            items.append(file.items[position])
            if i != inline[-1]:
                items.append(file.items[position + 1])  # the text up to the next action
        end = file.actions[inline[-1]]
        after = file.skeleton[index][end.col:].lstrip(HOLE)
        items.append(after.lstrip() if end.trim_right else after)
        nodes, _, closed = _build(items)
        if not closed:
            return []
        outer, evaluator.decisive = evaluator.decisive, False
        alts = evaluator.run(nodes, mark.dot, dict(mark.env))
        decisive, evaluator.decisive = evaluator.decisive, outer
        if not decisive or len({a.value for a in alts}) != 1 or any(a.why for a in alts):
            return alts
        shown = file.lines[index][column:].strip()
        why = f"{shown if len(shown) <= 160 else shown[:157] + '...'} gives it at {evaluator.version}"
        return [_Alt(a.value, a.sure, (*a.why, why)) for a in alts]


def template_apis(files: Mapping[str, str], version: tuple[int, int, int], has: Callable[[str], bool | None],
                  values: Mapping[str, Mapping[str, Any] | str] | None = None) -> Iterator[TemplateApi]:
    """The apiVersion/kind pairs the template files of one chart (file name → text) emit at a Kubernetes
    version; `has(\"group/version\" or \"group/version/Kind\")` answers `.Capabilities.APIVersions.Has`.
    `values` gives, by file, the values it renders with (a condition the cluster does not decide but they do makes
    what it hides a use that only may happen), or why the file does not render with them."""
    return _Chart(files).apis(version, has, values)
