"""The first ten minutes with the tool, as a kubectl user expects them: `--help` in the order of need with an example
per command, completion, every table within the terminal, `--app` and `-n`, flags that would do nothing refused,
a folder of bundles scanned bundle by bundle, an input that lacks what the rules read said so, `collect -o X.zip`
refused, `--around` in its three forms."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from argo_doctor.cli import main
from argo_doctor.cli.group import COMMANDS as ORDER
from argo_doctor.cli.group import prog_name
from tests.conftest import BUNDLES, EXAMPLES

BASIC = EXAMPLES / "argocd-basic"
INCIDENTS = EXAMPLES / "incidents"


def run(*args: str, columns: int | None = None) -> Result:
    env = {"COLUMNS": str(columns) if columns else None, "NO_COLOR": None, "FORCE_COLOR": None}
    return CliRunner(env=env).invoke(main, list(args))


def test_help_lists_the_commands_in_the_order_of_need_each_with_an_example() -> None:
    text = run("--help").stdout
    listed = [line.split()[0] for line in text.split("Commands:")[1].splitlines() if line.startswith("  ")]
    assert listed[:7] == ["scan", "timeline", "health", "map", "deprecations", "upgrade-check", "collect"]
    assert listed == list(ORDER) and "SIGPIPE" not in text
    assert "argo-doctor scan --live" in text and "argo-doctor collect -o bundle.tgz" in text
    for command in ("scan", "timeline", "health", "map", "deprecations", "upgrade-check", "collect", "redact", "mcp",
                    "serve",
                    "audit", "notifications-config", "helm-check", "rbac", "completion"):
        assert f"argo-doctor {command}" in run(command, "--help").stdout.split("Example")[-1], command
    assert all(len(line) <= 80 for line in text.splitlines())


def test_as_a_kubectl_plugin_the_program_names_itself_kubectl_argo_doctor() -> None:
    assert prog_name("/home/me/.krew/bin/kubectl-argo_doctor") == "kubectl argo-doctor"
    assert prog_name("/usr/local/bin/argo-doctor") == "argo-doctor"
    script = Path(sys.executable).with_name("kubectl-argo_doctor")
    out = subprocess.run([script, "scan", "--help"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("Usage: kubectl argo-doctor scan")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_that_completes_commands_and_choices(shell: str) -> None:
    result = run("completion", shell)
    assert result.exit_code == 0 and "_ARGO_DOCTOR_COMPLETE" in result.stdout
    script = Path(sys.executable).with_name("argo-doctor")
    env = {**os.environ, "_ARGO_DOCTOR_COMPLETE": "bash_complete", "COMP_WORDS": "argo-doctor scan -o ",
           "COMP_CWORD": "3"}
    answer = subprocess.run([script], env=env, capture_output=True, text=True).stdout.split()
    assert {"plain,table", "plain,wide", "plain,json", "plain,html"} <= set(answer)


COMMANDS = {
    "scan": ("scan", str(BASIC), "--fail-on", "never"),
    "health": ("health", str(BASIC)),
    "timeline": ("timeline", str(INCIDENTS / "unwanted-sync")),
    "map": ("map", str(BASIC)),
    "deprecations": ("deprecations", str(INCIDENTS / "deprecated-callers")),
    "helm-check": ("helm-check", str(Path(__file__).parent / "helm" / "charts" / "webhook-certs")),
}


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_table_fits_the_terminal_and_wide_keeps_every_cell(command: str, columns: int) -> None:
    args = COMMANDS[command]
    fitted = run(*args, columns=columns)
    assert fitted.exit_code in (0, 1), fitted.output
    lines = fitted.stdout.splitlines()
    too_wide = [line for line in lines if len(line) > columns and len(line.split()) > 1]
    assert lines and not too_wide, too_wide[:3]
    wide = run(*args, "-o", "wide", columns=columns).stdout
    assert max(len(line) for line in wide.splitlines()) >= max(len(line) for line in lines)


def test_app_narrows_every_command_to_what_the_application_manages() -> None:
    findings = json.loads(run("scan", str(BASIC), "--app", "payments-api", "-o", "json", "--fail-on",
                              "never").stdout)["findings"]
    assert findings and all(any(o["name"].startswith("payments-api") for o in f["objects"]) for f in findings)
    health = run("health", str(BASIC), "--app", "argocd/payments-api", "-o", "json").stdout
    names = {(o["kind"], o["name"]) for o in json.loads(health)["objects"]}
    assert ("Application", "payments-api") in names and ("Pod", "payments-api-7c9d8f6b5d-cpbcd") in names
    assert ("ReplicaSet", "payments-api-7c9d8f6b5d") in names  # owned by the Deployment it manages
    assert not any(name.startswith(("grafana", "ledger")) for _, name in names)
    entries = json.loads(run("timeline", str(BASIC), "--app", "payments-api", "-o", "json").stdout)["timeline"]
    assert entries and all("monitoring" not in e["location"] for e in entries)
    unknown = run("scan", str(BASIC), "--app", "nope")
    assert unknown.exit_code == 2 and "no such Application" in unknown.stderr and "argocd/payments-api" in (
        unknown.stderr)


def test_namespace_narrows_to_its_objects_and_the_findings_about_them() -> None:
    findings = json.loads(run("scan", str(BASIC), "-n", "monitoring", "-o", "json", "--fail-on",
                              "never").stdout)["findings"]
    assert findings and all(any(o["namespace"] == "monitoring" for o in f["objects"]) for f in findings)
    objects = json.loads(run("health", str(BASIC), "-n", "payments", "-o", "json").stdout)["objects"]
    assert objects and {o["namespace"] for o in objects} == {"payments"}


@pytest.mark.parametrize("flag", [("--context", "prod"), ("--kubeconfig", __file__), ("--argo-namespace", "argocd"),
                                  ("--since", "1h"), ("--timeout", "1m")])
def test_a_cluster_option_given_with_files_is_an_error_not_ignored(flag: tuple[str, str]) -> None:
    result = run("scan", str(BASIC), *flag)
    assert result.exit_code == 2 and f"{flag[0]} says how to read a cluster" in result.stderr


def test_a_folder_of_bundles_is_scanned_bundle_by_bundle_or_refused_with_the_list() -> None:
    result = run("scan", str(INCIDENTS), "--fail-on", "never", columns=100)
    headings = [line for line in result.stdout.splitlines() if line.startswith("── ")]
    names = sorted(p.parent.name for p in INCIDENTS.glob("*/bundle.yaml"))
    at = names.index("repo-flapping")
    assert result.exit_code == 0 and len(headings) == len(names)
    assert f"repo-flapping ({at + 1} of {len(names)})" in headings[at]
    assert result.stdout.count("argo-doctor scanned ") == len(names)
    assert run("scan", str(INCIDENTS), columns=100).exit_code == 1  # the worst of the bundles decides
    for args in (("scan", str(INCIDENTS), "-o", "json"), ("health", str(EXAMPLES)), ("timeline", str(EXAMPLES))):
        refused = run(*args)
        bundles = sorted(p.parent for p in (INCIDENTS if args[1] == str(INCIDENTS) else EXAMPLES).rglob("bundle.yaml"))
        assert refused.exit_code == 2 and f"holds {len(bundles)} bundles" in refused.stderr
        assert str(bundles[0]) in refused.stderr and refused.stdout == ""


def test_a_dump_without_custom_resources_says_what_it_lacks_and_how_to_add_it() -> None:
    doc = json.loads(run("scan", str(BUNDLES / "cluster-info-dump"), "-o", "json", "--fail-on", "never").stdout)
    notes = [e for e in doc["errors"] if e["location"] == "input"]
    assert len(notes) == 1 and notes[0]["kind"] == "note"
    assert "a `kubectl cluster-info dump` never holds them" in notes[0]["message"]
    assert "kubectl get applications.argoproj.io," in notes[0]["message"]
    table = run("scan", str(BUNDLES / "cluster-info-dump"), "--fail-on", "never", columns=100).stdout
    assert table.count("no Argo custom resource") == 1
    full = json.loads(run("scan", str(BASIC), "-o", "json", "--fail-on", "never").stdout)
    assert not [e for e in full["errors"] if e["location"] == "input"]  # a full collection lacks nothing


@pytest.mark.parametrize("name", ["bundle.zip", "bundle.7z", "bundle.json"])
def test_collect_refuses_an_output_it_would_not_write(name: str, tmp_path: Path) -> None:
    result = run("collect", "-o", str(tmp_path / name))
    assert result.exit_code == 2 and "collect writes a folder or a .tar.gz" in result.stderr
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("around", ["2026-11-20T14:24:45Z", "2026-11-20 14:24", "-5m"])
def test_around_takes_a_time_a_duration_back_or_a_finding(around: str) -> None:
    result = run("timeline", str(BASIC), "--around", around, "--window", "10m", "-o", "json")
    assert result.exit_code == 0, result.output
    times = [e["time"] for e in json.loads(result.stdout)["timeline"]]
    assert times and all(t.startswith("2026-11-20T14:") for t in times), times


def test_around_a_finding_id_centres_on_its_first_evidence() -> None:
    findings = json.loads(run("scan", str(BASIC), "-o", "json", "--fail-on", "never").stdout)["findings"]
    payments = next(f for f in findings if f["rule"] == "app-unhealthy" and "payments-api" in f["title"])
    first = min(e["time"] for e in payments["evidence"] if e["time"])
    entries = json.loads(run("timeline", str(BASIC), "--around", payments["id"], "--window", "2m",
                             "-o", "json").stdout)["timeline"]
    assert first[:16] in {e["time"][:16] for e in entries}
    bad = run("timeline", str(BASIC), "--around", "sync-failed:000000000000")
    assert bad.exit_code == 2 and "no such finding" in bad.stderr
    assert run("timeline", str(BASIC), "--around", "yesterday").exit_code == 2


def test_health_unhealthy_lists_only_what_is_not_healthy_worst_first() -> None:
    lines = run("health", str(BASIC), "--unhealthy", "-o", "wide").stdout.splitlines()
    statuses = [line.split()[3] for line in lines[1:]]
    assert statuses and "Healthy" not in statuses and "-" not in statuses
    order = ["Unknown", "Degraded", "Missing", "Progressing", "Suspended"]
    assert statuses == sorted(statuses, key=order.index)
    apps = {line.split()[2]: line.split()[3] for line in lines[1:] if line.startswith("Application ")}
    assert apps["payments-api"] == "Degraded"  # the Application's own health, as Argo CD shows it


def test_a_long_offline_scan_shows_what_it_reads_on_a_terminal_and_q_silences_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from argo_doctor.cli import common

    monkeypatch.setattr(common, "PROGRESS_AFTER", 0.0)  # as if the reading took longer than a second
    env = {"FORCE_COLOR": "1", "COLUMNS": "100"}  # stderr taken for a terminal
    shown = CliRunner(env=env).invoke(main, ["scan", str(BASIC), "--fail-on", "never"])
    assert shown.exit_code == 0 and "scanning 146 objects, 7 log files, 1 audit files" in shown.stderr
    quiet = CliRunner(env=env).invoke(main, ["scan", str(BASIC), "--fail-on", "never", "-q"])
    assert quiet.exit_code == 0 and "scanning" not in quiet.stderr
    piped = CliRunner(env={"FORCE_COLOR": None}).invoke(main, ["scan", str(BASIC), "--fail-on", "never"])
    assert "scanning" not in piped.stderr


def test_each_bundle_of_a_folder_gets_the_findings_it_gets_alone() -> None:
    """Rules keep what they gather from one input: a bundle scanned after another must not inherit its findings."""
    whole = run("scan", str(INCIDENTS), "--min-severity", "info", "--fail-on", "never", columns=200).stdout
    parts = whole.split("── ")[1:]
    assert len(parts) == len(list(INCIDENTS.glob("*/bundle.yaml")))
    for part in parts:
        bundle = Path(part.split(" (", 1)[0])
        alone = run("scan", str(bundle), "--min-severity", "info", "--fail-on", "never", columns=200).stdout
        assert _rows(part) == _rows(alone), bundle.name


def _rows(text: str) -> list[str]:
    """The finding lines of a short scan output."""
    return [line for line in text.splitlines() if line.split(" ", 1)[0] in {"CRITICAL", "HIGH", "MEDIUM", "LOW",
                                                                             "INFO"}]


def test_a_namespace_the_input_does_not_hold_is_an_error_naming_those_it_does() -> None:
    result = run("scan", str(BASIC), "-n", "paymnts")
    assert result.exit_code == 2 and "-n paymnts: no object of the input" in result.stderr
    assert "payments" in result.stderr


def test_a_mistyped_rule_gets_a_suggestion() -> None:
    result = run("scan", str(BASIC), "--rule", "app-unhealty")
    assert result.exit_code == 2 and "did you mean 'app-unhealthy'?" in result.stderr


def test_the_details_say_what_min_severity_hid_and_counts_read_as_english() -> None:
    text = run("scan", str(BASIC), "--details", "--fail-on", "never", columns=200).stdout
    assert "; 5 info not shown (--min-severity info)" in text
    image = run("scan", str(INCIDENTS / "image-updater"), "--fail-on", "never", columns=200).stdout
    assert "1 log file, 0 audit files" in image.splitlines()[0]
