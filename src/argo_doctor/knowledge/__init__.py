"""Knowledge that changes with upstream releases, as data files with a source on every row."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from functools import cache
from importlib import resources
from typing import Any

import yaml

from argo_doctor.sources.logs import LogSignature


def load_rows(name: str) -> list[dict[str, Any]]:
    """The rows of the data file `name` shipped in this package; every row must name a source."""
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    rows = yaml.load(text, Loader=yaml.CSafeLoader) or []
    for row in rows:
        if not row.get("source"):
            raise ValueError(f"knowledge/{name}: row {row!r} has no source")
    return list(rows)


@cache
def log_signatures() -> dict[str, LogSignature]:
    """Every known log signature, by id."""
    result: dict[str, LogSignature] = {}
    for row in load_rows("log_signatures.yaml"):
        pattern = row.get("pattern")
        result[row["id"]] = LogSignature(
            id=row["id"],
            needle=row["needle"].encode(),
            pattern=re.compile(pattern) if pattern else None,
            components=frozenset(row.get("components") or ()),
            source=row["source"],
        )
    return result


@dataclass(frozen=True)
class SyncErrorAdvice:
    """What a sync error message means and what to do about it."""

    id: str
    pattern: re.Pattern[str]
    explanation: str
    remediation: str
    source: str


@cache
def sync_error_advice() -> tuple[SyncErrorAdvice, ...]:
    """The known sync error messages, in file order."""
    return tuple(
        SyncErrorAdvice(
            id=row["id"],
            pattern=re.compile(row["pattern"], re.I),
            explanation=" ".join(row["explanation"].split()),
            remediation=" ".join(row["remediation"].split()),
            source=row["source"],
        )
        for row in load_rows("sync_errors.yaml")
    )


@dataclass(frozen=True)
class KnownError:
    """A known error message and what it means: `cause` groups the rows of a table (manifest errors: load,
    repository or source; analysis errors: no-data, credentials, unreachable, query, provider, job)."""

    id: str
    cause: str
    pattern: re.Pattern[str]
    explanation: str
    remediation: str
    example: str
    source: str


def _known_errors(name: str) -> tuple[KnownError, ...]:
    return tuple(
        KnownError(
            id=row["id"],
            cause=row["cause"],
            pattern=re.compile(row["pattern"], re.I),
            explanation=" ".join(row["explanation"].split()),
            remediation=" ".join(row["remediation"].split()),
            example=row["example"],
            source=row["source"],
        )
        for row in load_rows(name)
    )


@cache
def manifest_errors() -> tuple[KnownError, ...]:
    """The known manifest generation errors, in file order (the first match wins)."""
    return _known_errors("manifest_errors.yaml")


@cache
def image_updater_errors() -> tuple[KnownError, ...]:
    """Why the Image Updater could not read tags or write back (cause registry or write-back), first match wins."""
    return _known_errors("image_updater_errors.yaml")


@cache
def analysis_errors() -> tuple[KnownError, ...]:
    """Why an Argo Rollouts measurement errored (the provider's or the evaluation's message), first match wins."""
    return _known_errors("analysis_errors.yaml")


@dataclass(frozen=True)
class UpgradeChange:
    """A documented breaking or behaviour change of a release: what it is, how an installation shows it is hit
    (`detect`: a kind and its parameters), what to do, and the upgrade guide's section."""

    id: str
    product: str
    version: Version
    title: str
    breaking: bool
    detect: dict[str, Any]
    explanation: str
    remediation: str
    source: str


@cache
def upgrade_changes() -> tuple[UpgradeChange, ...]:
    """The documented changes of every release, oldest release first."""
    rows = []
    for row in load_rows("upgrades.yaml"):
        version = parse_version(str(row["version"]))
        if version is None:
            raise ValueError(f"knowledge/upgrades.yaml: {row['id']} has no version")
        rows.append(UpgradeChange(row["id"], row.get("product", "argo-cd"), version, row["title"],
                                  bool(row.get("breaking", True)), dict(row["detect"]),
                                  " ".join(row["explanation"].split()), " ".join(row["remediation"].split()),
                                  row["source"]))
    return tuple(sorted(rows, key=lambda r: r.version))


@dataclass(frozen=True)
class OperationMessage:
    """A message Argo CD writes while a sync operation runs: what it waits on (`waits`: completion, health,
    deletion, confirmation) and the pattern whose groups name the object (group, kind, name, more)."""

    id: str
    pattern: re.Pattern[str]
    waits: str
    source: str


@cache
def operation_messages() -> tuple[OperationMessage, ...]:
    """The known messages of a running sync operation, in file order."""
    return tuple(OperationMessage(row["id"], re.compile(row["pattern"]), row["waits"], row["source"])
                 for row in load_rows("operation_messages.yaml"))


@dataclass(frozen=True)
class FieldWriter:
    """A manager known to write fields an Application also sets: `manager` a prefix, `subresource` and `field`
    (dotted, "" for any) narrowing it, `writer` who that is in words."""

    id: str
    manager: str
    subresource: str
    field: str
    writer: str
    source: str


@cache
def field_writers() -> tuple[FieldWriter, ...]:
    """The known writers of fields, in file order (the first that matches wins)."""
    return tuple(FieldWriter(row["id"], row["manager"], str(row.get("subresource") or ""), str(row.get("field") or ""),
                             " ".join(str(row["writer"]).split()), row["source"])
                 for row in load_rows("field_writers.yaml"))


@cache
def known_kinds() -> frozenset[tuple[str, str]]:
    """(group, kind) of every kind known without a CRD: built-in Kubernetes and the Argo projects."""
    return frozenset((str(row["group"]), kind) for row in load_rows("kinds.yaml") for kind in row["kinds"])


@cache
def lua_kinds() -> tuple[tuple[str, str, str], ...]:
    """(group, kind, since) of every kind with a health script built into Argo CD, `since` the first release that
    ships it; `*` in group or kind matches any text."""
    return tuple(
        (str(row["group"]), str(kind), str(row["since"]))
        for row in load_rows("lua_kinds.yaml")
        for kind in row["kinds"]
    )


def has_builtin_lua(group: str, kind: str, argocd_version: str | None = None) -> bool:
    """Whether Argo CD ships a health script for this kind (lua_kinds.yaml): in `argocd_version` when it is given
    and readable, else in some release."""
    installed = parse_version(argocd_version)
    for g, k, since in lua_kinds():
        if fnmatchcase(group, g) and fnmatchcase(kind, k):
            first = parse_version(since)
            if installed is None or (first is not None and first <= installed):
                return True
    return False


Version = tuple[int, int, int]
_VERSION = re.compile(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+][0-9A-Za-z.-]*)?")
_COMPARATOR = re.compile(r"(<=|>=|<|>|==|=)?\s*(\S+)")


def parse_version(text: str | None) -> Version | None:
    """`v1.7.1`, `1.7`, `v1.8.0-rc1` → (1, 7, 1), (1, 7, 0), (1, 8, 0); None for anything else (`latest`, a
    digest). Pre-release and build suffixes are ignored."""
    found = _VERSION.fullmatch(str(text or "").strip())
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0), int(found.group(3) or 0)


def in_range(version: Version, affected: str) -> bool:
    """Whether `version` is inside `affected`: comparators separated by spaces or commas, all of which must hold
    (`>=1.7.0 <1.8.0`); an empty range or `*` holds for every version. Alternatives separated by `||` hold when any
    of them does (`<2.14.15 || >=3.0.0 <3.0.10`, for a fix shipped in several release lines). ValueError for a
    malformed range."""
    alternatives = affected.split("||")
    if len(alternatives) > 1:
        if any(not alternative.strip() for alternative in alternatives):
            raise ValueError(f"malformed version range {affected!r}")
        results = [_all_hold(version, a, affected) for a in alternatives]  # every side is checked for form
        return any(results)
    return _all_hold(version, affected, affected)


def _all_hold(version: Version, comparators: str, affected: str) -> bool:
    """Whether every comparator holds; every one is parsed, so a malformed one is refused whatever the version."""
    held = True
    for part in comparators.replace(",", " ").split():
        if part == "*":
            continue
        found = _COMPARATOR.fullmatch(part)
        bound = parse_version(found.group(2)) if found else None
        if found is None or bound is None:
            raise ValueError(f"malformed version range {affected!r}")
        operator = found.group(1) or "=="
        holds = {"<": version < bound, "<=": version <= bound, ">": version > bound, ">=": version >= bound,
                 "==": version == bound, "=": version == bound}[operator]
        held = held and holds
    return held


@dataclass(frozen=True)
class KnownBug:
    """An upstream bug with a symptom a rule recognises. `confirmed` is True when the installed version is known
    and inside `affected`, False when the version is unknown (the row may or may not apply). `fixed` is the first
    release with the fix (the lowest of `fixed_in`); `fixed_in` lists the first fixed release of every release line
    the fix shipped in; `shown_by` is the rule whose finding shows the symptom, when one does."""

    id: str
    component: str
    affected: str
    symptom: str
    title: str
    issue: str
    fixed: str | None
    source: str
    confirmed: bool = True
    shown_by: str | None = None
    fixed_in: tuple[str, ...] = ()

    @property
    def number(self) -> str:
        """`#3843`: the issue number as upstream writes it."""
        return "#" + self.issue.rstrip("/").rsplit("/", 1)[-1]

    def upgrade_to(self, version: Version) -> str | None:
        """The release to upgrade to from `version`: the first fixed release above it in the same minor line, else
        the lowest fixed release above it; None while the bug is open (or every fix is older, which a version
        inside `affected` rules out)."""
        releases = [(parse_version(v) or (0, 0, 0), v) for v in self.fixed_in or (self.fixed or "",) if v]
        above = sorted(r for r in releases if r[0] > version)
        same_line = [v for parsed, v in above if parsed[:2] == version[:2]]
        return same_line[0] if same_line else (above[0][1] if above else None)


@cache
def _known_bug_rows() -> tuple[KnownBug, ...]:
    rows = []
    for row in load_rows("known_bugs.yaml"):
        fixed = str(row["fixed"]) if row.get("fixed") else None
        fixed_in = tuple(str(v) for v in row.get("fixed_in") or ([fixed] if fixed else []))
        bug = KnownBug(id=str(row["id"]), component=str(row["component"]), affected=str(row.get("affected") or ""),
                       symptom=str(row["symptom"]), title=str(row.get("title") or ""), issue=str(row["issue"]),
                       fixed=fixed, source=str(row["source"]), shown_by=str(row["shown_by"]) if row.get("shown_by")
                       else None, fixed_in=fixed_in)
        in_range((0, 0, 0), bug.affected)  # refuse a malformed range when the file is read, not when a rule asks
        if any(parse_version(v) is None for v in fixed_in) or (fixed is not None and fixed not in fixed_in):
            raise ValueError(f"knowledge/known_bugs.yaml: row {bug.id}: fixed {fixed!r} must be one of the "
                             f"versions of fixed_in {list(fixed_in)!r}")
        rows.append(bug)
    return tuple(rows)


def known_bugs(component: str, symptom: str, version: str | None) -> list[KnownBug]:
    """The upstream bugs of `component` with `symptom` that affect `version`, in file order. When the version is
    unknown (None, `latest`, a digest), every row of that component and symptom, with `confirmed=False`."""
    parsed = parse_version(version)
    rows = [b for b in _known_bug_rows() if b.component == component and b.symptom == symptom]
    if parsed is None:
        return [replace(b, confirmed=False) for b in rows]
    return [b for b in rows if in_range(parsed, b.affected)]


def bugs_of(component: str) -> list[KnownBug]:
    """Every known upstream bug of `component`, whatever the version, in file order."""
    return [b for b in _known_bug_rows() if b.component == component]


def bugs_affecting(component: str, version: str | None) -> list[KnownBug]:
    """Every upstream bug of `component` (`argo-cd`, `argo-rollouts`, `argocd-image-updater`), whatever its symptom,
    whose affected range holds `version`, in file order; none when the version is unknown."""
    parsed = parse_version(version)
    if parsed is None:
        return []
    return [b for b in _known_bug_rows() if b.component == component and in_range(parsed, b.affected)]


@dataclass(frozen=True, eq=False)
class ShippedRole:
    """A Role or ClusterRole as an Argo project's manifests ship it; its rules are the union over the release lines
    listed in the entry's source. A ClusterRole's rules are granted cluster-wide, a Role's in the install
    namespace."""

    kind: str
    name: str
    rules: tuple[dict[str, Any], ...]


@dataclass(frozen=True, eq=False)
class OptIn:
    """A rule the project's documentation tells operators to add for a feature."""

    rule: dict[str, Any]
    why: str


@dataclass(frozen=True, eq=False)
class Shipped:
    """What an Argo component's ServiceAccount is granted by its project's installation manifests."""

    product: str
    components: tuple[str, ...]
    """Component ids (knowledge/components.yaml) whose ServiceAccount this is."""
    service_accounts: tuple[str, ...]
    """The ServiceAccount names of the manifests and of the Helm charts."""
    roles: tuple[ShippedRole, ...]
    source: str
    restrict: str
    docs: tuple[str, ...]
    versions: str = "*"
    opt_ins: tuple[OptIn, ...] = ()
    charts: tuple[str, ...] = ()
    """The Helm charts (their names, as the `helm.sh/chart` label gives them before the version) whose roles the row
    is; empty for the project's own manifests, whose roles any installation may hold."""


_POLICY_RULE_KEYS = ("apiGroups", "resources", "nonResourceURLs", "verbs", "resourceNames")


def _policy_rule(value: Any, where: str) -> dict[str, Any]:
    """A PolicyRule of knowledge/rbac_defaults.yaml, checked, with its keys in the order the manifests write them."""
    rule = value if isinstance(value, dict) else {}
    unknown = set(rule) - set(_POLICY_RULE_KEYS)
    lists_of_text = all(isinstance(v, list) and v and all(isinstance(x, str) for x in v) for v in rule.values())
    by_url = "nonResourceURLs" in rule
    shape = ({"nonResourceURLs", "verbs"} == set(rule)) if by_url else {"apiGroups", "resources", "verbs"} <= set(rule)
    if not rule or unknown or not lists_of_text or not shape:
        raise ValueError(f"knowledge/rbac_defaults.yaml: {where}: malformed rule {value!r}")
    return {key: list(rule[key]) for key in _POLICY_RULE_KEYS if key in rule}


@cache
def shipped_rbac() -> tuple[Shipped, ...]:
    """The roles every Argo project's installation manifests give each component's ServiceAccount, in file order."""
    entries = []
    for row in load_rows("rbac_defaults.yaml"):
        where = f"{row['product']} {list(row['service_accounts'])}"
        roles = []
        for role in row["roles"]:
            if role["kind"] not in ("Role", "ClusterRole") or not role.get("rules"):
                raise ValueError(f"knowledge/rbac_defaults.yaml: {where}: malformed role {role!r}")
            roles.append(ShippedRole(kind=str(role["kind"]), name=str(role["name"]),
                                     rules=tuple(_policy_rule(r, where) for r in role["rules"])))
        entry = Shipped(
            product=str(row["product"]), components=tuple(str(c) for c in row["components"]),
            service_accounts=tuple(str(s) for s in row["service_accounts"]), roles=tuple(roles),
            source=str(row["source"]), restrict=str(row["restrict"]), docs=tuple(str(d) for d in row["docs"]),
            versions=str(row.get("versions") or "*"),
            opt_ins=tuple(OptIn(rule=_policy_rule(o["rule"], where), why=str(o["why"]))
                          for o in row.get("opt_ins") or ()),
            charts=tuple(str(c) for c in row.get("charts") or ()))
        in_range((0, 0, 0), entry.versions)  # refuse a malformed range when the file is read
        entries.append(entry)
    return tuple(entries)
