"""facts.installation: components, versions, replicas and nodes, ServiceAccounts, and how each integrates, on bundles
made from the upstream manifests (tests/bundles/map-*), and variants of them."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor.facts.installation import (
    InstalledComponent,
    Integration,
    component_permissions,
    installation,
    parse_write_back,
    safe_url,
    updater_config,
)
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from argo_doctor.sources.objects import RawObject
from tests.conftest import BUNDLES

CANARIES = ("canary-header-value-5150", "canary-secret-value-8d41f0")

Edit = Callable[[dict[str, Any]], dict[str, Any] | None]


def load(name: str) -> Snapshot:
    return bundle.load([BUNDLES / name], None)


def variant(tmp_path: Path, name: str, edit: Edit, extra: list[dict[str, Any]] | None = None) -> Snapshot:
    """A copy of a bundle with every object passed through `edit` (None drops it) and `extra` objects added."""
    root = tmp_path / name
    shutil.copytree(BUNDLES / name, root)
    for path in sorted((root / "objects").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        doc["items"] = [item for item in (edit(i) for i in doc["items"]) if item is not None]
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    if extra:
        (root / "objects" / "extra.yaml").write_text(yaml.safe_dump_all(extra, sort_keys=False))
    return bundle.load([root], None)


def named(comps: list[InstalledComponent]) -> dict[str, InstalledComponent]:
    return {c.name: c for c in comps}


def integration(comp: InstalledComponent, target: str) -> Integration:
    (found,) = [i for i in comp.integrations if i.target == target]
    return found


def container(item: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = item["spec"]["template"]["spec"]["containers"][0]
    return found


@pytest.fixture(scope="module")
def v0() -> list[InstalledComponent]:
    return installation(load("map-updater-v0"))


@pytest.fixture(scope="module")
def v1() -> list[InstalledComponent]:
    return installation(load("map-updater-v1"))


@pytest.fixture(scope="module")
def api() -> list[InstalledComponent]:
    return installation(load("map-updater-v0-api"))


def test_components_in_catalogue_order_with_version_replicas_nodes_and_account(v0: list[InstalledComponent]) -> None:
    assert [c.component for c in v0] == ["application-controller", "repo-server", "server", "notifications-controller",
                                         "redis", "image-updater"]
    controller = named(v0)["argocd-application-controller"]
    assert (controller.version, controller.replicas, controller.nodes, controller.service_account) == (
        "v3.4.7", 3, ("node-a", "node-b", "node-c"), "argocd-application-controller")
    assert controller.workload is not None and controller.workload.kind == "StatefulSet"
    assert controller.settings["controller.sharding.algorithm"] == "round-robin"
    assert controller.settings["sharding"] == "3 shards, clusters assigned by round-robin"
    redis = named(v0)["argocd-redis"]
    assert (redis.product, redis.version) == ("redis", "8.2.3-alpine")
    updater = named(v0)["argocd-image-updater"]
    assert (updater.product, updater.version, updater.service_account) == (
        "argocd-image-updater", "v0.15.2", "argocd-image-updater")


def test_server_tls_from_argocd_server_tls_with_its_endpoints(v0: list[InstalledComponent]) -> None:
    server = named(v0)["argocd-server"]
    assert server.settings["server.insecure"] == "false"
    assert server.settings["tls"] == "certificate from Secret argocd-server-tls (tls.crt)"
    clients = integration(server, "clients")
    assert clients.api.startswith("gRPC + HTTPS on :8080 (Service argocd-server 80→8080, 443→8080), certificate from")
    locations = [e.location for e in clients.evidence]
    assert any(loc.endswith('Secret/argocd/argocd-server-tls .data["tls.crt"]') for loc in locations)
    assert any('ConfigMap/argocd/argocd-cmd-params-cm .data["server.insecure"]' in loc for loc in locations)
    assert [e.excerpt for e in clients.evidence if "tls.crt" in e.location] == ["key tls.crt present (value not shown)"]


def test_server_insecure_by_flag(v1: list[InstalledComponent]) -> None:
    server = named(v1)["argocd-server"]
    assert server.settings["server.insecure"] == "true" and server.replicas == 2
    clients = integration(server, "clients")
    assert clients.api == "gRPC + HTTP without TLS on :8080 (Service argocd-server 80→8080, 443→8080)"
    assert [e.excerpt for e in clients.evidence] == ["--insecure"]


def test_server_tls_from_argocd_secret(api: list[InstalledComponent]) -> None:
    assert named(api)["argocd-server"].settings["tls"] == "certificate from Secret argocd-secret (tls.crt)"


def test_server_self_signed_or_unknown(tmp_path: Path) -> None:
    def no_tls(item: dict[str, Any]) -> dict[str, Any] | None:
        if item["kind"] == "Secret" and item["metadata"]["name"] == "argocd-server-tls":
            return None
        return item

    server = named(installation(variant(tmp_path, "map-updater-v0", no_tls)))["argocd-server"]
    assert server.settings["tls"].startswith("self-signed certificate generated at start-up")

    def no_secret(item: dict[str, Any]) -> dict[str, Any] | None:
        return None if item["kind"] == "Secret" else item

    server = named(installation(variant(tmp_path / "2", "map-updater-v0", no_secret)))["argocd-server"]
    assert server.settings["tls"] == "certificate source unknown (the input holds no Secret of the namespace)"


def test_server_insecure_from_cmd_params(tmp_path: Path) -> None:
    def insecure(item: dict[str, Any]) -> dict[str, Any]:
        if item["kind"] == "ConfigMap" and item["metadata"]["name"] == "argocd-cmd-params-cm":
            item["data"]["server.insecure"] = "true"
        return item

    server = named(installation(variant(tmp_path, "map-updater-v0", insecure)))["argocd-server"]
    assert server.settings["server.insecure"] == "true"
    assert integration(server, "clients").api.startswith("gRPC + HTTP without TLS")


def test_repo_server_and_redis_links(v0: list[InstalledComponent]) -> None:
    repo = named(v0)["argocd-repo-server"]
    assert repo.settings["automountServiceAccountToken"] == "false"
    assert not [i for i in repo.integrations if i.target == "kubernetes-api"]
    redis = integration(repo, "argocd-redis")
    assert redis.api == "Redis argocd-redis:6379 (plain TCP)"
    assert redis.auth == "password from Secret argocd-redis key auth (Secret absent)"
    server = named(v0)["argocd-server"]
    repo_link = integration(server, "argocd-repo-server")
    assert repo_link.api == "gRPC argocd-repo-server:8081 (TLS, certificate not verified)"


def test_updater_v0_kubernetes_mode_and_write_back(v0: list[InstalledComponent]) -> None:
    updater = named(v0)["argocd-image-updater"]
    assert dict(updater.settings) == {"generation": "v0", "applications_api": "kubernetes",
                                      "applications scope": "every namespace",
                                      "write-back": "argocd, git:secret:shop/git-creds"}
    kube = integration(updater, "kubernetes-api")
    assert kube.api == "Kubernetes API (argoproj.io/v1alpha1 applications: list, update)"
    assert kube.auth == "ServiceAccount argocd/argocd-image-updater"
    assert "annotated Applications argocd/web-frontend, argocd/checkout" in kube.purpose
    assert [e.excerpt for e in kube.evidence] == ["APPLICATIONS_API from ConfigMap argocd-image-updater-config key "
                                                  "applications_api", "no key applications_api"]
    git = integration(updater, "git")
    assert git.auth == "git credentials from Secret shop/git-creds (name only)"
    assert git.purpose == "write-back git:secret:shop/git-creds for Application argocd/web-frontend"
    assert git.evidence[0].location.endswith(
        'Application/argocd/web-frontend .metadata.annotations["argocd-image-updater.argoproj.io/write-back-method"]')


def test_updater_v0_argocd_api_mode(api: list[InstalledComponent]) -> None:
    updater = named(api)["argocd-image-updater"]
    assert updater.settings["applications_api"] == "argocd"
    assert updater.settings["applications scope"] == "argocd"  # v0.14: Argo CD's namespace only
    server = integration(updater, "argocd-server")
    assert server.api == "Argo CD API (gRPC) argocd-server.argocd:443 (TLS, certificate not verified)"
    assert server.auth == "Argo CD API token from Secret argocd-image-updater-secret key argocd.token (key absent)"
    excerpts = [e.excerpt for e in server.evidence]
    assert "applications_api: argocd" in excerpts and "argocd.insecure: true" in excerpts
    assert "no key argocd.token" in excerpts
    assert integration(updater, "kubernetes-api").api == "Kubernetes API (HTTPS, in-cluster)"


def test_updater_v1_image_updater_resources(v1: list[InstalledComponent]) -> None:
    updater = named(v1)["argocd-image-updater-controller"]
    assert updater.settings["generation"] == "v1" and updater.settings["applications scope"] == "every namespace"
    kube = integration(updater, "kubernetes-api")
    assert kube.api == ("Kubernetes API (argoproj.io/v1alpha1 applications: get, list, watch, update; "
                        "argocd-image-updater.argoproj.io/v1alpha1 imageupdaters)")
    assert "ImageUpdater resources argocd/shop-images" in kube.purpose
    assert "--watch-namespaces '*'" in kube.purpose
    git = integration(updater, "git")
    assert git.auth == "git credentials from Secret shop/git-creds (name only)"
    assert updater.settings["write-back"] == "argocd, git:secret:git-creds"


def test_updater_v1_config_targets_and_scopes() -> None:
    snap = load("map-updater-v1")
    (comp,) = [c for c in snap.components if c.name == "image-updater"]
    config = updater_config(snap, comp)
    assert config is not None and config.generation == "v1" and config.kubernetes_mode
    assert config.scope is None and config.targets == ("shop",)
    assert [(w.method, w.secret, w.path) for w in config.write_backs] == [
        ("git", ("shop", "git-creds"), ".spec.writeBackConfig"),
        ("argocd", None, ".spec.applicationRefs[1].writeBackConfig")]


def test_updater_v1_default_scope_is_its_namespace(tmp_path: Path) -> None:
    def default_watch(item: dict[str, Any]) -> dict[str, Any]:
        if item["kind"] == "ConfigMap" and item["metadata"]["name"] == "argocd-image-updater-config":
            item["data"] = {"log.level": "info"}
        return item

    snap = variant(tmp_path, "map-updater-v1", default_watch)
    (comp,) = [c for c in snap.components if c.name == "image-updater"]
    config = updater_config(snap, comp)
    assert config is not None and config.scope == ("argocd",)
    assert config.scope_source == "its own namespace (v1.2 and later, no --watch-namespaces)"


def test_flags_win_over_environment_and_boolean_flags_take_no_value(tmp_path: Path) -> None:
    def flags(item: dict[str, Any]) -> dict[str, Any]:
        if item["kind"] == "Deployment" and item["metadata"]["name"] == "argocd-image-updater":
            container(item)["args"] = ["run", "--applications-api=argocd", "--argocd-plaintext", "--loglevel", "debug",
                                       "--argocd-server-addr", "argocd-server.argocd:80", "--argocd-auth-token",
                                       "canary-secret-value-8d41f0-inline"]
        return item

    snap = variant(tmp_path, "map-updater-v0", flags)
    updater = named(installation(snap))["argocd-image-updater"]
    server = integration(updater, "argocd-server")
    assert server.api == "Argo CD API (gRPC) argocd-server.argocd:80 (plaintext)"
    assert server.auth == "Argo CD API token given inline with --argocd-auth-token (value not shown)"
    assert updater.settings["argocd.plaintext"] == "true"
    assert "--applications-api=argocd" in [e.excerpt for e in server.evidence]
    assert not any(c in repr(updater) for c in CANARIES)


def test_generation_from_markers_when_the_tag_says_nothing(tmp_path: Path) -> None:
    def latest(item: dict[str, Any]) -> dict[str, Any]:
        if item["kind"] == "Deployment" and "image-updater" in item["metadata"]["name"]:
            container(item)["image"] = container(item)["image"].rsplit(":", 1)[0] + ":latest"
        return item

    snap = variant(tmp_path, "map-updater-v1", latest)
    updater = named(installation(snap))["argocd-image-updater-controller"]
    assert (updater.version, updater.settings["generation"]) == ("latest", "v1")
    snap = variant(tmp_path / "v0", "map-updater-v0", latest)
    (comp,) = [c for c in snap.components if c.name == "image-updater"]
    config = updater_config(snap, comp)
    assert config is not None and config.generation == "v0" and config.scope == ("argocd",)
    assert "version unknown; the narrower is assumed" in config.scope_source


def test_version_from_digest_falls_back_to_the_version_label(tmp_path: Path) -> None:
    def digest(item: dict[str, Any]) -> dict[str, Any]:
        if item["kind"] == "Deployment" and item["metadata"]["name"] == "argocd-image-updater":
            container(item)["image"] = "quay.io/argoprojlabs/argocd-image-updater@sha256:" + "ab" * 32
            item["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/version"] = "v0.15.2"
        return item

    updater = named(installation(variant(tmp_path, "map-updater-v0", digest)))["argocd-image-updater"]
    assert updater.version == "v0.15.2"


def test_sharding_mismatch_is_said(tmp_path: Path) -> None:
    def mismatch(item: dict[str, Any]) -> dict[str, Any]:
        if item["kind"] == "StatefulSet":
            for env in container(item)["env"]:
                if env["name"] == "ARGOCD_CONTROLLER_REPLICAS":
                    env["value"] = "1"
        return item

    controller = named(installation(variant(tmp_path, "map-updater-v0", mismatch)))["argocd-application-controller"]
    assert controller.settings["sharding"].startswith("ARGOCD_CONTROLLER_REPLICAS=1 but 3 replicas run")


def test_notification_services_with_header_names_and_triggers(v0: list[InstalledComponent]) -> None:
    notifications = named(v0)["argocd-notifications-controller"]
    assert notifications.settings["notification services"] == "webhook:rollout-restarter, slack:slack"
    webhook = integration(notifications, "webhook:rollout-restarter")
    assert webhook.api == "webhook https://restarter.ops.svc:8443/hooks/argocd"  # the query is dropped
    assert webhook.auth == ("headers X-Team, Authorization (values not shown); argocd-notifications-secret keys "
                            "restarter-token")
    assert webhook.purpose == "notifications for triggers: on-health-degraded"
    assert webhook.evidence[0].location.endswith(
        'ConfigMap/argocd/argocd-notifications-cm .data["service.webhook.rollout-restarter"]')
    slack = integration(notifications, "slack:slack")
    assert (slack.auth, slack.purpose) == ("argocd-notifications-secret keys slack-token",
                                           "notifications for triggers: on-sync-failed")


def test_rollouts_notifications(v1: list[InstalledComponent]) -> None:
    rollouts = named(v1)["argo-rollouts"]
    assert rollouts.settings["namespaced"] == "false"
    webhook = integration(rollouts, "webhook:restarter")
    assert (webhook.auth, webhook.purpose) == ("headers X-Team (values not shown)",
                                               "notifications for triggers: on-rollout-aborted")


def test_no_secret_or_header_value_in_the_facts(v0: list[InstalledComponent], v1: list[InstalledComponent],
                                                 api: list[InstalledComponent]) -> None:
    text = repr((v0, v1, api))
    for canary in CANARIES:
        assert canary not in text


def test_parse_write_back() -> None:
    assert parse_write_back("argocd", "shop") == ("argocd", "", None)
    assert parse_write_back(" git ", "shop") == ("git", "repocreds", None)
    assert parse_write_back("git:repocreds", "shop") == ("git", "repocreds", None)
    assert parse_write_back("git:secret:argocd/git-creds", "shop") == ("git", "secret:argocd/git-creds",
                                                                      ("argocd", "git-creds"))
    assert parse_write_back("git:secret:git-creds", "shop") == ("git", "secret:git-creds", ("shop", "git-creds"))


def test_safe_url_drops_credentials() -> None:
    assert safe_url("https://user:pass@hooks.example.com/a/b?token=x#f") == "https://hooks.example.com/a/b"
    assert safe_url("$webhook-url") == "$webhook-url"
    assert safe_url("not a url") == ""


def _workload(name: str, labels: dict[str, str], kind: str = "Deployment", image: str = "x:v1.0.0") -> RawObject:
    return RawObject({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "ns",
                                                                          "labels": labels},
                      "spec": {"template": {"metadata": {"labels": labels},
                                            "spec": {"containers": [{"name": "main", "image": image}]}}}}, "t.yaml:1")


def test_catalogue_recognises_events_rollouts_dashboard_and_redis_ha() -> None:
    snap = Snapshot("test")
    snap.add(_workload("webhook-eventsource-7x2kq", {"controller": "eventsource-controller",
                                                     "eventsource-name": "webhook", "owner-name": "webhook"}))
    snap.add(_workload("restart-sensor-k8f2s", {"controller": "sensor-controller", "sensor-name": "restart"}))
    snap.add(_workload("argo-rollouts-dashboard", {"app.kubernetes.io/name": "argo-rollouts-dashboard"}))
    snap.add(_workload("argo-rollouts", {"app.kubernetes.io/name": "argo-rollouts"}))
    snap.add(_workload("argocd-redis-ha-server", {"app.kubernetes.io/name": "argocd-redis-ha"}, "StatefulSet"))
    snap.add(_workload("argocd-redis-ha-haproxy", {"app.kubernetes.io/name": "argocd-redis-ha-haproxy"}))
    comps = named(installation(snap))
    assert {name: c.component for name, c in comps.items()} == {
        "webhook-eventsource-7x2kq": "events-eventsource", "restart-sensor-k8f2s": "events-sensor",
        "argo-rollouts-dashboard": "rollouts-dashboard", "argo-rollouts": "rollouts-controller",
        "argocd-redis-ha-server": "redis-ha", "argocd-redis-ha-haproxy": "redis-ha-haproxy"}
    assert comps["webhook-eventsource-7x2kq"].settings["eventsource-name"] == "webhook"
    assert integration(comps["argocd-redis-ha-haproxy"], "argocd-redis-ha").api.startswith("Redis 6379")


def test_component_permissions_share_one_resolution_per_account() -> None:
    snap = load("map-updater-v0")
    comps = installation(snap)
    perms = component_permissions(snap, comps)
    assert set(perms) == {(c.namespace, c.name) for c in comps}
    updater = perms[("argocd", "argocd-image-updater")]
    assert {(g.api_group, g.resource, g.namespace) for g in updater.grants} >= {
        ("argoproj.io", "applications", None), ("", "secrets", "argocd")}


CHART_INSTALLS = {
    ("cd-platform", "gitops-argo-cd-app-controller"): ("application-controller", "argo-cd", "3.1.1-debian-12-r0"),
    ("cd-platform", "gitops-argo-cd-repo-server"): ("repo-server", "argo-cd", "3.1.1-debian-12-r0"),
    ("cd-platform", "gitops-argo-cd-server"): ("server", "argo-cd", "3.1.1-debian-12-r0"),
    ("cd-platform", "gitops-argo-cd-applicationset-controller"): ("applicationset-controller", "argo-cd",
                                                                  "3.1.1-debian-12-r0"),
    ("cd-platform", "gitops-argo-cd-notifications"): ("notifications-controller", "argo-cd", "3.1.1-debian-12-r0"),
    ("cd-platform", "gitops-argo-cd-dex"): ("dex-server", "dex", "2.43.1-debian-12-r8"),
    ("cd-platform", "gitops-redis-master"): ("redis", "redis", "8.2.1-debian-12-r0"),
    ("platform", "cd-argocd-application-controller"): ("application-controller", "argo-cd", "v3.4.4"),
    ("platform", "cd-argocd-repo-server"): ("repo-server", "argo-cd", "v3.4.4"),
    ("platform", "cd-argocd-server"): ("server", "argo-cd", "v3.4.4"),
    ("platform", "cd-argocd-notifications-controller"): ("notifications-controller", "argo-cd", "v3.4.4"),
    ("platform", "cd-redis-ha-haproxy"): ("redis-ha-haproxy", "haproxy", "3.3.10-alpine"),
    ("platform", "cd-redis-ha-server"): ("redis-ha", "redis", "8.2.3-alpine"),
    ("rollouts", "my-argo-argo-rollouts"): ("rollouts-controller", "argo-rollouts", "v1.9.0"),
    ("rollouts", "my-argo-argo-rollouts-dashboard"): ("rollouts-dashboard", "argo-rollouts", "v1.9.0"),
    ("argo-events", "controller-manager"): ("events-controller", "argo-events", "v1.9.11"),
    ("argo-events", "events-webhook"): ("events-webhook", "argo-events", "v1.9.11"),
    ("workflows", "wf-argo-workflows-controller"): ("workflow-controller", "argo-workflows", "3.7.1-debian-12-r1"),
    ("workflows", "wf-argo-workflows-server"): ("workflows-server", "argo-workflows", "3.7.1-debian-12-r1"),
}


def test_components_of_charts_and_renamed_releases_by_what_they_run() -> None:
    """Bitnami's images, argo-helm's release names, the Rollouts dashboard, Events' unlabelled controller-manager and
    its webhook, redis-ha of a release not called argocd; the chart's helm test pods are none of them."""
    found = installation(load("install-charts"))
    assert {(c.namespace, c.name): (c.component, c.product, c.version) for c in found} == CHART_INSTALLS
    redis = named(found)["cd-argocd-server"].settings["redis"]
    assert redis == "cd-redis-ha-haproxy:6379"


def test_redis_of_another_release_or_namespace_is_not_argo_cds(tmp_path: Path) -> None:
    def cache(name: str, namespace: str, release: str) -> dict[str, Any]:
        labels = {"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": release,
                  "app.kubernetes.io/component": "master"}
        return {"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [
                    {"name": "redis", "image": "docker.io/bitnami/redis:8.2.1-debian-12-r0"}]}}}}

    snap = variant(tmp_path, "install-charts", lambda item: item, [
        cache("shop-cache-redis-master", "cd-platform", "shop-cache"),  # beside Argo CD, another release
        cache("gitops-redis-master", "shop", "gitops"),  # Argo CD's release name, another namespace
    ])
    redis = [(c.namespace, c.workload.name if c.workload else "") for c in snap.components if c.product == "redis"]
    assert sorted(redis) == [("cd-platform", "gitops-redis-master"), ("platform", "cd-redis-ha-server")]


def test_a_helm_test_pod_alone_is_no_component(tmp_path: Path) -> None:
    """The redis-ha chart's test pods (release argocd here, so that their names start like Argo CD's Redis) run
    shellcheck and the Redis image with the release's labels, without a workload."""
    def release_argocd(item: dict[str, Any]) -> dict[str, Any] | None:
        if item["kind"] == "StatefulSet":
            return None
        if item["kind"] == "Pod":
            item["metadata"]["name"] = item["metadata"]["name"].replace("cd-", "argocd-", 1)
        return item

    snap = variant(tmp_path, "install-charts", release_argocd)
    tests = {"argocd-redis-ha-configmap-test", "argocd-redis-ha-service-test"}
    assert {p.name for p in snap.of_kind("Pod", "")} == tests
    assert not [p.name for c in snap.components for p in c.pods]
