"""Parse the inside of one Go template action into a small expression tree."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias

KEYWORDS = frozenset({"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"})


@dataclass(frozen=True)
class Lit:
    """A literal: string, number, bool or nil."""

    value: str | int | float | bool | None


@dataclass(frozen=True)
class Ref:
    """`.A.B` (root "."), `$.A.B` (root "$") or `$x.A.B` (root "$x")."""

    root: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class Call:
    """A function call, pipelines folded in: `a | f b` is `Call("f", (b, a))`."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Chain:
    """Field access on a parenthesised pipeline: `(x).A.B`."""

    base: Expr
    path: tuple[str, ...]


Expr: TypeAlias = Lit | Ref | Call | Chain


@dataclass(frozen=True)
class Parsed:
    """An action: its keyword ('' for a plain pipeline), template name, declared variables, expression."""

    keyword: str  # "", if, elseif, else, elsewith, with, range, end, define, block, template, break, continue
    name: str | None = None
    decl: tuple[str, ...] = ()
    assign: bool = False  # `=` rather than `:=`
    expr: Expr | None = None


class ParseError(ValueError):
    """The action is not valid template syntax."""


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<char>'(?:[^'\\\n]|\\.)+')
  | (?P<decl>:=)
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][-+]?\d+)?i?))
  | (?P<var>\$[A-Za-z_0-9]*)
  | (?P<field>\.[A-Za-z_][A-Za-z_0-9]*)
  | (?P<dot>\.)
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punct>[()|,=])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    glued: bool  # no space before it (for `$x.A` / `(...).A` chains)


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    glued = True
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ParseError(f"unexpected {text[pos]!r} in action")
        kind = m.lastgroup or ""
        if kind == "ws":
            glued = False
        else:
            out.append(_Tok(kind, m.group(), glued))
            glued = True
        pos = m.end()
    return out


def _unquote(tok: _Tok) -> str:
    if tok.kind == "raw":
        return tok.text[1:-1]
    body = tok.text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0) -> _Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise ParseError("unexpected end of action")
        self.i += 1
        return tok

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def fields(self) -> tuple[str, ...]:
        path: list[str] = []
        while (tok := self.peek()) is not None and tok.kind == "field" and tok.glued:
            path.append(tok.text[1:])
            self.i += 1
        return tuple(path)

    def term(self) -> Expr:
        tok = self.take()
        if tok.kind in ("str", "raw"):
            return Lit(_unquote(tok))
        if tok.kind == "char":
            return Lit(tok.text)
        if tok.kind == "num":
            try:
                return Lit(int(tok.text.replace("_", ""), 0))
            except ValueError:
                return Lit(tok.text)
        if tok.kind == "dot":
            return Ref(".", ())
        if tok.kind == "field":
            return Ref(".", (tok.text[1:], *self.fields()))
        if tok.kind == "var":
            return Ref(tok.text, self.fields())
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return Lit(tok.text == "true")
            if tok.text == "nil":
                return Lit(None)
            if tok.text in KEYWORDS:
                raise ParseError(f"unexpected keyword {tok.text!r}")
            return Call(tok.text, ())
        if tok.text == "(":
            inner = self.pipeline(stop=")")
            if self.at_end() or self.take().text != ")":
                raise ParseError("unclosed '('")
            path = self.fields()
            return Chain(inner, path) if path else inner
        raise ParseError(f"unexpected {tok.text!r}")

    def command(self, stop: str | None) -> Expr:
        operands: list[Expr] = []
        while (tok := self.peek()) is not None and tok.text not in ("|", ")") and tok.text != stop:
            if tok.text in (",", "=") or tok.kind == "decl":
                raise ParseError(f"unexpected {tok.text!r}")
            operands.append(self.term())
        if not operands:
            raise ParseError("empty command")
        head = operands[0]
        if isinstance(head, Call) and not head.args:
            return Call(head.name, tuple(operands[1:]))
        if len(operands) == 1:
            return head
        return Call("<method>", tuple(operands))

    def pipeline(self, stop: str | None = None) -> Expr:
        expr = self.command(stop)
        while (tok := self.peek()) is not None and tok.text == "|":
            self.i += 1
            nxt = self.command(stop)
            expr = Call(nxt.name, (*nxt.args, expr)) if isinstance(nxt, Call) else Call("<method>", (nxt, expr))
        return expr

    def declaration(self) -> tuple[tuple[str, ...], bool]:
        """Variables declared or assigned at the start of a pipeline, and whether it is `=`."""
        first = self.peek()
        if first is None or first.kind != "var":
            return (), False
        second = self.peek(1)
        if second is not None and second.kind == "decl":
            self.i += 2
            return (first.text,), False
        if second is not None and second.text == "=":
            self.i += 2
            return (first.text,), True
        third, fourth = self.peek(2), self.peek(3)
        if (
            second is not None
            and second.text == ","
            and third is not None
            and third.kind == "var"
            and fourth is not None
            and (fourth.kind == "decl" or fourth.text == "=")
        ):
            self.i += 4
            return (first.text, third.text), fourth.text == "="
        return (), False

    def full_pipeline(self) -> tuple[tuple[str, ...], bool, Expr]:
        decl, assign = self.declaration()
        expr = self.pipeline()
        if not self.at_end():
            raise ParseError(f"unexpected {self.take().text!r}")
        return decl, assign, expr


def _name(p: _Parser, keyword: str) -> str:
    tok = p.take()
    if tok.kind not in ("str", "raw"):
        raise ParseError(f"{keyword} needs a quoted template name")
    return _unquote(tok)


def parse_action(text: str) -> Parsed:
    """Parse the inner text of an action (delimiters and trim markers already removed)."""
    toks = _tokens(text)
    if not toks:
        raise ParseError("missing value for command")
    p = _Parser(toks)
    head = toks[0]
    if head.kind == "ident" and head.text in KEYWORDS:
        p.i = 1
        kw = head.text
        if kw in ("end", "break", "continue"):
            if not p.at_end():
                raise ParseError(f"unexpected {p.take().text!r} after {kw}")
            return Parsed(kw)
        if kw == "else":
            nxt = p.peek()
            if nxt is None:
                return Parsed("else")
            if nxt.kind == "ident" and nxt.text in ("if", "with"):
                p.i += 1
                decl, assign, expr = p.full_pipeline()
                return Parsed("else" + nxt.text, decl=decl, assign=assign, expr=expr)
            raise ParseError(f"unexpected {nxt.text!r} after else")
        if kw in ("if", "with", "range"):
            decl, assign, expr = p.full_pipeline()
            return Parsed(kw, decl=decl, assign=assign, expr=expr)
        if kw == "define":
            name = _name(p, kw)
            if not p.at_end():
                raise ParseError("unexpected text after define name")
            return Parsed(kw, name=name)
        if kw in ("template", "block"):
            name = _name(p, kw)
            if p.at_end():
                if kw == "block":
                    raise ParseError("block needs a pipeline")
                return Parsed(kw, name=name)
            expr = p.pipeline()
            if not p.at_end():
                raise ParseError(f"unexpected {p.take().text!r}")
            return Parsed(kw, name=name, expr=expr)
    decl, assign, expr = p.full_pipeline()
    return Parsed("", decl=decl, assign=assign, expr=expr)


def calls(expr: Expr | None) -> list[Call]:
    """Every function call in the expression, outermost first."""
    out: list[Call] = []
    stack: list[Expr] = [expr] if expr is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, Call):
            out.append(node)
            stack.extend(reversed(node.args))
        elif isinstance(node, Chain):
            stack.append(node.base)
    return out


def render(expr: Expr) -> str:
    """A readable form of an expression (for messages)."""
    if isinstance(expr, Lit):
        if isinstance(expr.value, str):
            return '"' + expr.value.replace('"', '\\"') + '"'
        if expr.value is None:
            return "nil"
        if isinstance(expr.value, bool):
            return "true" if expr.value else "false"
        return str(expr.value)
    if isinstance(expr, Ref):
        if expr.root == ".":
            return "." + ".".join(expr.path) if expr.path else "."
        return expr.root + "".join("." + p for p in expr.path)
    if isinstance(expr, Chain):
        return f"({render(expr.base)})" + "".join("." + p for p in expr.path)
    parts = [expr.name, *(f"({render(a)})" if isinstance(a, Call) and a.args else render(a) for a in expr.args)]
    return " ".join(parts)
