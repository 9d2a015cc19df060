"""The fast path for YAML object files: yaml-rs (a Rust YAML 1.2 parser) reads the documents whose values it is
sure to read as Kubernetes does (`goyaml`: go-yaml v2's scalars, which PyYAML reads with GoLoader), and tells the others
apart so that PyYAML reads them.

yaml-rs resolves plain scalars with YAML 1.2 core rules (parse_datetime off), go-yaml v2 with its own. They agree on
strings, decimal integers (underscores included), floats (exponents included), hexadecimal and binary integers,
`true`/`false`/`null` in their usual spellings, `~`, `.inf` and `.nan`, `=`, timestamps (strings in both), quoted and
block scalars. They disagree on plain `y`/`n`/`yes`/`no`/`on`/`off` (booleans in go-yaml), octal-looking numbers
(`0755`), integers past uint64 (floats in go-yaml), signed `.5`, merge keys `<<`, tags, anchors and aliases, complex
keys, tabs, a BOM, NEL/LS/PS line breaks, and on duplicate keys (go-yaml keeps the last, yaml-rs refuses). `load`
looks for every plain scalar that may fall in one of those classes with byte patterns that over-approximate (a match
inside a quoted or block scalar also counts): such a document goes to PyYAML, so every value comes out as
Kubernetes reads it. yaml-rs also reads some broken YAML that libyaml refuses (a block scalar inside a flow collection,
an empty key, a collection as a key): those forms go to PyYAML too, which reports them with their line. kubectl never
writes one of those forms unquoted, so its output takes the fast path. Document boundaries are libyaml's: a `---` at
the start of a line ends a document, whatever it is in.
"""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

os.environ.setdefault("MIMALLOC_ARENA_RESERVE", "64MiB")
"""yaml-rs allocates with mimalloc, which reserves 1 GiB of address space when it loads: a process under `ulimit -v`
(RLIMIT_AS) would have little left. 64 MiB arenas cost nothing measurable."""
import yaml_rs  # noqa: E402  (after the setting above, which mimalloc reads when it loads)

_NUMBER = rb"[-+]?(?:0[0-9_oOxXbB]|[0-9][0-9_.]*[-:eE]|\.[0-9]|[0-9]{20})"
"""Numbers that may read differently: leading zeros (octal in go-yaml, decimal in 1.2), integers of 20 digits or
more (floats in go-yaml past uint64), signed or bare `.5`; dates and times, exponents and hexadecimal `0x`, which both
read alike, are included, conservatively."""
_WORD = rb"(?:[Yy]es|YES|[Nn]o|NO|[Oo]n|ON|[Oo]ff|OFF|[YyNn]|<<)(?=[ \t]*(?:[\r\n#:,\]}]|\Z))"
"""go-yaml's booleans beyond `true`/`false` and the merge key, as a whole scalar."""
_SPECIAL = rb"[!&*%@`?:]"
"""Tags, anchors, aliases, directives, reserved indicators, complex keys, empty keys."""
_BLOCK = rb"[|>]"
"""A block scalar indicator where no block scalar may start (flow context), or at the start of a line."""


def _plain(context: bytes, number: bytes, block: bool) -> re.Pattern[bytes]:
    """A risky plain scalar after `context`: a first-character lookahead (most scalars fail there), then the
    forms."""
    first = b"[-+.0-9YyNnOo<!&*%@`?:|>]"
    forms = [number, _WORD, _SPECIAL] + ([_BLOCK] if block else [])
    return re.compile(context + b"(?=" + first + b")(?:" + b"|".join(forms) + b")")


_BAD_HEADER = rb"[|>](?!(?:[1-9][-+]?|[-+][1-9]?)? *(?:#[^\n]*)?\n)"
"""A block scalar indicator not followed by a valid header to the end of its line."""
_VALUE = _plain(rb": +", _NUMBER + rb"|" + _BAD_HEADER, block=False)
"""A plain scalar after `: `: a mapping value (tabs send the whole file to PyYAML)."""
_ENTRY_VALUE = _plain(rb"- +", _NUMBER + rb"|" + _BAD_HEADER, block=False)
"""A plain scalar after `- `: a sequence entry, or the first key of its mapping."""
_KEY = _plain(rb"\n", rb"[-+]?[.0-9]", block=True)
"""A plain scalar at the start of a line (a key, or the continuation of a multi-line scalar: any number), looked for
in the document with its spaces removed, where the first character of each line follows its line break."""
_FLOW = _plain(rb"[\[{,]", _NUMBER, block=True)
"""A plain scalar in a flow collection (in the document without spaces too)."""
_FILE_UNSUPPORTED = (b"\t", b"\r")
_LINE_UNSUPPORTED = (b"...", b"%")
"""Tabs and carriage returns anywhere, and document end markers (and lines starting with dots) and directives at the
start of a line send the whole file to PyYAML; so does a BOM, which _NOT_PLAIN_TEXT finds in text that is not ASCII
(bytes.find scans for one byte at memchr speed, for the BOM's three ten times slower)."""
_NOT_PLAIN_TEXT = re.compile("[\x80-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
"""NEL, LS and PS (line breaks in YAML 1.1 only), other C1 controls, a BOM and non-characters."""
_SURROGATE_ESCAPE = re.compile(rb"\\(?:u|U0000)[dD][89a-fA-F]")
"""A `\\u` or `\\U` escape of a UTF-16 surrogate: yaml-rs joins a pair into one character, libyaml (and go-yaml, as
Kubernetes reads YAML) refuse it (over-approximated: in a block or single-quoted scalar it is plain text)."""
_CONTROL = bytes(range(0x09)) + b"\x0b\x0c" + bytes(range(0x0e, 0x20)) + b"\x7f"
_DOCUMENT_START = re.compile(rb"\n---(?=[ \t\r\n]|\Z)")
_ENTRY = re.compile(rb"( *)-(?:[ \t]+(?=[^ \t\n#])|[ \t]*(?:#[^\n]*)?(?:\n|\Z))")
"""A block sequence entry: its indentation, and whether its node starts on the same line."""
_LINE_CONTENT = re.compile(rb"[ \t]*([^ \t\r\n#])")


def file_supported(data: bytes) -> bool:
    """Whether the documents of this file may take the fast path (else the whole file goes to PyYAML)."""
    if any(marker in data for marker in _FILE_UNSUPPORTED) or any(_starts_line(data, m) for m in _LINE_UNSUPPORTED):
        return False
    if len(data.translate(None, _CONTROL)) != len(data):
        return False
    if b"\\" in data and _SURROGATE_ESCAPE.search(data):  # a backslash is found at memchr speed
        return False
    return data.isascii() or not _NOT_PLAIN_TEXT.search(data.decode("utf-8", errors="replace"))


def _starts_line(data: bytes, marker: bytes) -> bool:
    """Whether `marker` starts a line of `data` (looked for alone: a line break is too common a first byte)."""
    at = data.find(marker)
    while at > 0 and data[at - 1] != 0x0A:
        at = data.find(marker, at + 1)
    return at >= 0


def document_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) offsets of the documents of a file, split where libyaml splits them: at each `---` that starts a
    line. A span starts at its `---` (none for the first document unless the file starts with one)."""
    starts = [0, *(match.start() + 1 for match in _DOCUMENT_START.finditer(data))]
    return [(start, end) for start, end in zip(starts, [*starts[1:], len(data)], strict=True) if end > start]


class Unsupported(Exception):
    """A document that yaml-rs may read otherwise than PyYAML, or refuses: PyYAML reads it."""


def load(chunk: bytes) -> Any:
    """The value of one document by yaml-rs; Unsupported when it may hold a plain scalar that PyYAML reads
    otherwise (see the module), a collection as a mapping key (PyYAML refuses it, yaml-rs makes a tuple or frozenset
    of it), or anything yaml-rs refuses (duplicate keys included). A collection can be a key only as a flow
    collection (`? ` and aliases are among the patterns): a document with flow collections that are not all empty
    has its keys checked once parsed; an empty one (`[]`, `{}`) is a key only with a `:` right after it."""
    if _VALUE.search(chunk) or _ENTRY_VALUE.search(chunk):
        raise Unsupported
    packed = (b"\n" + chunk).translate(None, b" ")
    if _KEY.search(packed):
        raise Unsupported
    flow = _has_flow(packed)
    if flow and (_FLOW.search(packed) or _block_in_flow(chunk)):
        raise Unsupported
    if not flow and (b"]:" in packed or b"}:" in packed):
        raise Unsupported  # an empty flow collection as a key
    if b":&" in chunk or b":!" in chunk or b":*" in chunk:
        raise Unsupported  # an anchor, tag or alias right after a JSON-like key's `:` (libyaml refuses `"a":&x{`)
    if not chunk.endswith(b"\n"):
        raise Unsupported  # a file without a final line break: its last block scalar loses its own in PyYAML only
    text = chunk.rstrip()
    last = text[text.rfind(b"\n") + 1:]
    if b"|" in last or b">" in last:
        raise Unsupported  # an empty block scalar that ends the document: '' in PyYAML, '\n' in yaml-rs
    try:
        doc = yaml_rs.load(chunk, parse_datetime=False)
        if flow:  # a flow collection may be a key without `:` after it (`{[a], b}`): an exact check
            _KEY_CHECK.encode(doc)
    except (ValueError, TypeError) as exc:
        raise Unsupported from exc
    return doc


def _block_in_flow(chunk: bytes) -> bool:
    """Whether a block scalar indicator after `: ` or `- ` may stand in a flow collection (PyYAML refuses it, yaml-rs
    reads it as text): its line has a `[`, `{` or `,` before it, or the line before it (comments and blank lines
    skipped) ends with one. The indicators are found with `bytes.find`, many times faster than a regex here."""
    for indicator in (b"|", b">"):
        at = chunk.find(indicator)
        while at >= 0:
            if _after_value(chunk, at) and _in_flow(chunk, at):
                return True
            at = chunk.find(indicator, at + 1)
    return False


def _after_value(chunk: bytes, at: int) -> bool:
    """Whether the byte at `at` follows `:` or `-` and at least one space."""
    before = at
    while before > 0 and chunk[before - 1] == 0x20:
        before -= 1
    return before < at and chunk[before - 1:before] in (b":", b"-")


def _in_flow(chunk: bytes, at: int) -> bool:
    """Whether the line of `at` has a `[`, `{` or `,` before it, or the line before (comments and blank lines
    skipped) ends with one."""
    start = chunk.rfind(b"\n", 0, at) + 1
    if any(mark in chunk[start:at] for mark in (b"[", b"{", b",")):
        return True
    while start > 0:
        before = chunk.rfind(b"\n", 0, start - 1) + 1
        line = chunk[before:start - 1].strip()
        start = before
        if line and not line.startswith(b"#"):
            return line.endswith((b"[", b"{", b","))
    return False


def _has_flow(packed: bytes) -> bool:
    """Whether a document without spaces has a flow collection that is not empty (else no comma is an indicator)."""
    # `in` looks at memchr speed, several times faster than a count; most documents hold neither
    brackets = packed.count(b"[") if b"[" in packed else 0
    braces = packed.count(b"{") if b"{" in packed else 0
    return (brackets > 0 and brackets != packed.count(b"[]")) or (braces > 0 and braces != packed.count(b"{}"))


_KEY_CHECK = msgspec.json.Encoder()
"""Refuses keys that are not strings or numbers (TypeError): a tuple or a frozenset."""


def root_line(chunk: bytes) -> int:
    """The 0-based line, within the chunk, where its root node starts (libyaml's start mark): the first line with
    content, the `---` line itself when content follows the marker."""
    pos = 0
    line = 0
    if chunk.startswith(b"---"):
        pos = 3
    while pos < len(chunk):
        match = _LINE_CONTENT.match(chunk, pos)
        if match is not None:
            return line
        end = chunk.find(b"\n", pos)
        if end < 0:
            break
        pos = end + 1
        line += 1
    return line


def item_lines(chunk: bytes, doc: Any) -> list[int]:
    """The 0-based line of each entry of the top-level `items` (or `Items`) block sequence of a List document, as
    libyaml marks them; [] when there is none; Unsupported when the entries cannot be told from the text (flow
    style, nesting that hides them, a count that differs from the parsed list's)."""
    if not isinstance(doc, dict):
        return []
    key = "items" if isinstance(doc.get("items"), list) else "Items" if isinstance(doc.get("Items"), list) else None
    if key is None:
        return []
    count = len(doc[key])
    found = re.search(rb"(?:\A|\n)" + key.encode() + rb":[ \t]*(?:#[^\n]*)?\n", chunk)
    if found is None and count:
        raise Unsupported
    if found is None:
        return []
    lines = chunk.count(b"\n", 0, found.end())
    result: list[int] = []
    indent = -1
    pos = found.end()
    pending = False  # an entry whose node starts on a later line
    for raw in chunk[pos:].split(b"\n"):
        stripped = raw.lstrip(b" ")
        if not stripped or stripped.startswith(b"#"):
            lines += 1
            continue
        column = len(raw) - len(stripped)
        if pending:
            if column <= indent:
                raise Unsupported
            result.append(lines)
            pending = False
        match = _ENTRY.match(raw)
        if indent < 0:
            if match is None:
                raise Unsupported
            indent = len(match.group(1))
        if column < indent or (column == indent and match is None):
            break
        if column == indent and match is not None:
            if match.end() >= len(raw):
                pending = True
            else:
                result.append(lines)
        lines += 1
    if len(result) != count or pending:
        raise Unsupported
    return result
