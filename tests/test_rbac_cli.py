"""`argo-doctor rbac can`: Yes or No as `argocd admin settings rbac can` prints them, with the lines that decided."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from argo_doctor.cli import main
from tests.conftest import EXAMPLES

BUNDLE = EXAMPLES / "incidents" / "rbac-policy"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["rbac", "can", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_deny_answers_no_with_its_line_and_the_role_it_comes_through() -> None:
    code, out, _ = _run("northwind:shop", "sync", "applications", "shop/storefront", "--from", str(BUNDLE))
    assert code == 1
    assert out.splitlines() == ["No", "denied for northwind:shop by:",
                                "  policy.team-shop.csv:2: p, role:shop-dev, applications, sync, shop/storefront, deny",
                                "  through policy.team-shop.csv:6: g, northwind:shop, role:shop-dev"]


def test_the_default_role_and_aliases_answer_yes() -> None:
    code, out, _ = _run("anyone@northwind.example", "get", "app", "payments/api", "--from", str(BUNDLE))
    assert code == 0 and out.splitlines()[:2] == ["Yes", "allowed for role:readonly by:"]


def test_a_policy_file_as_csv_or_config_map_and_json_output(tmp_path: Path) -> None:
    csv = tmp_path / "policy.csv"
    csv.write_text("p, role:dev, applications, sync, dev/*, allow\ng, alice, role:dev\n")
    code, out, _ = _run("alice", "sync", "applications", "dev/web", "-f", str(csv), "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["allowed"] and doc["lines"] == [
        {"origin": "policy.csv", "line": 1, "text": "p, role:dev, applications, sync, dev/*, allow"}]
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-rbac-cm}\ndata:\n"
                  "  policy.matchMode: regex\n  policy.csv: |\n    p, bob, applications, get, ^dev/, allow\n")
    assert _run("bob", "get", "applications", "dev/web", "-f", str(cm))[0] == 0
    assert _run("bob", "get", "applications", "qa/dev/web", "-f", str(cm))[0] == 1
    assert _run("bob", "get", "applications", "dev/web", "-f", str(cm), "--no-use-builtin-policy",
                "--default-role", "role:readonly")[0] == 0


def test_no_line_says_so_and_a_broken_policy_warns() -> None:
    code, out, _ = _run("nobody", "delete", "clusters", "https://kubernetes.default.svc", "--from", str(BUNDLE))
    assert code == 1 and "no policy line matches" in out


def test_a_policy_argo_cd_cannot_load_warns(tmp_path: Path) -> None:
    csv = tmp_path / "policy.csv"
    csv.write_text("p, alice, applications, get, */*, allow\np, bob, applications, get, */* allow\n")
    code, out, _ = _run("alice", "get", "applications", "a/b", "-f", str(csv))
    assert code == 0 and "warning: 1 line(s) of the policy cannot be loaded; Argo CD refuses such a policy whole " \
                         "(first: policy.csv:2: p, bob, applications, get, */* allow)" in out


def test_exactly_one_source_of_policy(tmp_path: Path) -> None:
    code, _, err = _run("a", "get", "applications")
    assert code == 2 and "give exactly one of --policy-file, --from or --live" in err
    empty = tmp_path / "empty"
    (empty / "objects").mkdir(parents=True)
    (empty / "objects" / "x.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    code, _, err = _run("a", "get", "applications", "--from", str(empty))
    assert code == 2 and "no argocd-rbac-cm ConfigMap in the input" in err
