"""Split a Go template into its `{{ ... }}` actions, and a skeleton of its literal text."""

from __future__ import annotations

from dataclasses import dataclass

#: Stands for every character of an action in the skeleton (newlines are kept).
HOLE = "\x00"


@dataclass(frozen=True)
class RawAction:
    """One `{{ ... }}` action as written: its inner text without delimiters and trim markers."""

    line: int  # 1-based line of the opening `{{`
    col: int  # 0-based column of the opening `{{`
    end_line: int  # 1-based line of the closing `}}`
    text: str
    trim_left: bool
    trim_right: bool
    comment: bool


@dataclass(frozen=True)
class LexResult:
    """The actions of one file, its skeleton lines, and the first lexing error (if any)."""

    actions: tuple[RawAction, ...]
    skeleton: tuple[str, ...]  # the file's lines with every action character replaced by HOLE
    error: tuple[int, str] | None  # (line, message)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _col_of(text: str, pos: int) -> int:
    return pos - (text.rfind("\n", 0, pos) + 1)


def _scan_action_end(text: str, pos: int) -> tuple[int, str | None]:
    """Index of the `}}` closing the action whose content starts at `pos`, or (-1, error)."""
    i, n = pos, len(text)
    while i < n:
        c = text[i]
        if c == "}" and text.startswith("}}", i):
            return i, None
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n":
                    return -1, "unterminated quoted string"
                i += 1
            if i >= n:
                return -1, "unterminated quoted string"
        elif c == "`":
            j = text.find("`", i + 1)
            if j < 0:
                return -1, "unterminated raw string"
            i = j
        elif c == "'":
            i += 1
            while i < n and text[i] != "'":
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n":
                    return -1, "unterminated character constant"
                i += 1
            if i >= n:
                return -1, "unterminated character constant"
        i += 1
    return -1, "unclosed action"


def lex(text: str) -> LexResult:
    """Find every action of a template; stop at the first unclosed one and report it."""
    actions: list[RawAction] = []
    chars = list(text)
    error: tuple[int, str] | None = None
    pos = 0
    n = len(text)
    while True:
        start = text.find("{{", pos)
        if start < 0:
            break
        inner = start + 2
        trim_left = inner + 1 < n and text[inner] == "-" and text[inner + 1] in " \t\r\n"
        if trim_left:
            inner += 2
        body_start = inner
        while body_start < n and text[body_start] in " \t\r\n" and trim_left:
            body_start += 1
        comment = text.startswith("/*", inner if not trim_left else body_start)
        if comment:
            cstart = inner if not trim_left else body_start
            cend = text.find("*/", cstart + 2)
            if cend < 0:
                error = (_line_of(text, start), "unclosed comment")
                break
            after = cend + 2
            rest = text[after:]
            stripped = rest.lstrip(" \t\r\n")
            trim_right = False
            if stripped.startswith("-}}") and len(rest) > len(stripped):
                trim_right = True
                close = after + (len(rest) - len(stripped)) + 1
            elif rest.startswith("}}"):
                close = after
            else:
                error = (_line_of(text, start), "comment ends before closing delimiter")
                break
            content = text[cstart + 2 : cend]
        else:
            close, problem = _scan_action_end(text, inner)
            if close < 0:
                error = (_line_of(text, start), f"{problem or 'unclosed action'} (no matching '}}}}')")
                break
            content = text[inner:close]
            trim_right = False
            if content.endswith("-") and len(content) >= 2 and content[-2] in " \t\r\n":
                trim_right = True
                content = content[:-1]
            content = content.strip()
        end = close + 2
        actions.append(
            RawAction(
                line=_line_of(text, start),
                col=_col_of(text, start),
                end_line=_line_of(text, close),
                text=content,
                trim_left=trim_left,
                trim_right=trim_right,
                comment=comment,
            )
        )
        for k in range(start, end):
            if chars[k] != "\n":
                chars[k] = HOLE
        pos = end
    skeleton = tuple("".join(chars).split("\n"))
    return LexResult(actions=tuple(actions), skeleton=skeleton, error=error)
