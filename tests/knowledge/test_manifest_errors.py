"""knowledge/manifest_errors.yaml on error messages Argo CD users reported (quoted from the issues named), each read
as the issue's diagnosis says: the repo-server's load, reaching the repository, or the Application's own source."""

from __future__ import annotations

import pytest

from argo_doctor.facts.manifests import explain, is_generation_error

LOAD = "Failed to load target state: failed to generate manifest for source 1 of 1: "

REPORTED = [
    ("argoproj/argo-cd#3864", "caller-deadline",
     "rpc error: code = DeadlineExceeded desc = context deadline exceeded"),
    ("argoproj/argo-cd#17546", "repo-server-unavailable",
     LOAD + "rpc error: code = Unavailable desc = error reading from server: EOF"),
    ("argoproj/argo-cd#10426", "command-killed",
     "rpc error: code = Unknown desc = `helm dependency build` failed signal: killed"),
    ("argoproj/argo-cd#9701", "exec-timeout",
     "rpc error: code = Unknown desc = Manifest generation error (cached): `kustomize build "
     "/tmp/git@github.com_<org>_kubernetes/<path> --enable-helm` failed timeout after 1m30s"),
    ("argoproj/argo-cd#20023", "argocd-cache",
     "InvalidSpecError: Unable to generate manifests in Code: rpc error: code = Unknown desc = NOAUTH "
     "Authentication required."),
    ("argoproj/argo-cd#16438", "repo-server-disk",
     LOAD + "rpc error: code = Internal desc = Failed to initialize git repo: mkdir /tmp/_argocd-repo: no "
     "such file or directory"),
    ("argoproj/argo-cd#24744", "repo-unreachable",
     LOAD + "rpc error: code = Unknown desc = failed to list refs: Get "
     "\"https://gitlab.xxxx.com/management.git/info/refs?service=git-upload-pack\": context deadline "
     "exceeded (Client.Timeout exceeded while awaiting headers)"),
    ("argoproj/argo-cd#24183", "repo-host-key",
     LOAD + "rpc error: code = Unknown desc = failed to list refs: ssh: handshake failed: knownhosts: key "
     "mismatch"),
    ("argoproj/argo-cd#6048", "repo-tls",
     "rpc error: code = Unknown desc = Manifest generation error (cached): `helm repo add stable "
     "https://charts.helm.sh/stable` failed exit status 1: Error: looks like "
     "\"https://charts.helm.sh/stable\" is not a valid chart repository or cannot be reached: Get "
     "\"https://charts.helm.sh/stable/index.yaml\": x509: certificate signed by unknown authority"),
    ("argoproj/argo-cd#3280", "helm-dependency-repo",
     "rpc error: code = Unknown desc = `helm dependency build` failed exit status 1: Error: no "
     "repository definition for https://eventstore.github.io/EventStore.Charts. Please add the missing"
     " repos via 'helm repo add'"),
    ("argoproj/argo-cd#15278", "helm-repo-not-permitted",
     LOAD + "rpc error: code = Unknown desc = Manifest generation error (cached): rpc error: code = "
     "PermissionDenied desc = helm repos https://dandydeveloper.github.io/charts/ are not permitted in"
     " project ''"),
    ("argoproj/argo-helm#242", "helm-template",
     "InvalidSpecError: Unable to generate manifests in helm/extension: rpc error: code = Unknown desc"
     " = `helm template . --name s4-dev --namespace cveti-demo --kube-version 1.16` failed exit status"
     " 1: Error: render error in \"s4hana-extension-service/templates/service.yaml\""),
    ("argoproj/argo-cd#15521", "manifest-unmarshal",
     LOAD + "rpc error: code = Unknown desc = Manifest generation error (cached): rpc error: code = "
     "FailedPrecondition desc = Failed to unmarshal \"application.yaml\": <nil>"),
    ("argoproj/argo-cd#12092", "plugin-failed",
     "Manifest generation error (cached): plugin sidecar failed. couldn't find cmp-server plugin with "
     "name dhall-to-yaml supporting the given repository"),]


@pytest.mark.parametrize(("issue", "row", "message"), REPORTED, ids=[r[0] for r in REPORTED])
def test_reported_messages_are_read_as_their_issue_says(issue: str, row: str, message: str) -> None:
    error = explain(message)
    assert error.row is not None and error.row.id == row, issue


def test_a_git_host_timeout_is_the_repository_s_not_the_repo_server_s_load() -> None:
    assert explain(REPORTED[6][2]).cause == "repository"
    assert explain(REPORTED[0][2]).cause == "load"


def test_generation_errors_are_told_from_other_comparison_errors() -> None:
    assert all(is_generation_error(m) for _, _, m in REPORTED if "Failed to load" in m or m.startswith("rpc"))
    assert is_generation_error("Unable to generate manifests in apps/x: rpc error: code = Unknown desc = boom")
    assert not is_generation_error("Failed to load live state: failed to get cluster info for "
                                   "\"https://10.0.0.1\": error synchronizing cache state")
