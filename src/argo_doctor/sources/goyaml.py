"""YAML scalars as Kubernetes reads them: sigs.k8s.io/yaml over go-yaml v2 (go.yaml.in/yaml/v2 2.4, `resolve.go`,
`decode.go`), then its conversion to JSON (sigs.k8s.io/yaml `yaml.go`, `convertToJSONableObject`), for PyYAML.

A plain scalar is resolved by its first character:
- `y Y yes Yes YES true True TRUE on On ON` are true, `n N no No NO false False FALSE off Off OFF` false; `~ null Null
  NULL` and the empty scalar null; `.inf .Inf .INF +.inf …` infinities and `.nan .NaN .NAN` not-a-number;
- one starting with `.` is a float when Go's ParseFloat reads it (`.5`, `.5e3`);
- one starting with a digit or a sign is, underscores removed, an integer as Go's ParseInt reads it with base 0
  (`0x1F`, `0o17`, `0b101`, octal `0755`, decimal), an unsigned one past int64, else a float of the YAML 1.2 form
  (`1e3`, `08`, `1.`), else a string (timestamps stay strings: go-yaml keeps them so for interface{} values);
- everything else is a string: `=` (YAML 1.1's value key, which PyYAML cannot build), `<<` only as a merge key.
Mapping keys are resolved alike, then made strings: `true`, `1`, a float in Go's shortest float32 form; a null key is
refused, as kubectl refuses it. Explicit tags (`!!int`, `!!bool`, `!!float`, `!!timestamp`) follow the same rules.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import yaml
from yaml._yaml import CParser
from yaml.composer import Composer
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner

NUMBER_TAG = "tag:argo-doctor,2026:go-number"
"""The tag this resolver gives every plain scalar that starts with a digit, a sign or a dot: the constructor
decides, as go-yaml does, what it is."""

BOOLS = {**dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
         **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False)}
NULLS = ("", "~", "null", "Null", "NULL")
SPECIAL_FLOATS = {**dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
                  **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
                  **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf)}
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_BASES = {"x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2}


def go_int(plain: str) -> int | None:
    """`strconv.ParseInt(plain, 0, 64)`, else `strconv.ParseUint(plain, 0, 64)`: None when neither reads it."""
    found = _GO_INT.fullmatch(plain)
    if found is None:
        return None
    sign, digits = found.groups()
    if len(digits) > 2 and digits[1] in _BASES:
        value = int(digits[2:], _BASES[digits[1]])
    else:
        value = int(digits, 8 if digits.startswith("0") else 10)
    if sign == "-":
        value = -value
    if -(1 << 63) <= value < 1 << 63 or (not sign and value < 1 << 64):  # ParseUint takes no sign
        return value
    return None


def go_scalar(text: str) -> Any:
    """What go-yaml v2 makes of a plain scalar that starts with a digit, a sign or a dot (`resolve`, hints D, S and
    `.`)."""
    if text in SPECIAL_FLOATS:
        return SPECIAL_FLOATS[text]
    if text.startswith("."):
        number = float(text) if _DOT_FLOAT.fullmatch(text) else math.inf
        return number if math.isfinite(number) else text
    plain = text.replace("_", "")
    integer = go_int(plain)
    if integer is not None:
        return integer
    if _YAML_FLOAT.fullmatch(plain):
        number = float(plain)
        if math.isfinite(number):  # ParseFloat fails past float64's range: the scalar stays a string
            return number
    return text


def go_key(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml makes it a JSON object's key (ConstructorError for null, as kubectl
    refuses it)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _float32_g(key)
    shown = "null" if key is None else type(key).__name__
    raise ConstructorError(None, None, f"a {shown} mapping key, which Kubernetes' YAML reader refuses")


def _float32_g(value: float) -> str:
    """`strconv.FormatFloat(value, 'g', -1, 32)` as sigs.k8s.io/yaml writes a float key: the fewest digits that read
    back as the same float32, in %e form when the exponent is below -4 or at least 6 (Go's rule for the shortest
    form); infinities and NaN as `.inf`, `-.inf`, `.nan`."""
    try:
        packed = struct.pack("<f", value)
    except OverflowError:  # past float32's range: Go's conversion gives an infinity
        packed = struct.pack("<f", math.copysign(math.inf, value))
    single = struct.unpack("<f", packed)[0]
    if not math.isfinite(single):
        return ".nan" if math.isnan(single) else ".inf" if single > 0 else "-.inf"
    text = ""
    for precision in range(9):
        text = f"{single:.{precision}e}"
        if struct.pack("<f", float(text)) == packed:
            break
    mantissa, _, exponent_text = text.partition("e")
    exponent = int(exponent_text)
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    if exponent < -4 or exponent >= 6:
        shown = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        return f"{sign}{shown}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent >= 0:
        whole, fraction = digits[:exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1:]
    else:
        whole, fraction = "0", "0" * (-exponent - 1) + digits
    return sign + whole + (f".{fraction}" if fraction else "")


class GoResolver(yaml.resolver.BaseResolver):
    """Plain scalars resolved by their first character as go-yaml v2 does (see the module)."""


GoResolver.yaml_implicit_resolvers = {}  # none of BaseResolver's: only those below
GoResolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile("^(?:" + "|".join(BOOLS) + ")$"), list("yYnNtTfFoO"))
GoResolver.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
GoResolver.add_implicit_resolver(NUMBER_TAG, re.compile(r"^[-+0-9.]"), list("-+0123456789."))
GoResolver.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])


class GoConstructor(yaml.constructor.SafeConstructor):
    """SafeConstructor with go-yaml v2's scalars and sigs.k8s.io/yaml's string keys; with `unique_keys` a key
    written twice in one mapping is refused (for argo-doctor's own settings, where the last one silently winning
    would turn `dryRun: true … dryRun: false` live)."""

    unique_keys = False

    def construct_go_number(self, node: ScalarNode) -> Any:
        """A plain scalar starting with a digit, a sign or a dot."""
        return go_scalar(str(self.construct_scalar(node)))

    def construct_yaml_bool(self, node: ScalarNode) -> bool:
        """`true`, `y`, `on`… (explicit `!!bool` too; anything else is refused, as go-yaml refuses it)."""
        value = str(self.construct_scalar(node))
        if value not in BOOLS:
            raise ConstructorError(None, None, f"cannot decode {value!r} as a !!bool", node.start_mark)
        return BOOLS[value]

    def construct_yaml_int(self, node: ScalarNode) -> int:
        """An explicit `!!int`."""
        value = go_scalar(str(self.construct_scalar(node)))
        if not isinstance(value, int):
            raise ConstructorError(None, None, f"cannot decode {node.value!r} as an !!int", node.start_mark)
        return value

    def construct_yaml_float(self, node: ScalarNode) -> float:
        """An explicit `!!float` (an integer becomes a float)."""
        value = go_scalar(str(self.construct_scalar(node)))
        if isinstance(value, str):
            raise ConstructorError(None, None, f"cannot decode {node.value!r} as a !!float", node.start_mark)
        return float(value)

    def construct_yaml_timestamp(self, node: ScalarNode) -> str:  # type: ignore[override]
        """A timestamp stays its text (go-yaml v2 keeps timestamps as strings in interface{} values)."""
        return str(self.construct_scalar(node))

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping whose keys are made strings, as sigs.k8s.io/yaml makes them, before they meet (in Python `1`,
        `1.0` and `True` are one key; `y: 1` and `true: 2` are one in Kubernetes too); a null or collection key is
        refused."""
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping node, but found {node.id}", node.start_mark)
        written = {id(key_node) for key_node, _ in node.value}
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        seen: set[str] = set()
        for key_node, value_node in node.value:
            try:
                key = go_key(self.construct_object(key_node, deep=deep))
            except ConstructorError as exc:
                raise ConstructorError("while constructing a mapping", node.start_mark, exc.problem,
                                       key_node.start_mark) from exc
            if id(key_node) in written:  # a key merged in (`<<`) may be written over once
                if self.unique_keys and key in seen:
                    raise ConstructorError("while constructing a mapping", node.start_mark,
                                           f"found duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


GoConstructor.yaml_constructors = {
    **yaml.constructor.SafeConstructor.yaml_constructors,
    NUMBER_TAG: GoConstructor.construct_go_number,
    "tag:yaml.org,2002:bool": GoConstructor.construct_yaml_bool,
    "tag:yaml.org,2002:int": GoConstructor.construct_yaml_int,
    "tag:yaml.org,2002:float": GoConstructor.construct_yaml_float,
    "tag:yaml.org,2002:timestamp": GoConstructor.construct_yaml_timestamp,
}


class GoLoader(CParser, GoConstructor, GoResolver):
    """libyaml's parser with go-yaml v2's scalars: what PyYAML reads as Kubernetes would. libyaml's composer recurses
    in C: only for text proved shallow (`sources.objects` guards it), else `load`."""

    def __init__(self, stream: str | bytes) -> None:
        CParser.__init__(self, stream)
        GoConstructor.__init__(self)
        GoResolver.__init__(self)


class _PureGoLoader(Reader, Scanner, Parser, Composer, GoConstructor, GoResolver):
    """PyYAML's pure-Python parser with go-yaml v2's scalars: nesting too deep is a RecursionError, not a crash."""

    def __init__(self, stream: str | bytes) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        GoConstructor.__init__(self)
        GoResolver.__init__(self)


def load(text: str | bytes) -> Any:
    """The one YAML document of a setting's text (a ConfigMap value, Helm values) as Kubernetes' reader, and Argo CD
    and Helm through it, give it: yaml.YAMLError when it is not YAML, RecursionError when it nests too deeply."""
    loader = _PureGoLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
