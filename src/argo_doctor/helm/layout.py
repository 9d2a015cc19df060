"""Where an action sits in the YAML a template emits, judged from the indentation of the literal text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from argo_doctor.helm.lexer import HOLE

_KEY = re.compile(r"""("(?:[^"\\]|\\.)*"|'[^']*'|[^\s:#'"{\[][^:#]*?)\s*:(?=\s|$)""")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*\s*(#.*)?$")
_DOC_SEP = re.compile(r"^---(\s.*)?$")


@dataclass(frozen=True)
class LineShape:
    """The YAML structure of one literal line: indent, `- ` markers, key."""

    indent: int
    dashes: tuple[int, ...]
    key: str | None
    key_col: int
    value: str  # the text after `key:` (skeleton, holes kept)
    value_col: int


def _clean_key(key: str) -> str:
    key = re.sub(HOLE + "+", "*", key).strip()
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "\"'":
        key = key[1:-1]
    return key


def is_doc_separator(line: str) -> bool:
    """A `---` line between YAML documents."""
    return bool(_DOC_SEP.match(line))


def shape(line: str) -> LineShape | None:
    """The structure of a skeleton line, or None for lines with only actions, blanks or comments."""
    text = line.rstrip()
    body = text.replace(HOLE, "").strip()
    if not body or body.startswith("#"):
        return None
    indent = len(text) - len(text.lstrip(" "))
    pos = indent
    dashes: list[int] = []
    while pos < len(text) and text[pos] == "-" and (pos + 1 == len(text) or text[pos + 1] in " \t"):
        dashes.append(pos)
        pos += 1
        while pos < len(text) and text[pos] in " \t":
            pos += 1
    m = _KEY.match(text, pos)
    if m:
        value_col = m.end()
        return LineShape(indent, tuple(dashes), _clean_key(m.group(1)), pos, text[value_col:].strip(), value_col)
    return LineShape(indent, tuple(dashes), None, pos, text[pos:].strip(), pos)


def _target(prefix: str, col: int, nindent: int | None, indent: int | None) -> tuple[list[str], int, bool]:
    """Start of the walk: path segments on the action's own line, the node's column, and 'in a sequence'."""
    if not prefix.replace(HOLE, "").strip():
        if nindent is not None:
            return [], nindent, False
        return [], col + (indent or 0), False
    sh = shape(prefix + "x")
    if sh is None:
        return [], col, False
    path: list[str] = []
    cur = sh.indent
    seq = False
    if sh.key is not None:
        path.append(sh.key)
        cur = sh.key_col
    elif not sh.dashes:
        return [], sh.indent, False
    for d in reversed(sh.dashes):
        path.append("[]")
        cur = d
        seq = True
    return path, cur, seq


def field_path(
    skeleton: tuple[str, ...],
    line_idx: int,
    col: int,
    stop_idx: int = 0,
    nindent: int | None = None,
    indent: int | None = None,
) -> tuple[str, ...]:
    """The YAML path of the node an action at (line_idx, col) writes into, from the lines above it."""
    if line_idx >= len(skeleton):
        return ()
    prefix = skeleton[line_idx][:col]
    path, cur, seq = _target(prefix, col, nindent, indent)
    for idx in range(line_idx - 1, stop_idx - 1, -1):
        if cur == 0 and not seq:
            break
        line = skeleton[idx]
        if is_doc_separator(line):
            break
        sh = shape(line)
        if sh is None:
            continue
        if sh.key is not None and (sh.key_col < cur or (seq and sh.key_col == cur and not sh.dashes)):
            if _BLOCK_SCALAR.match(sh.value):
                path = [sh.key]
            else:
                path.append(sh.key)
            cur = sh.key_col
            seq = False
        for d in reversed(sh.dashes):
            if d < cur:
                path.append("[]")
                cur = d
                seq = True
    return tuple(reversed(path))


def document_range(skeleton: tuple[str, ...], line_idx: int) -> tuple[int, int]:
    """[start, end) line indexes of the YAML document holding line_idx."""
    start = line_idx
    while start > 0 and not is_doc_separator(skeleton[start - 1]):
        start -= 1
    end = line_idx + 1
    while end < len(skeleton) and not is_doc_separator(skeleton[end]):
        end += 1
    return start, end


def _raw_value(raw: str, sh: LineShape) -> str | None:
    value = raw[sh.value_col :].strip() if sh.value_col <= len(raw) else ""
    if not value:
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value


def resource_of(skeleton: tuple[str, ...], raw_lines: tuple[str, ...], line_idx: int) -> tuple[str | None, str | None]:
    """`kind` and `metadata.name` of the document around line_idx (literal text or the template text)."""
    start, end = document_range(skeleton, line_idx)
    kind: str | None = None
    name: str | None = None
    in_metadata = False
    child_indent: int | None = None
    for idx in range(start, min(end, len(raw_lines))):
        sh = shape(skeleton[idx])
        if sh is None:
            continue
        if sh.indent == 0 and not sh.dashes:
            in_metadata = sh.key == "metadata"
            child_indent = None
            if sh.key == "kind" and kind is None:
                kind = _raw_value(raw_lines[idx], sh)
            continue
        if in_metadata and not sh.dashes:
            if child_indent is None:
                child_indent = sh.indent
            if sh.indent == child_indent and sh.key == "name" and name is None:
                name = _raw_value(raw_lines[idx], sh)
    return kind, name
