"""The pieces of the Helm scan: lexer, action parser, YAML layout, switches."""

from __future__ import annotations

from pathlib import Path

import pytest

from argo_doctor.helm import scan_chart
from argo_doctor.helm.conditions import (
    AllOf,
    AnyOf,
    Cond,
    Const,
    Equals,
    Not,
    Setting,
    Truthy,
    Unknown,
    evaluate,
    reach,
    settings_text,
    ways_to_make,
)
from argo_doctor.helm.expr import Call, Chain, Lit, ParseError, Ref, parse_action
from argo_doctor.helm.layout import field_path, resource_of
from argo_doctor.helm.lexer import lex

# -- lexer --------------------------------------------------------------------------------------------


def test_lex_respects_strings_comments_and_trim_markers() -> None:
    text = 'a: {{ "}}" }}\n{{- /* x }} y */ -}}\nb: {{ `raw\n}}` }} {{- .x -}}\n'
    result = lex(text)
    assert result.error is None
    texts = [(a.line, a.text, a.trim_left, a.trim_right, a.comment) for a in result.actions]
    assert texts == [
        (1, '"}}"', False, False, False),
        (2, " x }} y ", True, True, True),
        (3, "`raw\n}}`", False, False, False),
        (4, ".x", True, True, False),
    ]
    assert result.skeleton[0].startswith("a: \x00")
    assert result.skeleton[2] == "b: " + "\x00" * 7


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("ok\n{{ .x\nmore\n", 2, "unclosed action"),
        ("{{/* never closed\n", 1, "unclosed comment"),
        ('x\ny: {{ "open }}\n', 2, "unterminated quoted string"),
        ("{{/* c */ .x }}", 1, "comment ends before closing delimiter"),
    ],
)
def test_lex_errors_name_the_line(text: str, line: int, message: str) -> None:
    error = lex(text).error
    assert error is not None and error[0] == line and error[1].startswith(message)


# -- actions ----------------------------------------------------------------------------------------------


def test_pipelines_fold_into_calls() -> None:
    parsed = parse_action("$ca.Cert | b64enc | quote")
    assert parsed.expr == Call("quote", (Call("b64enc", (Ref("$ca", ("Cert",)),)),))
    parsed = parse_action('$tls := fromYaml (include "x.certs" .)')
    assert parsed.decl == ("$tls",) and not parsed.assign
    assert parsed.expr == Call("fromYaml", (Call("include", (Lit("x.certs"), Ref(".", ()))),))
    assert parse_action("(fromYaml $y).caCert").expr == Chain(Call("fromYaml", (Ref("$y", ()),)), ("caCert",))
    assert parse_action('date "2006" now').expr == Call("date", (Lit("2006"), Call("now", ())))


def test_keywords() -> None:
    assert parse_action("else if not .Values.a").keyword == "elseif"
    assert parse_action('define "a.b"').name == "a.b"
    tpl = parse_action('template "a.b" .')
    assert (tpl.keyword, tpl.name) == ("template", "a.b")
    rng = parse_action("range $k, $v := .Values.m")
    assert (rng.keyword, rng.decl) == ("range", ("$k", "$v"))
    assert parse_action("$x = 3").assign


@pytest.mark.parametrize("text", ["(", "define x", "if", "else foo", "end 1", "a )", "$x := "])
def test_parse_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse_action(text)


# -- layout -----------------------------------------------------------------------------------------------


def _at(text: str, marker: str = "@@", **kw: int) -> tuple[str, ...]:
    lines = tuple(text.split("\n"))
    idx = next(i for i, line in enumerate(lines) if marker in line)
    return field_path(lines, idx, lines[idx].index(marker), **kw)


def test_field_paths() -> None:
    assert _at("kind: Secret\ndata:\n  password: @@\n") == ("data", "password")
    assert _at("webhooks:\n- name: a\n  clientConfig:\n    caBundle: @@\n") == CA
    assert _at("webhooks:\n  - name: a\n    clientConfig:\n      caBundle: @@\n") == CA
    assert _at("spec:\n  containers:\n    - name: x\n      env:\n        - @@\n") == (
        "spec",
        "containers",
        "[]",
        "env",
        "[]",
    )
    assert _at("metadata:\n  labels:\n    @@\n") == ("metadata", "labels")
    assert _at("metadata:\n  labels: @@\n") == ("metadata", "labels")
    assert _at("data:\n  config.yaml: |\n    server:\n      port: @@\n") == ("data", "config.yaml")
    assert _at("a: 1\n---\nb:\n  c: @@\n") == ("b", "c")
    assert _at("metadata:\n  labels:\n@@\n", nindent=4) == ("metadata", "labels")
    assert _at("@@\n") == ()


CA = ("webhooks", "[]", "clientConfig", "caBundle")


def test_resource_of_reads_literal_or_template_text() -> None:
    raw = ("---", "apiVersion: v1", "kind: Secret", "metadata:", "  labels:", "    name: no", "  name: {{ .x }}-a")
    skel = tuple(line.replace("{{ .x }}", "\x00" * 8) for line in raw)
    assert resource_of(skel, raw, 5) == ("Secret", "{{ .x }}-a")


# -- switches -----------------------------------------------------------------------------------------------


def test_ways_to_make() -> None:
    a, b = Truthy("a"), Truthy("b")
    assert ways_to_make(AllOf((a, b)), True) == [frozenset({Setting("a", "truthy"), Setting("b", "truthy")})]
    assert ways_to_make(AllOf((a, b)), False) == [
        frozenset({Setting("a", "falsy")}),
        frozenset({Setting("b", "falsy")}),
    ]
    assert ways_to_make(AnyOf((a, Not(b))), False) == [frozenset({Setting("a", "falsy"), Setting("b", "truthy")})]
    assert ways_to_make(Equals("tls.type", "helm"), False) == [frozenset({Setting("tls.type", "ne", "helm")})]


def test_evaluate_with_values_and_unknowns() -> None:
    values = {"tls": {"type": "helm", "enabled": True}, "replicas": 0, "name": ""}
    assert evaluate(Truthy("tls.enabled"), values) is True
    assert evaluate(Truthy("replicas"), values) is False and evaluate(Truthy("name"), values) is False
    assert evaluate(Truthy("tls.missing.deeper"), values) is False
    assert evaluate(Equals("tls.type", "helm"), values) is True
    assert evaluate(Equals("replicas", False), values) is False  # Go does not equate 0 and false
    cluster = Unknown(".Capabilities.APIVersions.Has \"x/v1\"")
    # an unknown part decides nothing unless the known parts already do
    assert evaluate(AllOf((Truthy("name"), cluster)), values) is False
    assert evaluate(AllOf((Truthy("tls.enabled"), cluster)), values) is None
    assert evaluate(AnyOf((Truthy("tls.enabled"), cluster)), values) is True
    assert evaluate(Not(cluster), values) is None
    assert evaluate(AllOf((Const(False), Truthy("tls.enabled"))), values) is False
    assert ways_to_make(Const(False), True) == []
    assert reach(frozenset({Cond(Truthy("tls.enabled"), True), Cond(cluster, True)}), values) is None
    assert reach(frozenset({Cond(Truthy("name"), True), Cond(cluster, True)}), values) is False
    assert reach(frozenset({Cond(Truthy("name"), False)}), values) is True


def test_settings_text() -> None:
    values = {"tls": {"type": "helm"}, "on": True}
    pairs, text = settings_text(frozenset({Setting("tls.type", "ne", "helm"), Setting("on", "falsy")}), values)
    assert pairs == (("on", "false"), ("tls.type", '!= "helm"'))
    assert text == 'set on: false (now true) and tls.type to something other than "helm" (now "helm")'


def _chart(tmp_path: Path, values: str, templates: dict[str, str]) -> Path:
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: t\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text(values)
    for name, text in templates.items():
        (tmp_path / "templates" / name).write_text(text)
    return tmp_path


def test_eq_condition_with_root_dollar_and_else_if(tmp_path: Path) -> None:
    chart = _chart(
        tmp_path,
        "tls:\n  type: helm\n  existingSecret: ''\n",
        {
            "apiservice.yaml": (
                "apiVersion: apiregistration.k8s.io/v1\n"
                "kind: APIService\n"
                "metadata:\n"
                "  name: v1beta1.metrics.k8s.io\n"
                "spec:\n"
                "  {{- if $.Values.tls.existingSecret }}\n"
                "  caBundle: {{ $.Values.tls.existingSecret }}\n"
                '  {{- else if eq .Values.tls.type "helm" }}\n'
                '  {{- $ca := genCA "metrics-ca" 365 }}\n'
                "  caBundle: {{ $ca.Cert | b64enc }}\n"
                "  {{- end }}\n"
            )
        },
    )
    (use,) = scan_chart(chart).uses
    assert use.field == ("spec", "caBundle") and use.call == "templates/apiservice.yaml:9"
    assert use.output == "templates/apiservice.yaml:10"
    assert {s.settings for s in use.switches} == {
        (("tls.existingSecret", "<set>"),),
        (("tls.type", '!= "helm"'),),
    }
    texts = {s.text for s in use.switches}
    assert 'set tls.type to something other than "helm" (now "helm")' in texts


def test_with_block_and_values_alias_resolve_paths(tmp_path: Path) -> None:
    chart = _chart(
        tmp_path,
        "webhook:\n  autoGenerateCert:\n    enabled: true\n",
        {
            "_helpers.tpl": (
                '{{- define "t.cert" -}}\n'
                "{{- $cfg := .Values.webhook -}}\n"
                "{{- if $cfg.autoGenerateCert.enabled -}}\n"
                '{{- $c := genSelfSignedCert "svc" nil nil 365 -}}\n'
                "tls.crt: {{ $c.Cert | b64enc }}\n"
                "{{- end -}}\n"
                "{{- end -}}\n"
            ),
            "secret.yaml": (
                "{{- with .Values.webhook }}\n"
                "{{- if or .autoGenerateCert.enabled (not $.Values.webhook.enabled) }}\n"
                "kind: Secret\n"
                "data:\n"
                '  {{- include "t.cert" $ | nindent 2 }}\n'
                "{{- end }}\n"
                "{{- end }}\n"
            ),
        },
    )
    (use,) = scan_chart(chart).uses
    assert use.field == ("data", "tls.crt")
    assert use.via == ("templates/secret.yaml:5", "define t.cert")
    assert {s.settings for s in use.switches} == {
        (("webhook", "<empty>"),),
        (("webhook.autoGenerateCert.enabled", "false"),),
        (("webhook.autoGenerateCert.enabled", "false"), ("webhook.enabled", "true")),
    }


def test_recursive_defines_and_unused_random_values(tmp_path: Path) -> None:
    chart = _chart(
        tmp_path,
        "{}\n",
        {
            "_helpers.tpl": (
                '{{- define "t.loop" -}}{{ include "t.loop" . }}{{ uuidv4 }}{{- end -}}\n'
                '{{- define "t.unused" -}}{{- $x := randNumeric 4 -}}fixed{{- end -}}\n'
            ),
            "cm.yaml": 'kind: ConfigMap\ndata:\n  a: {{ include "t.loop" . }}\n  b: {{ include "t.unused" . }}\n',
        },
    )
    uses = {(u.function, u.field, u.output) for u in scan_chart(chart).uses}
    assert uses == {
        ("uuidv4", ("data", "a"), "templates/cm.yaml:3"),
        # never written out, reported where it is reached so it is not lost
        ("randNumeric", ("data", "b"), "templates/cm.yaml:4"),
    }
