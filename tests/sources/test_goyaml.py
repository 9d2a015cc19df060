"""goyaml: YAML scalars and keys as Kubernetes reads them (go-yaml v2's `resolve`, sigs.k8s.io/yaml's JSON
conversion), so that a document Kubernetes accepts is never refused and reads the same; and the object reader built on
it: a CRD whose enum holds a plain `=` (as Go's YAML writer leaves it) no longer takes its List with it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor.model import Problem
from argo_doctor.sources import goyaml
from argo_doctor.sources.goyaml import GoLoader
from argo_doctor.sources.objects import read_object_file


@pytest.mark.parametrize(("text", "value"), [
    # booleans: go-yaml v2's resolve table has y/n beside yes/no/on/off (YAML 1.1); `tRUE` is no boolean
    ("y", True), ("Y", True), ("yes", True), ("YES", True), ("on", True), ("True", True),
    ("n", False), ("NO", False), ("off", False), ("Off", False), ("FALSE", False), ("tRUE", "tRUE"), ("yES", "yES"),
    # null
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("nuLL", "nuLL"),
    # integers: ParseInt with base 0, underscores removed first; octal with a leading zero; uint64 past int64
    ("0", 0), ("12", 12), ("+12", 12), ("-12", -12), ("1_000", 1000), ("0755", 493), ("0o17", 15), ("0x1F", 31),
    ("-0x1F", -31), ("0x_1F", 31), ("0b101", 5), ("-0b101", -5), ("9223372036854775807", 9223372036854775807),
    ("9223372036854775808", 9223372036854775808), ("18446744073709551615", 18446744073709551615),
    # floats: the YAML 1.2 form once ParseInt failed (`08` is not octal), or a leading dot
    ("08", 8.0), ("09.5", 9.5), ("1e3", 1000.0), ("1.", 1.0), ("-1.5E3", -1500.0), ("+.5", 0.5), (".5", 0.5),
    (".5e3", 500.0), ("18446744073709551616", 18446744073709551616.0), ("-9223372036854775809", -9223372036854775809.0),
    # strings: what ParseFloat fails on (out of range too), timestamps, sexagesimal, YAML 1.1's value key
    ("1e400", "1e400"), (".1e999", ".1e999"), ("12e", "12e"), ("1:30", "1:30"), ("190:20:30.5", "190:20:30.5"),
    ("2026-01-01", "2026-01-01"), ("2026-11-20T14:27:29Z", "2026-11-20T14:27:29Z"), ("=", "="), ("+", "+"),
    (".x", ".x"), ("0x", "0x"), ("1.2.3", "1.2.3"), ("0.1.2", "0.1.2"),
])
def test_plain_scalars(text: str, value: Any) -> None:
    got = goyaml.load(f"k: {text}\n")["k"]
    assert got == value and type(got) is type(value)
    assert GoLoader(f"k: {text}\n").get_single_data()["k"] == value


@pytest.mark.parametrize(("text", "value"), [(".inf", math.inf), ("+.Inf", math.inf), ("-.INF", -math.inf)])
def test_infinities(text: str, value: float) -> None:
    assert goyaml.load(f"k: {text}") == {"k": value}
    assert math.isnan(goyaml.load("k: .NaN")["k"]) and goyaml.load("k: .Nan") == {"k": ".Nan"}


def test_quoted_scalars_are_strings() -> None:
    assert goyaml.load("a: 'y'\nb: \"0755\"\nc: '='\n") == {"a": "y", "b": "0755", "c": "="}


def test_keys_become_strings_as_sigs_yaml_makes_them() -> None:
    """`y` is true; `1`, `1.0` and `true` are three keys in Kubernetes, one in a Python dict."""
    doc = goyaml.load("y: a\n1: b\n1.0: c\n1.5: d\n1e6: e\n0.00001: f\nname: g\n")
    assert doc == {"true": "a", "1": "b", "1.5": "d", "1e+06": "e", "1e-05": "f", "name": "g"} | {"1": "c"}
    with pytest.raises(yaml.YAMLError, match="null mapping key"):
        goyaml.load("~: x\n")


def test_explicit_tags() -> None:
    assert goyaml.load('a: !!int "12"\nb: !!float "3"\nc: !!bool "y"\nd: !!timestamp 2001-12-14\ne: !!str 12\n') == {
        "a": 12, "b": 3.0, "c": True, "d": "2001-12-14", "e": "12"}
    for bad in ('a: !!int "x"', 'a: !!bool "maybe"', 'a: !!float "y"'):
        with pytest.raises(yaml.YAMLError):
            goyaml.load(bad)


def test_merge_keys_and_pyyaml_left_alone() -> None:
    assert goyaml.load("base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  b: 3\n  n: 4\n") == {
        "base": {"a": 1, "b": 2}, "x": {"a": 1, "b": 3, "false": 4}}  # `n` is false, as a key too
    assert yaml.safe_load("k: y\nd: 2026-01-01") != {"k": True, "d": "2026-01-01"}  # PyYAML's own resolver unchanged


def test_a_setting_nested_too_deeply_is_a_recursion_error_not_a_crash() -> None:
    with pytest.raises(RecursionError):
        goyaml.load("k: " + "[" * 20000 + "]" * 20000)


CRDS = """\
apiVersion: v1
kind: List
items:
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata:
    name: alertmanagerconfigs.monitoring.coreos.com
  spec:
    group: monitoring.coreos.com
    names: {kind: AlertmanagerConfig, plural: alertmanagerconfigs}
    scope: Namespaced
    versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                route:
                  type: object
                  properties:
                    matchers:
                      type: array
                      items:
                        type: object
                        properties:
                          matchType:
                            description: Match operation available with AlertManager >= v0.22.0.
                            enum:
                            - '!='
                            - =
                            - =~
                            - '!~'
                            type: string
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata:
    name: podmonitors.monitoring.coreos.com
  spec:
    group: monitoring.coreos.com
    names: {kind: PodMonitor, plural: podmonitors}
    scope: Namespaced
    versions:
    - name: v1
      served: true
      storage: true
"""


@pytest.mark.parametrize("fast", [True, False])
def test_a_crd_with_a_plain_equals_sign_in_an_enum_loads_with_its_list(
    tmp_path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prometheus-operator's CRDs (kube-prometheus-stack) as Go's YAML writes them; the fast path and PyYAML alike."""
    if not fast:
        from argo_doctor.sources import fast_yaml

        monkeypatch.setattr(fast_yaml, "file_supported", lambda data: False)
    path = tmp_path / "crds.yaml"
    path.write_text(CRDS)
    problems: list[Problem] = []
    objs = list(read_object_file(path, "crds.yaml", problems))
    assert problems == []
    assert [o.data["metadata"]["name"] for o in objs] == [
        "alertmanagerconfigs.monitoring.coreos.com", "podmonitors.monitoring.coreos.com"]
    schema = objs[0].data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    matchers = schema["properties"]["spec"]["properties"]["route"]["properties"]["matchers"]
    assert matchers["items"]["properties"]["matchType"]["enum"] == ["!=", "=", "=~", "!~"]
