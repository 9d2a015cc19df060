"""Groups of findings of one pattern, so that a large installation's report stays readable.

A finding's pattern is its rule plus its title with the names of its objects and every number blanked
(`app-17 auto-synced 3 times without a new commit` → `… auto-synced N times without a new commit`).
When at least `GROUP_MIN` findings share a pattern they form one `Group`; the reports show the group's
count, its shared cause and its five worst findings (`WORST`), and list every member on `--expand RULE` (every
group of that rule) or `--expand GROUP-ID` (that group only).
The JSON keeps every finding and names its group. A group's id is a digest of the rule and the pattern,
so it stays the same across reruns of the same input and across inputs with the same kind of trouble.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from argo_doctor.model import Finding

GROUP_MIN = 5
"""How many findings of one pattern make a group; fewer are shown one by one."""
SHOWN = 5
"""How many of a group's findings the reports show when the group is not expanded."""
ALL = "all"
"""`--expand all`: every group listed in full."""
WORST = "most severe first, then most evidence, then most recent evidence"
"""What "worst" means, in the order `Group.findings` follows; the reports say it."""

_NUMBER = re.compile(r"(?<![\w.-])\d+(?:[.,]\d+)*(?![\w-])")
"""A number standing alone: `3 times`, `exit code 137`; not the digits of `x509`, `v1` or `30s`."""
_PLURAL = re.compile(r"\bN (\w+?)s\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_GROUP_ID = re.compile(r"(?P<rule>[\w.-]+):group:[0-9a-f]{12}")


@dataclass(frozen=True)
class Group:
    """Findings of one rule and one pattern: `findings` worst first (`WORST`), `cause` what they share beyond the
    title, in words."""

    id: str
    rule: str
    cause: str
    findings: tuple[Finding, ...]

    @property
    def worst(self) -> tuple[Finding, ...]:
        """The findings the reports show when the group is not expanded."""
        return self.findings[:SHOWN]

    @property
    def title(self) -> str:
        """The worst finding's title, its names and numbers blanked: `… auto-synced N times without a new commit`."""
        return blank(self.findings[0].title, self.findings[0])

    def expanded(self, expand: frozenset[str]) -> bool:
        """Whether `--expand` asked for every member of this group: `all`, its rule or its id."""
        return ALL in expand or self.rule in expand or self.id in expand


def unknown_expand(values: Iterable[str], rules: Iterable[str]) -> list[str]:
    """The `--expand` values that are neither `all`, nor one of `rules`, nor a group id of one of them."""
    known = set(rules)
    bad = []
    for value in values:
        match = _GROUP_ID.fullmatch(value)
        if value != ALL and value not in known and not (match and match["rule"] in known):
            bad.append(value)
    return bad


def blank(text: str, finding: Finding) -> str:
    """`text` with the names of the finding's objects (`Kind/ns/name`, `ns/name`, `name`) as `…` and every
    number that stands alone as `N`."""
    names: set[str] = set()
    for ref in finding.objects:
        names.update(n for n in (str(ref), f"{ref.namespace}/{ref.name}" if ref.namespace else "", ref.name) if n)
    for name in sorted(names, key=len, reverse=True):
        text = _blank_name(text, name)
    return _NUMBER.sub("N", text)


def _blank_name(text: str, name: str) -> str:
    """`text` with each occurrence of `name` that stands alone (not after a word character, `.` or `-`, not before
    a word character or `-`) as `…`: what `re.sub` of the name between those lookarounds does, without compiling
    a pattern for each of the thousands of names of a large installation."""
    parts: list[str] = []
    start = 0
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        before = text[at - 1] if at else ""
        after = text[end] if end < len(text) else ""
        if not (before and (_word(before) or before in ".-")) and not (after and (_word(after) or after == "-")):
            parts += (text[start:at], "…")
            start = end
            at = text.find(name, end)
        else:
            at = text.find(name, at + 1)
    return "".join((*parts, text[start:])) if parts else text


def _word(char: str) -> bool:
    """Whether `char` is what `\\w` matches in a str pattern (a letter, a digit or `_`)."""
    return char.isalnum() or char == "_"


def pattern(finding: Finding) -> str:
    """What findings of one kind share: the blanked title, with `N time`/`N times` made one."""
    return _PLURAL.sub(r"N \1", blank(finding.title, finding))


def _group_id(rule: str, key: str) -> str:
    return f"{rule}:group:{hashlib.sha256(f'{rule}|{key}'.encode()).hexdigest()[:12]}"


def _latest(finding: Finding) -> float:
    """The time of the finding's latest evidence, as a POSIX timestamp (minus infinity when none has a time)."""
    times = [item.time for item in finding.evidence if isinstance(item.time, datetime)]
    return max(times).timestamp() if times else float("-inf")


def _worst_first(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """`WORST`: most severe first, then those with the most evidence, then those whose latest evidence is the most
    recent; ties keep the report's order."""
    return tuple(sorted(findings, key=lambda f: (-f.severity, -len(f.evidence), -_latest(f))))


def _cause(findings: Sequence[Finding], title: str) -> str:
    """The sentences of the summary that every member has once blanked, without the blanked title where the first
    of them opens with it (the reports show the title already); empty when they share nothing more."""
    sentences = [_SENTENCE.split(blank(f.summary, f)) for f in findings]
    common = [s for s in dict.fromkeys(sentences[0]) if all(s in other for other in sentences[1:])]
    head = title.rstrip(".")
    if common and common[0].startswith(head):
        rest = common[0][len(head):].lstrip(" .:;,-—")
        common[0:1] = [rest] if rest else []
    return " ".join(common)


def _partition(findings: Sequence[Finding]) -> dict[tuple[str, str], list[Finding]]:
    members: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        members.setdefault((finding.rule, pattern(finding)), []).append(finding)
    return members


def group_findings(findings: Sequence[Finding]) -> tuple[list[Group], list[Finding]]:
    """The groups (in the order of their first member in `findings`) and the findings left alone, in their order."""
    groups: list[Group] = []
    grouped: set[int] = set()
    for (rule, key), members in _partition(findings).items():
        if len(members) < GROUP_MIN:
            continue
        ordered = _worst_first(members)
        groups.append(Group(_group_id(rule, key), rule, _cause(ordered, blank(ordered[0].title, ordered[0])),
                            ordered))
        grouped.update(id(f) for f in members)
    return groups, [f for f in findings if id(f) not in grouped]


def group_ids(findings: Sequence[Finding]) -> dict[str, str]:
    """Finding id → the id of its group, for the findings that are in one."""
    groups, _ = group_findings(findings)
    return {f.id: group.id for group in groups for f in group.findings}


def blocks(findings: Sequence[Finding]) -> list[Finding | Group]:
    """The report's blocks in the report's order: each ungrouped finding, and each group where its first member
    was."""
    groups, _ = group_findings(findings)
    member_of = {id(f): group for group in groups for f in group.findings}
    seen: set[str] = set()
    out: list[Finding | Group] = []
    for finding in findings:
        group = member_of.get(id(finding))
        if group is None:
            out.append(finding)
        elif group.id not in seen:
            seen.add(group.id)
            out.append(group)
    return out
