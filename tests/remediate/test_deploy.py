"""deploy/ renders with `kubectl kustomize`, and what it renders is the least-privilege, hardened service.

kubectl is required: without it the test fails (it does not skip), since `kubectl kustomize deploy/` rendering
is part of the contract of the issue. The RBAC is checked against the requests the service's client makes
(`remediate/kube.py` path helpers, used by `remediate/restarter.py`): exactly those, nothing more.
"""

from __future__ import annotations

import base64
import configparser
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor.remediate.kube import application_path, events_path, related_paths, rollout_path
from argo_doctor.remediate.policy import parse_policy

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SA_NAMESPACE = "argo-doctor"
SA_NAME = "argo-doctor-remediate"
IMAGE = "ghcr.io/argo-doctor/argo-doctor"


def kustomize(folder: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is not on PATH: it is needed to check that `kubectl kustomize deploy/` renders "
                    "(install kubectl >= 1.27, which embeds kustomize v5)")
    done = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, f"kubectl kustomize {folder} failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture(scope="module")
def base() -> list[dict[str, Any]]:
    return kustomize(DEPLOY)


@pytest.fixture(scope="module")
def postgresql() -> list[dict[str, Any]]:
    return kustomize(DEPLOY / "overlays" / "postgresql")


def only(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (c,) = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return c


def option(args: list[str], name: str) -> str:
    assert args.count(name) == 1, f"{name} given {args.count(name)} times in {args}"
    return args[args.index(name) + 1]


# --- kinds and namespaces ---------------------------------------------------------------------------------------

def test_every_kind_is_rendered(base: list[dict[str, Any]]) -> None:
    kinds = {d["kind"] for d in base}
    assert kinds == {"Namespace", "ServiceAccount", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy",
                     "ConfigMap", "Secret", "Role", "RoleBinding", "ClusterRole"}
    assert "ClusterRoleBinding" not in kinds
    for doc in base:
        if doc["kind"] in {"Namespace", "ClusterRole"}:
            continue
        namespace = doc["metadata"].get("namespace")
        if doc["kind"] in {"Role", "RoleBinding"}:
            assert namespace in {"argocd", "apps"}, doc["metadata"]
        else:
            assert namespace == SA_NAMESPACE, doc["metadata"]


def test_collector_rbac_stays_separate(base: list[dict[str, Any]]) -> None:
    assert (DEPLOY / "collector-rbac.yaml").is_file(), "README and collector-permission-missing link to it"
    assert not any(d["metadata"]["name"] == "argo-doctor-reader" for d in base)


def test_every_mentioned_deploy_file_exists() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "src").rglob("*.py"))]
    mentioned = {m for path in texts for m in re.findall(r"deploy/[\w./-]+\.ya?ml", path.read_text())}
    assert "deploy/collector-rbac.yaml" in mentioned
    missing = sorted(m for m in mentioned if not (ROOT / m).is_file())
    assert not missing, f"mentioned but absent: {missing}"


# --- RBAC -------------------------------------------------------------------------------------------------------

def effective_grants(docs: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(namespace, apiGroup, resource, verb) the service's ServiceAccount gets through RoleBindings."""
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "Role"}
    cluster_roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRole"}
    grants: set[tuple[str, str, str, str]] = set()
    used: set[tuple[str, str]] = set()
    for binding in (d for d in docs if d["kind"] == "RoleBinding"):
        namespace = binding["metadata"]["namespace"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NAMESPACE}]
        ref = binding["roleRef"]
        role = roles[(namespace, ref["name"])] if ref["kind"] == "Role" else cluster_roles[ref["name"]]
        used.add((ref["kind"], ref["name"]))
        for rule in role["rules"]:
            assert set(rule) == {"apiGroups", "resources", "verbs"}, f"no resourceNames/nonResourceURLs: {rule}"
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        grants.add((namespace, group, resource, verb))
    defined = {("Role", n) for _, n in roles} | {("ClusterRole", n) for n in cluster_roles}
    assert defined == used, f"roles defined but bound to nothing: {defined - used}"
    return grants


API_PATH = re.compile(r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<res>[^/]+)"
                      r"(?:/(?P<name>[^/]+))?$")


def needed(method: str, path: str) -> tuple[str, str, str, str]:
    """The RBAC attributes of one request."""
    match = API_PATH.match(path)
    assert match, path
    verb = {"GET": "get" if match["name"] else "list", "PATCH": "patch", "POST": "create"}[method]
    return match["ns"], match["group"] or "", match["res"], verb


def service_requests(app_namespace: str, namespace: str) -> list[tuple[str, str]]:
    """Every request a notification can cause (remediate/restarter.py through remediate/kube.py)."""
    requests = [
        ("GET", application_path(app_namespace, "shop-web")),   # the notified Application
        ("GET", rollout_path(namespace)),                        # Rollouts of the namespace (fix --namespace)
        ("GET", rollout_path(namespace, "web")),                 # the Rollout, and the fresh re-read
        ("PATCH", rollout_path(namespace, "web")),               # spec.restartAt + metadata.resourceVersion
        ("POST", events_path(namespace)),                        # reason ArgoDoctorRestart
    ]
    requests += [("GET", path) for path in related_paths(namespace).values()]  # ReplicaSets, Pods, AnalysisRuns
    return requests


def test_rbac_is_exactly_what_the_service_requests(base: list[dict[str, Any]]) -> None:
    grants = effective_grants(base)
    wanted = {needed(method, path) for method, path in service_requests("argocd", "apps")}
    # The issue grants get with list; get reveals nothing list does not, so it is the only allowed surplus.
    wanted |= {(ns, group, resource, "get") for ns, group, resource, verb in set(wanted) if verb == "list"}
    assert grants == wanted, f"extra: {sorted(grants - wanted)}, missing: {sorted(wanted - grants)}"


def test_rbac_has_no_wildcards_secrets_or_other_writes(base: list[dict[str, Any]]) -> None:
    grants = effective_grants(base)
    assert not any("*" in part for grant in grants for part in grant)
    assert not any(resource in {"secrets", "configmaps", "pods/eviction", "pods/exec"} for _, _, resource, _ in grants)
    writes = {(group, resource, verb) for _, group, resource, verb in grants if verb not in {"get", "list"}}
    assert writes == {("argoproj.io", "rollouts", "patch"), ("", "events", "create")}
    assert {(ns, resource, verb) for ns, _, resource, verb in grants if ns == "argocd"} == \
        {("argocd", "applications", "get")}


def test_policy_namespaces_have_their_rolebinding(base: list[dict[str, Any]]) -> None:
    config_map = only(base, "ConfigMap")
    policy = parse_policy(yaml.safe_load(config_map["data"]["policy.yaml"]), "deploy/base/policy.yaml")
    assert policy.dry_run is True, "the shipped policy must start in dry run"
    bound = {d["metadata"]["namespace"] for d in base
             if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == "argo-doctor-restart-rollouts"}
    assert set(policy.namespaces) == bound == {"apps"}
    assert policy.applications == ("argocd/*",)


# --- Deployment -------------------------------------------------------------------------------------------------

def test_deployment_is_hardened(base: list[dict[str, Any]]) -> None:
    deployment = only(base, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    c = container(base)
    assert spec["replicas"] == 2
    preferred = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert preferred[0]["podAffinityTerm"]["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["runAsNonRoot"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc.get("privileged", False) is False
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][kind]), kind
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert 10 <= pod["terminationGracePeriodSeconds"] <= 120
    assert pod["automountServiceAccountToken"] is True
    assert pod["serviceAccountName"] == SA_NAME
    assert only(base, "ServiceAccount")["metadata"]["name"] == SA_NAME
    assert only(base, "ServiceAccount")["automountServiceAccountToken"] is False
    assert c.get("command") is None, "the image's ENTRYPOINT is argo-doctor"
    image, _, tag = c["image"].rpartition(":")
    assert image == IMAGE and tag and tag != "latest"


def mounts(docs: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """mountPath -> (volumeMount, volume)."""
    pod = only(docs, "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    return {m["mountPath"]: (m, volumes[m["name"]]) for m in container(docs)["volumeMounts"]}


def test_writable_paths_are_emptydirs(base: list[dict[str, Any]]) -> None:
    by_path = mounts(base)
    for path in ("/tmp", "/var/lib/argo-doctor"):
        mount, volume = by_path[path]
        assert "emptyDir" in volume and not mount.get("readOnly"), path
    assert all(m.get("readOnly") for p, (m, _) in by_path.items() if p.startswith("/etc/"))


def test_args_are_what_serve_accepts(base: list[dict[str, Any]], tmp_path: Path) -> None:
    from argo_doctor.cli.serve import serve

    args = container(base)["args"]
    assert args[0] == "serve"
    assert option(args, "--listen") == "0.0.0.0:8080"
    assert option(args, "--audit-db") == "sqlite:////var/lib/argo-doctor/audit.db"
    assert "--insecure-no-auth" not in args
    by_path = mounts(base)
    # --policy: the policy ConfigMap's key, mounted by subPath.
    policy_mount, policy_volume = by_path[option(args, "--policy")]
    config_map = only(base, "ConfigMap")
    assert policy_volume["configMap"]["name"] == config_map["metadata"]["name"]
    policy_text = config_map["data"][policy_mount["subPath"]]
    # --token-file: the key `token` of the token Secret, mounted as a folder.
    token_file = Path(option(args, "--token-file"))
    _, token_volume = by_path[str(token_file.parent)]
    secret = only(base, "Secret")
    assert token_volume["secret"]["secretName"] == secret["metadata"]["name"]
    token = base64.b64decode(secret["data"][token_file.name]).decode()
    assert "REPLACE-ME" in token, "the shipped token is a placeholder, never a real one"
    # The audit database sits in the writable emptyDir.
    assert option(args, "--audit-db").removeprefix("sqlite:///").startswith("/var/lib/argo-doctor/")
    # Parse the arguments with the real command, files copied where the pod has them.
    (tmp_path / "policy.yaml").write_text(policy_text)
    (tmp_path / "token").write_text(token)
    local = [str(tmp_path / "policy.yaml") if a == option(args, "--policy") else
             str(tmp_path / "token") if a == str(token_file) else a for a in args[1:]]
    ctx = serve.make_context("serve", local)
    assert ctx.params["listen"] == "0.0.0.0:8080"
    assert ctx.params["audit_db"] == "sqlite:////var/lib/argo-doctor/audit.db"
    assert ctx.params["insecure_no_auth"] is False
    port = container(base)["ports"][0]
    assert port == {"name": "http", "containerPort": 8080, "protocol": "TCP"}


# --- Service, PDB, NetworkPolicy ----------------------------------------------------------------------------------

def test_service_and_pdb_select_the_pods(base: list[dict[str, Any]]) -> None:
    pod_labels = only(base, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = only(base, "Service")
    (port,) = service["spec"]["ports"]
    assert port["port"] == 8080 and port["targetPort"] == "http"
    assert service["spec"]["selector"].items() <= pod_labels.items()
    pdb = only(base, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_networkpolicy_admits_only_the_notifications_controller(base: list[dict[str, Any]]) -> None:
    policy = only(base, "NetworkPolicy")
    pod_labels = only(base, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert "Ingress" in policy["spec"]["policyTypes"]
    (rule,) = policy["spec"]["ingress"]
    # One peer holding both selectors: pods with that label AND in that namespace (two peers would be OR).
    assert rule["from"] == [{
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "argocd"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "argocd-notifications-controller"}},
    }]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8080}]


# --- the PostgreSQL overlay -----------------------------------------------------------------------------------------

def test_postgresql_overlay(base: list[dict[str, Any]], postgresql: list[dict[str, Any]]) -> None:
    c = container(postgresql)
    args = c["args"]
    assert "--audit-db" not in args and not any("sqlite" in a or "postgres" in a for a in args), \
        "the URL with its password must not be on the command line"
    env = {e["name"]: e for e in c["env"]}
    assert env["ARGO_DOCTOR_AUDIT_DB"]["valueFrom"] == {"secretKeyRef": {"name": "argo-doctor-audit-db",
                                                                         "key": "url"}}
    assert "/var/lib/argo-doctor" not in mounts(postgresql)
    # Everything else is the base, unchanged.
    base_args = container(base)["args"]
    at = base_args.index("--audit-db")
    assert args == base_args[:at] + base_args[at + 2:]
    assert effective_grants(postgresql) == effective_grants(base)
    assert not any(d["kind"] == "Secret" and d["metadata"]["name"] == "argo-doctor-audit-db" for d in postgresql), \
        "the database URL is created out of band, never rendered from git"
    kustomization = (DEPLOY / "overlays" / "postgresql" / "kustomization.yaml").read_text()
    assert "url='postgresql://" in kustomization


def test_serve_reads_the_store_url_from_the_overlays_variable(postgresql: list[dict[str, Any]]) -> None:
    from argo_doctor.cli.serve import serve

    [audit_db] = [p for p in serve.params if p.name == "audit_db"]
    names = {e["name"] for e in container(postgresql)["env"]}
    assert audit_db.envvar in names


# --- Dockerfile -------------------------------------------------------------------------------------------------------

def dockerfile_stages() -> list[list[tuple[str, str]]]:
    text = (ROOT / "Dockerfile").read_text()
    logical = re.sub(r"\\\n", " ", text)
    stages: list[list[tuple[str, str]]] = []
    for line in logical.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((instruction.upper(), rest.strip()))
    return stages


def test_dockerfile_is_multistage_slim_and_non_root() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim$", text, re.M)
    stages = dockerfile_stages()
    assert len(stages) >= 2
    assert stages[0][0] == ("FROM", "${PYTHON_IMAGE} AS builder")
    final = stages[-1]
    assert final[0] == ("FROM", "${PYTHON_IMAGE}")
    final_text = " ".join(rest for _, rest in final)
    assert "--from=builder" in final_text
    for tool in ("apt-get", "gcc", "build-essential", "pip install", "git "):
        assert tool not in final_text, f"{tool} in the final stage"
    users = [rest for instruction, rest in final if instruction == "USER"]
    assert users and users[-1].split(":")[0] == "10001"
    assert ("ENTRYPOINT", '["argo-doctor"]') in final
    assert ("EXPOSE", "8080") in final
    assert (ROOT / ".dockerignore").read_text().splitlines()[1] == "*", "the build context is an allow-list"


# Without a Docker engine (CI builds the image when it has one: .ci/run), the builder stage is replayed: the files
# that .dockerignore lets into the build context, copied as its COPY instructions say, build the package.

def dockerignore_patterns() -> list[tuple[bool, str, re.Pattern[str]]]:
    """(re-included, pattern, regex) of each .dockerignore line, with Docker's wildcards: `**/` any folders, `**`
    anything, `*` and `?` within a name."""
    patterns = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        text = line.removeprefix("!").strip("/")
        regex = "".join({"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(token, re.escape(token))
                        for token in re.split(r"(\*\*/|\*\*|\*|\?)", text))
        patterns.append((line.startswith("!"), text, re.compile(regex + r"\Z")))
    return patterns


def in_build_context(path: str, patterns: list[tuple[bool, str, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern that matches the path or one of its folders decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    admitted = True
    for negated, _, regex in patterns:
        if any(regex.match(candidate) for candidate in candidates):
            admitted = negated
    return admitted


def build_context() -> set[str]:
    """The files `docker build .` sends, as paths relative to the repository."""
    patterns = dockerignore_patterns()
    reincluded = [text for negated, text, _ in patterns if negated]
    files = set()
    for folder, dirs, names in os.walk(ROOT):
        rel = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if rel == "." else rel + "/"
        # A folder left out whose contents no `!` pattern names is not walked (.git, .venv).
        dirs[:] = [d for d in dirs if in_build_context(prefix + d, patterns)
                   or any(text.startswith(prefix + d + "/") for text in reincluded)]
        files.update(prefix + name for name in names if in_build_context(prefix + name, patterns))
    return files


def test_dockerignore_is_read_as_docker_reads_it() -> None:
    patterns = dockerignore_patterns()
    assert in_build_context("pyproject.toml", patterns)
    assert in_build_context("src/argo_doctor/knowledge/known_bugs.yaml", patterns)
    assert not in_build_context("src/argo_doctor/__pycache__/engine.cpython-311.pyc", patterns)
    assert not in_build_context("src/argo_doctor/report/__pycache__/html.cpython-311.pyc", patterns)
    assert not in_build_context("src/argo_doctor.egg-info/PKG-INFO", patterns)
    assert not in_build_context("tests/conftest.py", patterns)
    assert not in_build_context(".venv/bin/argo-doctor", patterns)


@pytest.mark.slow
def test_the_builder_stage_builds_the_tool_from_its_build_context(tmp_path: Path) -> None:
    builder = dockerfile_stages()[0]
    [workdir] = [rest for instruction, rest in builder if instruction == "WORKDIR"]
    assert any(instruction == "RUN" and re.search(r"pip install --no-compile \.(\s|$)", rest)
               for instruction, rest in builder), "the builder installs the package from its WORKDIR"
    context = build_context()
    src = tmp_path / workdir.lstrip("/")
    for instruction, rest in builder:
        if instruction != "COPY":
            continue
        *sources, dest = rest.split()
        for source in (s.rstrip("/") for s in sources):
            chosen = [f for f in context if f == source or f.startswith(source + "/")]
            assert chosen, f"COPY {source}: not in the build context (.dockerignore)"
            for name in chosen:
                # A file lands in the destination folder; a folder's contents do.
                target = src / dest / (Path(name).name if name == source else Path(name).relative_to(source))
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(ROOT / name, target)

    # The builder's `pip install .` builds this wheel, then installs it with its dependencies.
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path / "wheel"),
                           str(src)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    [wheel] = (tmp_path / "wheel").glob("argo_doctor-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = configparser.ConfigParser()
        scripts.read_string(archive.read(entry_points).decode())
        archive.extractall(tmp_path / "installed")
    package = {f.relative_to(src / "src").as_posix() for f in (src / "src" / "argo_doctor").rglob("*") if f.is_file()}
    assert package == {n for n in names if n.startswith("argo_doctor/")}, "every module and data file, nothing else"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "the image carries the licence"
    assert dict(scripts["console_scripts"]) == {"argo-doctor": "argo_doctor.cli:run",
                                                "kubectl-argo_doctor": "argo_doctor.cli:run"}

    # The image's program, data files included, from the wheel's files only: a scan of an example bundle.
    program = ("import importlib, sys, argo_doctor; print(argo_doctor.__file__, file=sys.stderr); "
               "module, name = sys.argv.pop(1).split(':'); sys.argv[0] = 'argo-doctor'; "
               "getattr(importlib.import_module(module), name)()")
    done = subprocess.run([sys.executable, "-c", program, scripts["console_scripts"]["argo-doctor"], "scan",
                           str(ROOT / "examples" / "argocd-basic"), "-o", "json", "--fail-on", "never"],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(tmp_path / "installed")})
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(str(tmp_path / "installed" / "argo_doctor")), done.stderr
    rules = {finding["rule"] for finding in json.loads(done.stdout)["findings"]}
    assert "component-known-bug" in rules, "knowledge/known_bugs.yaml is in the image"
