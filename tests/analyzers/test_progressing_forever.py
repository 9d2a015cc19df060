"""progressing-forever: the missing piece that keeps a managed resource Progressing, only when the input shows it."""

from __future__ import annotations

from collections.abc import Callable

from argo_doctor.model import Severity
from tests.analyzers.stuck_operations import Raw, named, scan
from tests.health.test_lua import CERTIFICATE_SCRIPT

RULE = "progressing-forever"


def _titles(change: Callable[[list[Raw]], None] | None = None,
            collected: str = "2026-11-27T09:02:00Z") -> dict[str, tuple[Severity, str]]:
    """Severity and summary of each finding, by the kind of the resource it is about."""
    found = scan(RULE, change, collected)
    return {f.objects[1].kind: (f.severity, f.summary) for f in found}


def test_an_ingress_class_the_cluster_lacks_and_a_claim_no_pod_uses_are_named() -> None:
    found = _titles()
    assert set(found) == {"Ingress", "PersistentVolumeClaim"}
    assert found["Ingress"][0] == Severity.MEDIUM and "ingress class 'nginx-public'" in found["Ingress"][1]
    assert "(classes: nginx)" in found["Ingress"][1]
    assert found["PersistentVolumeClaim"][0] == Severity.MEDIUM and "WaitForFirstConsumer" in (
        found["PersistentVolumeClaim"][1])


def test_young_resources_are_left_alone() -> None:
    def young(items: list[Raw]) -> None:
        for kind, name in (("Ingress", "checkout"), ("PersistentVolumeClaim", "checkout-receipts")):
            named(items, kind, name)["metadata"]["creationTimestamp"] = "2026-11-27T08:55:00Z"
    assert _titles(young) == {}


def test_an_ingress_with_an_address_or_an_input_without_classes_says_nothing() -> None:
    def served(items: list[Raw]) -> None:
        named(items, "Ingress", "checkout")["status"] = {"loadBalancer": {"ingress": [{"hostname": "a.elb"}]}}
    assert "Ingress" not in _titles(served)

    def no_classes(items: list[Raw]) -> None:
        items[:] = [o for o in items if o["kind"] != "IngressClass"]
    assert "Ingress" not in _titles(no_classes)  # which classes the cluster has is unknown


def test_a_class_whose_controller_does_not_run_is_the_likely_cause_at_low() -> None:
    def stopped(items: list[Raw]) -> None:
        named(items, "Ingress", "checkout")["spec"]["ingressClassName"] = "nginx"
        named(items, "Pod", "ingress-nginx-controller-7c9f8d6b5-q2m4x")["status"]["phase"] = "Failed"
    severity, summary = _titles(stopped)["Ingress"]
    assert severity == Severity.LOW and "no pod of that controller runs" in summary and "cannot prove" in summary

    def running(items: list[Raw]) -> None:
        named(items, "Ingress", "checkout")["spec"]["ingressClassName"] = "nginx"
    assert "Ingress" not in _titles(running)  # served by a running controller: why it has no address is unknown


def test_a_claim_a_pod_uses_is_being_provisioned_and_a_refusal_is_named() -> None:
    def used(items: list[Raw]) -> None:
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "receipts-0", "namespace": "checkout"},
                      "spec": {"volumes": [{"name": "r", "persistentVolumeClaim": {"claimName": "checkout-receipts"}}],
                               "containers": [{"name": "c", "image": "busybox"}]}, "status": {"phase": "Pending"}})
    assert "PersistentVolumeClaim" not in _titles(used)

    def refused(items: list[Raw]) -> None:
        used(items)
        items.append({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "checkout"},
                      "involvedObject": {"kind": "PersistentVolumeClaim", "name": "checkout-receipts",
                                         "namespace": "checkout", "apiVersion": "v1"},
                      "type": "Warning", "reason": "ProvisioningFailed", "count": 3,
                      "message": "failed to provision volume with StorageClass \"gp3\": rpc error: code = Internal "
                                 "desc = Could not create volume: UnauthorizedOperation",
                      "lastTimestamp": "2026-11-27T09:00:00Z"})
    severity, summary = _titles(refused)["PersistentVolumeClaim"]
    assert severity == Severity.MEDIUM and "UnauthorizedOperation" in summary




def _certificate(items: list[Raw]) -> None:
    """A cert-manager Certificate of the checkout Application that nothing ever gave a status."""
    items.append({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                  "metadata": {"name": "checkout-tls", "namespace": "checkout",
                               "creationTimestamp": "2026-11-20T10:04:12Z"},
                  "spec": {"secretName": "checkout-tls", "dnsNames": ["checkout.example-shop.com"],
                           "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer"}}})
    items.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": "argocd"},
                  "data": {"resource.customizations.health.cert-manager.io_Certificate": CERTIFICATE_SCRIPT}})
    named(items, "Application", "checkout")["status"]["resources"].append(
        {"group": "cert-manager.io", "kind": "Certificate", "name": "checkout-tls", "namespace": "checkout",
         "status": "Synced", "version": "v1"})


def test_a_custom_resource_no_controller_ever_looked_at_is_the_likely_cause_at_low() -> None:
    severity, summary = _titles(_certificate)["Certificate"]
    assert severity == Severity.LOW and "no controller of cert-manager.io has looked at it" in summary

    def with_operator(items: list[Raw]) -> None:
        _certificate(items)
        items.append({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "cert-manager", "namespace": "cert-manager"},
                      "spec": {"template": {"spec": {"containers": [
                          {"name": "c", "image": "quay.io/jetstack/cert-manager-controller:v1.16.2"}]}}}})
    assert "Certificate" not in _titles(with_operator)  # an operator runs: why it wrote nothing is unknown
