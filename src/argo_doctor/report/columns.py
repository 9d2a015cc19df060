"""Plain aligned columns, as kubectl prints tables, fitted to a width when one is given.

Fitting cuts the flexible columns (messages, excerpts, locations) first, the widest first, each down to a floor;
only when the other columns alone are too wide are they cut too, in their middle (a generated name's suffix is what
tells `cart-6b5c9d8f7c-d6dpj` from its siblings). A cut cell shows "…" where text is left out; a location keeps its
file name and line. A long text can go on a line of its own under its row instead (`text_columns`), and prose lines
are wrapped, no word cut (`wrap`).
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Callable, Collection, Mapping, Sequence

from rich.cells import cell_len, set_cell_size

from argo_doctor.report import table

GAP = "   "
ELLIPSIS = "…"
INDENT = "    "
FLOOR = 10
"""The narrowest a flexible column is cut to (or its header's width, when wider) before the others are cut."""
MIN_PART = 8
"""The fewest cells a cut part of a location keeps; with less room, "…" stands for all of it."""
_NARROW = re.compile("[\u0020-\u007e\u00a0-\u02ff\u0370-\u0482\u048a-\u052f\u2010-\u2027\u2030-\u205e\u2190-\u21ff"
                     "\u2500-\u257f]*")
"""Text of only these characters takes one cell a character (Latin, Greek, Cyrillic, punctuation such as "…" and
"—", arrows, box drawing): its length is its width, found without rich's slower count."""


def _narrow(text: str) -> bool:
    return text.isascii() or _NARROW.fullmatch(text) is not None


def terminal_width(environ: Mapping[str, str], tty: bool) -> int:
    """The width to fit a table to, as `scan` fits its output (`report.table.width`): `COLUMNS`, else the
    terminal's, else PIPED_WIDTH when the output is a pipe or a file."""
    return table.width(environ, tty) or max(table.MIN_WIDTH, shutil.get_terminal_size((table.PIPED_WIDTH, 24)).columns)


def cells(text: str) -> int:
    """The terminal cells `text` takes (a CJK character takes two)."""
    return len(text) if _narrow(text) else cell_len(text)


def _head(text: str, size: int) -> str:
    """The start of `text` in at most `size` cells."""
    return text[:size] if _narrow(text) else set_cell_size(text, size).rstrip()


def _tail(text: str, size: int) -> str:
    """The end of `text` in at most `size` cells."""
    return text[len(text) - size:] if _narrow(text) else set_cell_size(text[::-1], size)[::-1].lstrip()


def cut(text: str, size: int) -> str:
    """`text` in at most `size` cells: its start and "…"."""
    if cells(text) <= size:
        return text
    return _head(text, size - 1).rstrip() + ELLIPSIS if size > 1 else ELLIPSIS[:size]


def cut_middle(text: str, size: int) -> str:
    """`text` in at most `size` cells: its start, "…" and its end."""
    if cells(text) <= size:
        return text
    if size <= 2:
        return cut(text, size)
    end = (size - 1) // 2
    return _head(text, size - 1 - end) + ELLIPSIS + _tail(text, end)


def cut_location(text: str, size: int) -> str:
    """A location (`file:line`, then maybe an object and a field path) in at most `size` cells: what follows the
    file cut first, then the file's folders, keeping its name and line; its end when even that is too long."""
    if cells(text) <= size:
        return text
    file, _, rest = text.partition(" ")
    if rest and cells(file) + 2 <= size:
        room = size - cells(file) - 1
        return f"{file} {cut(rest, room) if room >= MIN_PART else ELLIPSIS}"
    folder, _, name = file.rpartition("/")
    if folder and cells(name) + 2 <= size:
        room = size - cells(name) - 1
        return f"{cut(folder, room) if room >= MIN_PART else ELLIPSIS}/{name}"
    return ELLIPSIS + _tail(file, size - 1).lstrip() if size > 1 else ELLIPSIS[:size]


def _cap(widths: list[int], room: int) -> list[int]:
    """`widths` with the widest cut to one common cap, the largest that makes them sum to at most `room`."""
    room = max(0, room)
    if sum(widths) <= room:
        return widths
    left = len(widths)
    for width in sorted(widths):
        cap = room // left
        if width > cap:  # this column and every wider one get the cap; what it leaves over goes to the first ones
            extra = room - cap * left
            out = []
            for w in widths:
                if w > cap:
                    w, extra = cap + (extra > 0), extra - 1
                out.append(w)
            return out
        room -= width
        left -= 1
    return widths


def fit(widths: Sequence[int], width: int, flexible: Collection[int], floors: Sequence[int]) -> list[int]:
    """Column widths that sum, with the gaps, to at most `width`: the flexible columns cut first, each down to its
    floor, then every column (the widest first). Wider than `width` only when each column is one cell."""
    widths = list(widths)
    room = width - len(GAP) * (len(widths) - 1)
    flex = [i for i in range(len(widths)) if i in flexible]
    fixed = sum(widths) - sum(widths[i] for i in flex)
    low = [min(widths[i], floors[i]) for i in flex]
    if fixed + sum(low) <= room:
        shares = _cap([widths[i] - lo for i, lo in zip(flex, low, strict=True)], room - fixed - sum(low))
        for i, lo, share in zip(flex, low, shares, strict=True):
            widths[i] = lo + share
        return widths
    for i, lo in zip(flex, low, strict=True):
        widths[i] = lo
    return [max(1, w) for w in _cap(widths, room)]


def sizes(rows: Sequence[Sequence[str]], width: int, flexible: Collection[int] = (), header: bool = True) -> list[int]:
    """The width `columns` gives each column of `rows` to fit `width`."""
    natural = [max(cells(row[i]) for row in rows) for i in range(len(rows[0]))]
    return fit(natural, width, flexible, [max(FLOOR, cells(h) if header else 0) for h in rows[0]])


def columns(rows: Sequence[Sequence[str]], width: int | None = None, flexible: Collection[int] = (),
            locations: Collection[int] = (), header: bool = True) -> str:
    """Rows as left-aligned columns three spaces apart, with no trailing blanks; the first row is the header
    unless `header` is False.

    With a `width`, cells are cut (see `fit`) so that no line is wider; `flexible` are the indexes of the columns
    to cut first, `locations` those that hold locations (see `cut_location`). Without one, every cell is whole
    (`-o wide`).
    """
    if width is None:
        natural = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        return "\n".join("   ".join(c.ljust(w) for c, w in zip(row, natural, strict=True)).rstrip() for row in rows)
    natural = [max(cells(row[i]) for row in rows) for i in range(len(rows[0]))]
    widths = fit(natural, width, flexible, [max(FLOOR, cells(h) if header else 0) for h in rows[0]])
    cutters: list[Callable[[str, int], str] | None] = [
        None if size >= most else cut_location if i in locations else cut if i in flexible else cut_middle
        for i, (size, most) in enumerate(zip(widths, natural, strict=True))
    ]
    lines = []
    for row in rows:
        out = []
        for text, size, cutter in zip(row, widths, cutters, strict=True):
            if cutter is not None:
                text = cutter(text, size)
            out.append(text + " " * (size - cells(text)))
        lines.append(GAP.join(out).rstrip())
    return "\n".join(lines)


def text_columns(rows: Sequence[Sequence[str]], width: int | None, text: int, flexible: Collection[int] = (),
                 locations: Collection[int] = (), need: int = 40, header: bool = True) -> list[str]:
    """`columns` (the `text` column among the flexible ones), or, when that column would get fewer than `need`
    cells and fewer than its longest cell, the rows without it, each followed by its text (if any) on a line of its
    own, indented and cut to the width."""
    flexible = {text, *flexible}
    if width is None or sizes(rows, width, flexible, header)[text] >= min(max(cells(r[text]) for r in rows), need):
        return columns(rows, width, flexible, locations, header).split("\n")
    keep = [i for i in range(len(rows[0])) if i != text]
    heads = columns([[row[i] for i in keep] for row in rows], width, [keep.index(i) for i in flexible if i != text],
                    [keep.index(i) for i in locations if i != text], header).split("\n")
    out = []
    for head, row in zip(heads, rows, strict=True):
        out += [head, cut(INDENT + row[text], width)] if row[text] else [head]
    return out


def wrap(text: str, width: int | None, indent: str = "", hanging: str | None = None) -> list[str]:
    """A line of prose as lines of at most `width` characters, the first starting with `indent`, the others with
    `hanging` (default: `indent`); no word is cut, so a word longer than the room stands alone on its line. One
    line, whole, without a width."""
    if width is None:
        return [indent + text]
    lines = textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent if hanging is None else hanging,
                          break_long_words=False, break_on_hyphens=False)
    return lines or [indent.rstrip()]
