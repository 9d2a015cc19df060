"""knowledge/components: a component is told by what its containers run (image name and program) in the shapes the
upstream manifests, argo-helm and Bitnami give them, whatever the workload is called; each row of the catalogue
names a way to find it."""

from __future__ import annotations

from typing import Any

import pytest

from argo_doctor.knowledge import load_rows
from argo_doctor.knowledge.components import PART_OF, by_containers, by_labels, component_rules, image_name, serves
from argo_doctor.sources.objects import Container, container_programs, pod_containers


def spec(image: str, args: list[str] | None = None, command: list[str] | None = None,
         *more: dict[str, Any]) -> tuple[Container, ...]:
    """The containers of a pod running `image` (and `more`), as the snapshot keeps them."""
    container: dict[str, Any] = {"name": "main", "image": image}
    if args is not None:
        container["args"] = args
    if command is not None:
        container["command"] = command
    return pod_containers({"kind": "Pod", "spec": {"containers": [container, *more]}})


@pytest.mark.parametrize(("image", "args", "command", "component"), [
    # Argo CD: the upstream manifests (v2.4 and v3.5), argo-helm, Bitnami
    ("quay.io/argoproj/argocd:v3.5.1", ["/usr/local/bin/argocd-application-controller"], None,
     "application-controller"),
    ("quay.io/argoproj/argocd:v2.4.28", None, ["argocd-application-controller"], "application-controller"),
    ("quay.io/argoproj/argocd:v2.4.28", None,
     ["sh", "-c", "entrypoint.sh argocd-repo-server --redis argocd-redis:6379"], "repo-server"),
    ("quay.io/argoproj/argocd:v2.4.28", None, ["entrypoint.sh", "argocd-applicationset-controller"],
     "applicationset-controller"),
    ("docker.io/bitnami/argo-cd:3.1.1-debian-12-r0", ["argocd-server", "--staticassets", "/opt/bitnami/argo-cd/app"],
     None, "server"),
    ("docker.io/bitnami/argo-cd:3.1.1-debian-12-r0", ["argocd-notifications", "--logformat", "text"], None,
     "notifications-controller"),
    ("quay.io/argoproj/argocd:v3.4.4", ["/usr/local/bin/argocd-commit-server"], None, "commit-server"),
    ("ghcr.io/dexidp/dex:v2.45.0", ["rundex"], ["/shared/argocd-dex"], "dex-server"),
    ("docker.io/bitnami/dex:2.43.1-debian-12-r8", ["rundex"], ["/shared/argocd-dex"], "dex-server"),
    ("registry.corp.example/mirror/argocd@sha256:0d1f", ["/usr/local/bin/argocd-server"], None, "server"),
    # Rollouts: the dashboard runs the plugin's image (argo-helm passes `dashboard`, the upstream manifest nothing)
    ("quay.io/argoproj/argo-rollouts:v1.9.0", ["--leader-elect"], None, "rollouts-controller"),
    ("quay.io/argoproj/kubectl-argo-rollouts:v1.9.0", ["dashboard", "--loglevel=info"], None, "rollouts-dashboard"),
    ("quay.io/argoproj/kubectl-argo-rollouts:v1.9.1", None, None, "rollouts-dashboard"),
    # Events: v1.0-1.2 an image per controller, v1.3-1.6 three on one image, v1.7 on one controller-manager
    ("argoproj/sensor-controller:v1.2.3", None, None, "events-controller"),
    ("quay.io/argoproj/argo-events:v1.6.3", ["eventsource-controller"], None, "events-controller"),
    ("quay.io/argoproj/argo-events:v1.9.11", ["controller"], None, "events-controller"),
    ("quay.io/argoproj/argo-events:v1.9.11", ["webhook-service"], None, "events-webhook"),
    ("quay.io/argoproj/argo-events:v1.9.11", ["eventsource-service"], None, "events-eventsource"),
    ("quay.io/argoproj/argo-events:v1.9.11", ["sensor-service"], None, "events-sensor"),
    # Workflows: upstream, argo-helm, Bitnami (the controller's first word is a flag's value, not a program)
    ("quay.io/argoproj/workflow-controller:v3.7.1", ["--configmap", "workflow-controller-configmap"],
     ["workflow-controller"], "workflow-controller"),
    ("docker.io/bitnami/argo-workflow-controller:3.7.1-debian-12-r1", ["--configmap", "wf-argo-workflows-controller"],
     None, "workflow-controller"),
    ("quay.io/argoproj/argocli:v3.7.1", ["server", "--auth-mode=client"], None, "workflows-server"),
    ("docker.io/bitnami/argo-workflow-cli:3.7.1-debian-12-r1", ["server", "--secure=false"], None, "workflows-server"),
    # Image Updater v0 and v1
    ("quay.io/argoprojlabs/argocd-image-updater:v0.15.2", None, ["/usr/local/bin/argocd-image-updater", "run"],
     "image-updater"),
    ("quay.io/argoprojlabs/argocd-image-updater:v1.3.0", ["--metrics-bind-address=:8443", "run"], None,
     "image-updater"),
])
def test_a_component_is_what_its_container_runs(image: str, args: list[str] | None, command: list[str] | None,
                                               component: str) -> None:
    found = by_containers(spec(image, args, command))
    assert found is not None and (found.rule.component, found.image) == (component, image)


@pytest.mark.parametrize(("image", "args", "command"), [
    ("quay.io/argoproj/argocd:v3.4.4", None, ["argocd", "admin", "redis-initial-password"]),  # a chart's hook Job
    ("quay.io/argoproj/argocli:v3.7.1", ["submit", "--watch"], None),  # the CLI, not the server
    ("quay.io/argoproj/argoexec:v3.7.1", ["emissary", "--", "sh"], None),  # a Workflow's executor
    ("quay.io/argoproj/argo-events:v1.9.11", ["something-else"], None),
    ("opentelemetry-operator:0.120.0", ["--metrics-addr", ":8080"], ["/manager"]),
    ("docker.io/library/redis:7", ["--save", ""], None),  # Redis alone, without the Argo CD it may serve
])
def test_what_no_component_runs_is_none(image: str, args: list[str] | None, command: list[str] | None) -> None:
    assert by_containers(spec(image, args, command)) is None


def test_redis_haproxy_and_redis_ha_are_companions() -> None:
    redis = by_containers(spec("docker.io/bitnami/redis:8.2.1-debian-12-r0",
                               ["-ec", "/opt/bitnami/scripts/start-scripts/start-master.sh"], ["/bin/bash"]),
                          companions=True)
    assert redis is not None and redis.rule.component == "redis" and redis.rule.serves == "argo-cd"
    sentinel = {"name": "sentinel", "image": "redis:8.2.3-alpine", "command": ["redis-sentinel"],
                "args": ["/data/conf/sentinel.conf"]}
    ha = by_containers(spec("redis:8.2.3-alpine", ["/data/conf/redis.conf"], ["redis-server"], sentinel),
                       companions=True)
    assert ha is not None and ha.rule.component == "redis-ha" and ha.image == "redis:8.2.3-alpine"
    proxy = by_containers(spec("ecr-public.aws.com/docker/library/haproxy:3.3.10-alpine"), companions=True)
    assert proxy is not None and proxy.rule.component == "redis-ha-haproxy"


def test_a_companion_serves_argo_cd_only_beside_it() -> None:
    (redis,) = [r for r in component_rules() if r.component == "redis"]
    installed = [("argo-cd", "platform", frozenset({"cd"}))]
    assert serves(redis, {"release": "cd", "app": "redis-ha"}, "platform", installed)  # redis-ha's own labels
    assert serves(redis, {"app.kubernetes.io/instance": "cd"}, "platform", installed)
    assert serves(redis, {"app.kubernetes.io/part-of": "argocd"}, "elsewhere", [])
    assert not serves(redis, {"app.kubernetes.io/instance": "shop"}, "platform", installed)  # another release
    assert not serves(redis, {"app.kubernetes.io/instance": "cd"}, "shop", installed)  # another namespace
    assert not serves(redis, {}, "platform", installed)
    assert not serves(redis, {"release": "cd"}, "platform", [("argo-rollouts", "platform", frozenset({"cd"}))])


@pytest.mark.parametrize(("container", "programs"), [
    ({"args": ["/usr/local/bin/argocd-server", "--port=8080"]}, ("argocd-server",)),
    ({"command": ["sh", "-c", "entrypoint.sh argocd-repo-server --redis x:6379"]}, ("argocd-repo-server",)),
    ({"command": ["/shared/argocd-dex"], "args": ["rundex"]}, ("argocd-dex", "rundex")),
    ({"command": ["/bin/bash"], "args": ["-ec", "/opt/bitnami/scripts/start-scripts/start-master.sh"]},
     ("start-master.sh",)),
    ({"args": ["--configmap", "workflow-controller-configmap"]}, ()),
    ({"command": ["tini", "--", "/usr/bin/workflow-controller"], "args": ["--namespaced"]}, ("workflow-controller",)),
    ({"command": "not-a-list", "args": [7, "x"]}, ("7", "x")),
    ({}, ()),
])
def test_programs_are_the_first_words_a_container_runs(container: dict[str, Any], programs: tuple[str, ...]) -> None:
    assert container_programs(container) == programs


def test_the_containers_kept_are_a_pods_or_a_workloads_template() -> None:
    container = {"image": "quay.io/argoproj/argocd:v3.5.1", "args": ["/usr/local/bin/argocd-server"]}
    kept = (("quay.io/argoproj/argocd:v3.5.1", ("argocd-server",)),)
    assert pod_containers({"kind": "Pod", "spec": {"containers": [container]}}) == kept
    for kind in ("Deployment", "StatefulSet", "DaemonSet"):
        assert pod_containers({"kind": kind, "spec": {"template": {"spec": {"containers": [container]}}}}) == kept
    assert pod_containers({"kind": "Job", "spec": {"template": {"spec": {"containers": [container]}}}}) == ()
    assert pod_containers({"kind": "Pod", "spec": {"containers": "x"}}) == ()
    assert pod_containers({"kind": "Pod", "spec": {"containers": [None, {"image": 7}]}}) == (("", ()), ("7", ()))


@pytest.mark.parametrize(("image", "name"), [
    ("quay.io/argoproj/argocd:v3.5.1", "argocd"), ("argocd", "argocd"), ("localhost:5000/argocd:v1", "argocd"),
    ("docker.io/bitnami/argo-cd@sha256:3f1c", "argo-cd"), ("", ""),
])
def test_image_names_leave_registry_and_tag_out(image: str, name: str) -> None:
    assert image_name(image) == name


def test_labels_still_name_a_component_whose_containers_say_nothing() -> None:
    rule = by_labels({"app.kubernetes.io/name": "argocd-repo-server"})
    assert rule is not None and rule.component == "repo-server"
    assert by_labels({"app": "controller-manager"}) is None  # without part-of: another project's controller-manager
    assert by_labels({"app": ["argocd-repo-server"]}) is None


def test_every_row_can_be_found_and_names_a_known_product() -> None:
    for row in load_rows("components.yaml"):
        assert row.get("images") or row.get("programs") or row.get("labels"), row["component"]
        assert row.get("serves") in (None, *PART_OF)
        assert set(row) <= {"component", "product", "images", "programs", "labels", "prefixes", "part_of", "serves",
                            "source", "kubernetes_api"}, row["component"]
