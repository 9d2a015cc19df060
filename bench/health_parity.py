"""Parity of argo-doctor's health checks with Argo CD's own test data.

Not part of the test suite: it reads upstream exports given on the command line.

    git --git-dir=ARGO_CD archive v3.5.1 resource_customizations | tar -x -C /tmp/x
    git --git-dir=ARGO_CD archive v3.5.1 gitops-engine/pkg/health | tar -x -C /tmp/x
    .venv/bin/python bench/health_parity.py --customizations /tmp/x/resource_customizations \\
        --gitops-engine /tmp/x/gitops-engine/pkg/health [--all]

--customizations: every health_test.yaml case of a kind with a native check (argoproj.io, the
CRD) goes through it (HealthAssessor without scripts). With --all, every case of every kind
also goes through the scripts themselves (HealthAssessor with LuaHealthScripts.from_dir of the
export), and malformed variants of the natively checked cases go through both, which must
agree. Deleted objects are not run: Argo CD shows them as Pending deletion before any check.

--gitops-engine: every testdata file named in gitops-engine's health_test.go goes through
HealthAssessor without scripts; the expected statuses are in EXPECTED_GO below.

Prints pass/fail counts and every mismatch; exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from argo_doctor.health import Health, HealthAssessor, HealthStatus, LuaHealthScripts
from argo_doctor.health.assess import BUILTIN_LUA_CHECKS, pending_deletion

EXPECTED_GO: dict[str, str | None] = {
    # gitops-engine pkg/health/health_test.go as Argo CD v3.5.1 builds it (its in-tree
    # ./gitops-engine, which go.mod's replace directive points at): file -> status, None for
    # "no health". Paths are relative to pkg/health.
    "../utils/kube/testdata/nginx.yaml": "Healthy",
    "testdata/deployment-progressing.yaml": "Progressing",
    "testdata/deployment-suspended.yaml": "Suspended",
    "testdata/deployment-degraded.yaml": "Degraded",
    "testdata/statefulset.yaml": "Healthy",
    "testdata/statefulset-ondelete.yaml": "Healthy",
    "testdata/daemonset-ondelete.yaml": "Healthy",
    "testdata/pvc-bound.yaml": "Healthy",
    "testdata/pvc-pending.yaml": "Progressing",
    "testdata/svc-clusterip.yaml": "Healthy",
    "testdata/svc-loadbalancer.yaml": "Healthy",
    "testdata/svc-loadbalancer-unassigned.yaml": "Progressing",
    "testdata/svc-loadbalancer-nonemptylist.yaml": "Healthy",
    "testdata/ingress.yaml": "Healthy",
    "testdata/ingress-unassigned.yaml": "Progressing",
    "testdata/ingress-nonemptylist.yaml": "Healthy",
    "testdata/knative-service.yaml": None,
    "testdata/job-running.yaml": "Progressing",
    "testdata/job-failed.yaml": "Degraded",
    "testdata/job-succeeded.yaml": "Healthy",
    "testdata/job-suspended.yaml": "Suspended",
    "testdata/hpa-v2-healthy.yaml": "Healthy",
    "testdata/hpa-v2-degraded.yaml": "Degraded",
    "testdata/hpa-v2-progressing.yaml": "Progressing",
    "testdata/hpa-v1-degraded.yaml": "Degraded",
    "testdata/hpa-v1-degraded-failedgetobjectmetric.yaml": "Degraded",
    "testdata/hpa-v1-healthy.yaml": "Healthy",
    "testdata/hpa-v1-healthy-toofew.yaml": "Healthy",
    "testdata/hpa-v1-progressing.yaml": "Progressing",
    "testdata/hpa-v1-progressing-with-no-annotations.yaml": "Progressing",
    "testdata/pod-pending.yaml": "Progressing",
    "testdata/pod-running-not-ready.yaml": "Progressing",
    "testdata/pod-crashloop.yaml": "Degraded",
    "testdata/pod-imagepullbackoff.yaml": "Degraded",
    "testdata/pod-error.yaml": "Degraded",
    "testdata/pod-running-restart-always.yaml": "Healthy",
    "testdata/pod-running-restart-never.yaml": "Progressing",
    "testdata/pod-running-restart-onfailure.yaml": "Progressing",
    "testdata/pod-failed.yaml": "Degraded",
    "testdata/pod-succeeded.yaml": "Healthy",
    "testdata/pod-deletion.yaml": "Progressing",
    "testdata/application-healthy.yaml": None,
    "testdata/application-degraded.yaml": None,
    "testdata/apiservice-v1-true.yaml": "Healthy",
    "testdata/apiservice-v1-false.yaml": "Progressing",
    "testdata/apiservice-v1beta1-true.yaml": "Healthy",
    "testdata/apiservice-v1beta1-false.yaml": "Progressing",
}
"""Files only in the gitops-engine repository's commit that go.mod names (97ad5b59a627), whose
v2beta1/v2beta2 HPA support Argo CD v3.5.1's in-tree copy dropped, are reported as not in the table."""

_LUA_ERROR = re.compile(r"<string>:\d+: ")

ODD_VALUES: list[Any] = [None, "", "text", 0, 2.5, True, False, [], {}, [None, 1], {"x": None}]


class _JSONLoader(yaml.SafeLoader):
    """YAML as sigs.k8s.io/yaml hands it to Argo CD: timestamps stay strings."""


_JSONLoader.add_constructor(
    "tag:yaml.org,2002:timestamp",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


def load(path: Path) -> Any:
    """The first YAML document of `path`, as JSON values."""
    with path.open(encoding="utf-8") as stream:
        return next(yaml.load_all(stream, Loader=_JSONLoader), None)


def shown(health: Health | None) -> str:
    """A verdict in one line."""
    return "no health" if health is None else f"{health.status.value} {health.message!r}"


class Tally:
    """Pass/fail counts of one measurement, and its mismatches."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.passed = 0
        self.mismatches: list[str] = []
        self.notes: list[str] = []

    def check(self, ok: bool, what: str) -> None:
        """Count one case; keep `what` when it failed."""
        if ok:
            self.passed += 1
        else:
            self.mismatches.append(what)

    def report(self) -> None:
        """Print the counts, the mismatches and the notes."""
        total = self.passed + len(self.mismatches)
        print(f"{self.title}: {self.passed}/{total} pass, {len(self.mismatches)} mismatch(es)")
        for line in self.mismatches:
            print(f"  MISMATCH {line}")
        for line in self.notes:
            print(f"  note: {line}")


def health_cases(root: Path) -> Iterator[tuple[str, str, Any, Health | None]]:
    """(group/kind, input path, object, expected) for each health_test.yaml case under `root`."""
    for test_file in sorted(root.rglob("health_test.yaml")):
        kind_dir = test_file.parent
        key = "/".join(kind_dir.relative_to(root).parts)
        for case in _get(load(test_file), "tests") or []:
            expected = _get(case, "healthStatus")
            status = _get(expected, "status")
            health = Health(HealthStatus(status), _get(expected, "message") or "") if status else None
            input_path = str(_get(case, "inputPath"))
            yield key, input_path, load(kind_dir / input_path), health


def _get(mapping: Any, key: str) -> Any:
    """`mapping[key]` with Go's case-insensitive matching of JSON field names."""
    if not isinstance(mapping, dict):
        return None
    if key in mapping:
        return mapping[key]
    return next((v for k, v in mapping.items() if str(k).lower() == key.lower()), None)


def customizations(root: Path, run_lua: bool) -> list[Tally]:
    """The native checks against the cases of their kinds; with `run_lua`, the scripts against every case."""
    native = Tally("native checks vs health_test.yaml cases of argoproj.io and the CRD")
    assessor = HealthAssessor()
    covered = {f"{group}/{kind}" for group, kind in BUILTIN_LUA_CHECKS}
    for key, path, obj, expected in health_cases(root):
        if key not in covered:
            if key.startswith("argoproj.io/"):
                native.notes.append(f"{key}: no native check, case {path} not run")
            continue
        if _deleted(obj, native, key, path):
            continue
        got = assessor.assess(obj)
        native.check(got == expected, f"{key} {path}: got {shown(got)}, want {shown(expected)}")
    tallies = [native]
    if run_lua:
        with HealthAssessor(LuaHealthScripts.from_dir(root)) as lua:
            scripts = Tally("Lua scripts (LuaHealthScripts.from_dir) vs every health_test.yaml case")
            for key, path, obj, expected in health_cases(root):
                if _deleted(obj, scripts, key, path):
                    continue
                got = lua.assess(obj)
                scripts.check(got == expected, f"{key} {path}: got {shown(got)}, want {shown(expected)}")
            scripts.notes.extend(f"{p.location}: {p.message}" for p in lua.problems[:20])
            tallies += [scripts, malformed(root, assessor, lua, covered)]
    return tallies


def _deleted(obj: Any, tally: Tally, key: str, path: str) -> bool:
    """Whether a case is a deleted object, which Argo CD shows as Pending deletion before any check
    (the upstream case runs the script alone); noted in `tally`, not run."""
    if isinstance(obj, dict) and pending_deletion(obj):
        tally.notes.append(f"{key} {path}: deleted object, Argo CD shows Pending deletion first; not run")
        return True
    return False


def variants(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Malformed copies of `obj`: odd status, phase, message, conditions and condition fields."""
    found = obj.get("status")
    status: dict[str, Any] = found if isinstance(found, dict) else {}
    conditions = status.get("conditions")
    for value in ODD_VALUES:
        yield f"status={value!r}", {**obj, "status": value}
        for field in ("phase", "message", "conditions"):
            yield f"status.{field}={value!r}", {**obj, "status": {**status, field: value}}
        if isinstance(conditions, list):
            yield f"conditions+[{value!r}]", {**obj, "status": {**status, "conditions": [value, *conditions]}}
            for i, cond in enumerate(conditions):
                if not isinstance(cond, dict):
                    continue
                for field in ("type", "status", "message", "reason"):
                    changed = copy.deepcopy(conditions)
                    changed[i] = {**cond, field: value}
                    yield f"conditions[{i}].{field}={value!r}", {**obj, "status": {**status, "conditions": changed}}


def malformed(root: Path, native: HealthAssessor, lua: HealthAssessor, covered: set[str]) -> Tally:
    """Malformed variants of the cases of the `covered` kinds: the native check must say what the script says."""
    tally = Tally("native checks vs Lua scripts on malformed variants of those cases")
    worded = skipped = 0
    for key, path, obj, _ in health_cases(root):
        if key not in covered or not isinstance(obj, dict) or pending_deletion(obj):
            continue
        for label, variant in variants(obj):
            if _null_item(variant):
                skipped += 1
                continue
            got, want = native.assess(variant), lua.assess(variant)
            if got != want and _same_failure(got, want):
                worded += 1
                got = want
            tally.check(got == want, f"{key} {path} {label}: native {shown(got)}, Lua {shown(want)}")
    if skipped:
        tally.notes.append(
            f"{skipped} variants with null array items not compared: Argo CD drops them when it hands the "
            "object to Lua (gopher-lua's append skips nil), the sandbox here keeps them as holes"
        )
    if worded:
        tally.notes.append(
            f"{worded} of the passes are script failures (Unknown) whose error text is worded by LuaJIT here "
            "and by gopher-lua (as the native checks word it) in Argo CD"
        )
    return tally


def _null_item(value: Any) -> bool:
    """Whether a list anywhere in `value` has a null item."""
    if isinstance(value, list):
        return any(item is None or _null_item(item) for item in value)
    if isinstance(value, dict):
        return any(_null_item(item) for item in value.values())
    return False


def _same_failure(native: Health | None, lua: Health | None) -> bool:
    """Both Unknown with a Lua runtime error (the sandbox's message starts with the script position)."""
    return (
        native is not None
        and lua is not None
        and native.status == lua.status == HealthStatus.UNKNOWN
        and _LUA_ERROR.match(lua.message) is not None
    )


def gitops_engine(pkg_health: Path) -> Tally:
    """The native checks against gitops-engine's testdata, by the statuses of EXPECTED_GO."""
    tally = Tally("native checks vs gitops-engine pkg/health testdata")
    assessor = HealthAssessor()
    for name, want in EXPECTED_GO.items():
        path = (pkg_health / name).resolve()
        if not path.is_file():
            tally.notes.append(f"{name}: not in the export, not run")
            continue
        health = assessor.assess(load(path))
        got = None if health is None else health.status.value
        tally.check(got == want, f"{name}: got {shown(health)}, want {want or 'no health'}")
    listed = {(pkg_health / n).resolve() for n in EXPECTED_GO}
    for extra in sorted((pkg_health / "testdata").glob("*.yaml")):
        if extra.resolve() not in listed:
            tally.notes.append(f"testdata/{extra.name}: not in the table (not a case of Argo CD v3.5.1), not run")
    return tally


def main(argv: list[str] | None = None) -> int:
    """Run the measurements asked for; 1 when any case mismatches."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--customizations", type=Path, help="a resource_customizations export")
    parser.add_argument("--gitops-engine", type=Path, help="gitops-engine's pkg/health export")
    parser.add_argument("--all", action="store_true", help="also run the Lua scripts of the export")
    args = parser.parse_args(argv)
    if args.customizations is None and args.gitops_engine is None:
        parser.error("give --customizations and/or --gitops-engine")
    tallies: list[Tally] = []
    if args.customizations is not None:
        tallies += customizations(args.customizations, args.all)
    if args.gitops_engine is not None:
        tallies.append(gitops_engine(args.gitops_engine))
    for tally in tallies:
        tally.report()
    return 1 if any(t.mismatches for t in tallies) else 0


if __name__ == "__main__":
    sys.exit(main())
