"""out-of-sync-writer: the field Git sets that another manager rewrites, named from managedFields as the API server
writes them; Git's own changes and fields Git does not set are never blamed on anyone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from argo_doctor.facts.managed_fields import owned_paths
from argo_doctor.model import Severity
from tests.analyzers.stuck_operations import BUNDLE, Raw, named, scan
from tests.conftest import scan_json

RULE = "out-of-sync-writer"


def test_field_sets_resolve_keyed_items_against_the_live_object() -> None:
    live = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar"}, {"name": "api", "image": "x"}]}}},
            "metadata": {"finalizers": ["a", "b"]}}
    fields = {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        'k:{"name":"api"}': {".": {}, "f:image": {}}, 'k:{"name":"gone"}': {"f:image": {}}}}}},
        "f:metadata": {"f:finalizers": {".": {}, 'v:"b"': {}}}}
    assert sorted(owned_paths(fields, live), key=str) == sorted(
        [("spec", "template", "spec", "containers", 1, "image"), ("metadata", "finalizers", 1)], key=str)


def test_an_autoscaler_rewriting_the_replicas_git_sets_fights_self_heal() -> None:
    [finding] = scan(RULE)
    assert finding.severity == Severity.HIGH
    assert "spec.replicas: Git 2, live 5, written by a HorizontalPodAutoscaler" in finding.summary
    assert "HorizontalPodAutoscaler billing/billing-api scales it between 2 and 8 replicas" in finding.summary
    patch = json.loads(finding.remediation.patch or "{}")
    assert patch == {"spec": {"ignoreDifferences": [{"group": "apps", "kind": "Deployment",
                                                     "jsonPointers": ["/spec/replicas"]}],
                              "syncPolicy": {"syncOptions": ["RespectIgnoreDifferences=true"]}}}


def test_a_field_git_does_not_set_or_a_change_only_argo_cd_made_is_no_other_writer_s() -> None:
    def unset(items: list[Raw]) -> None:
        deployment = named(items, "Deployment", "billing-api")
        applied = json.loads(deployment["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
        del applied["spec"]["replicas"]
        deployment["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(applied)
    assert scan(RULE, unset) == []

    def git_changed(items: list[Raw]) -> None:  # live as Argo CD applied it: the OutOfSync is Git's new commit
        deployment = named(items, "Deployment", "billing-api")
        deployment["metadata"]["managedFields"] = deployment["metadata"]["managedFields"][:1]
        deployment["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"] = {}
        deployment["spec"]["replicas"] = 2
    assert scan(RULE, git_changed) == []

    def server_side(items: list[Raw]) -> None:
        del named(items, "Deployment", "billing-api")["metadata"]["annotations"][
            "kubectl.kubernetes.io/last-applied-configuration"]
    assert scan(RULE, server_side) == []


def test_someone_editing_an_image_is_named_and_existing_entries_are_kept_in_the_patch() -> None:
    def edited(items: list[Raw]) -> None:
        deployment = named(items, "Deployment", "billing-api")
        edit = {"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "manager": "kubectl-edit", "operation": "Update",
                "time": "2026-11-27T08:30:00Z", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                    'k:{"name":"api"}': {"f:image": {}}}}}}}}
        deployment["metadata"]["managedFields"] = [deployment["metadata"]["managedFields"][0], edit]
        deployment["spec"]["replicas"] = 2
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        container["image"] = "registry.example-shop.com/billing/api:hotfix"
        app = named(items, "Application", "billing")
        app["spec"]["syncPolicy"] = {"automated": {"prune": True}}
        app["spec"]["ignoreDifferences"] = [{"group": "", "kind": "Service", "jsonPointers": ["/spec/clusterIP"]}]
    [finding] = scan(RULE, edited)
    assert finding.severity == Severity.MEDIUM
    assert "spec.template.spec.containers.0.image: Git \"registry.example-shop.com/billing/api:2.13.2\", live " \
           "\"registry.example-shop.com/billing/api:hotfix\", written by someone with kubectl edit" in finding.summary
    entries = json.loads(finding.remediation.patch or "{}")["spec"]["ignoreDifferences"]
    assert entries[0] == {"group": "", "kind": "Service", "jsonPointers": ["/spec/clusterIP"]} and len(entries) == 2


def test_self_heal_undoing_another_writer_is_not_blamed_on_the_render() -> None:
    """auto-sync-without-change sees the same revision synced again; the cause it gives is the other writer."""
    def resynced(items: list[Raw]) -> None:
        app = named(items, "Application", "billing")
        revision = app["status"]["sync"]["revision"]
        source = app["spec"]["source"]
        app["status"]["history"] = [
            {"id": 40, "revision": revision, "source": source, "initiatedBy": {"automated": True},
             "deployStartedAt": "2026-11-26T22:10:02Z", "deployedAt": "2026-11-26T22:10:09Z"},
            {"id": 41, "revision": revision, "source": source, "initiatedBy": {"automated": True},
             "deployStartedAt": "2026-11-27T07:58:31Z", "deployedAt": "2026-11-27T07:58:35Z"}]
        app["status"]["operationState"]["phase"] = "Succeeded"
    [finding] = scan("auto-sync-without-change", resynced)
    assert "Here the live state moves, not the render: a HorizontalPodAutoscaler" in finding.summary
    assert "rendered different manifests" not in finding.summary


def _argo_alone(items: list[Raw]) -> Raw:
    """billing-api as Argo CD alone wrote it: no HPA entry, Git's replicas."""
    deployment = named(items, "Deployment", "billing-api")
    deployment["metadata"]["managedFields"] = deployment["metadata"]["managedFields"][:1]
    deployment["spec"]["replicas"] = 2
    return deployment


DIGEST = "registry.example-shop.com/billing/api:2.13.2@sha256:" + "5e" * 32


def _digest(items: list[Raw]) -> Raw:
    deployment = _argo_alone(items)
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = DIGEST
    return deployment


def test_a_policy_that_rewrites_a_field_on_the_way_in_is_named_by_its_record() -> None:
    def kyverno(items: list[Raw]) -> None:
        _digest(items)["metadata"]["annotations"]["policies.kyverno.io/last-applied-patches"] = (
            "verify-images.verify-signature.kyverno.io: replaced /spec/template/spec/containers/0/image\n")
    [finding] = scan(RULE, kyverno)
    assert finding.severity == Severity.MEDIUM and "changed on the way in" in finding.title
    assert "Kyverno (verify-images.verify-signature.kyverno.io: replaced" in finding.summary
    assert "/spec/template/spec/containers/0/image" in finding.remediation.text


def test_a_matching_mutating_webhook_is_the_likely_cause_and_none_is_said_at_low() -> None:
    def hooked(items: list[Raw]) -> None:
        _digest(items)
        items.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                      "metadata": {"name": "image-digests"}, "webhooks": [{
                          "name": "resolve.digests.example.com", "sideEffects": "None",
                          "admissionReviewVersions": ["v1"],
                          "clientConfig": {"service": {"name": "digests", "namespace": "security"}},
                          "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                     "resources": ["deployments"]}]}]})
    [finding] = scan(RULE, hooked)
    assert finding.severity == Severity.LOW and "image-digests (resolve.digests.example.com)" in finding.summary
    [alone] = scan(RULE, _digest)
    assert alone.severity == Severity.LOW and "no mutating webhook of the input matches" in alone.summary


def test_a_quantity_the_api_server_respells_is_normalisation_not_a_writer() -> None:
    def respelled(items: list[Raw]) -> None:
        deployment = _argo_alone(items)
        annotations = deployment["metadata"]["annotations"]
        applied = json.loads(annotations["kubectl.kubernetes.io/last-applied-configuration"])
        applied["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1000m"}}
        annotations["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(applied)
        deployment["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    [finding] = scan(RULE, respelled)
    assert finding.severity == Severity.LOW and "in its own spelling" in finding.summary
    assert "ServerSideDiff=true" in finding.remediation.text
    assert scan(RULE, _argo_alone) == []  # as applied: nothing changed on the way in


def test_the_self_heal_attempts_of_the_fight_are_counted() -> None:
    def healed(items: list[Raw]) -> None:
        state = named(items, "Application", "billing")["status"]["operationState"]
        state["operation"]["sync"]["autoHealAttemptsCount"] = 7
    [finding] = scan(RULE, healed)
    assert "Argo CD has self-healed it 7 times at this revision (the last attempt started 2026-11-27T08:10:04Z)" \
        in finding.summary
    assert any(".autoHealAttemptsCount" in e.location for e in finding.evidence)


def test_a_field_a_known_writer_took_from_a_server_side_apply_is_the_likely_cause() -> None:
    def server_side(items: list[Raw]) -> None:
        deployment = named(items, "Deployment", "billing-api")
        del deployment["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        argo = deployment["metadata"]["managedFields"][0]
        argo["manager"], argo["operation"] = "argocd-controller", "Apply"
    [finding] = scan(RULE, server_side)
    assert finding.severity == Severity.LOW and "likely written by kube-controller-manager" in finding.title
    assert "took spec.replicas over from Argo CD's server-side apply" in finding.summary

    def nobody(items: list[Raw]) -> None:
        server_side(items)
        deployment = named(items, "Deployment", "billing-api")
        deployment["metadata"]["managedFields"] = deployment["metadata"]["managedFields"][:1]
    assert scan(RULE, nobody) == []

    def policy(items: list[Raw]) -> None:  # nobody took a field, but a policy recorded its patch at admission
        nobody(items)
        named(items, "Deployment", "billing-api")["metadata"]["annotations"][
            "policies.kyverno.io/last-applied-patches"] = "add-safe-to-evict.add-annotation.kyverno.io: added /spec/x\n"
        named(items, "Application", "billing")["metadata"]["annotations"] = {
            "argocd.argoproj.io/compare-options": "IgnoreExtraneous"}
    [finding] = scan(RULE, policy)
    assert finding.severity == Severity.LOW and finding.title.endswith("OutOfSync: likely changed at admission")
    assert "Kyverno (add-safe-to-evict.add-annotation.kyverno.io: added /spec/x)" in finding.summary
    assert finding.remediation.command == ("kubectl -n argocd annotate application billing --overwrite "
                                           "argocd.argoproj.io/compare-options=IgnoreExtraneous,ServerSideDiff=true")


def _with_heal_lines(tmp_path: Path, synced: str, skipped: str) -> Path:
    """The example with the controller's self-heal sync of billing at `synced` and its back-off at `skipped`."""
    bundle = tmp_path / "fight"
    shutil.copytree(BUNDLE, bundle)
    log = next((bundle / "logs").rglob("argocd-application-controller.log"))
    log.write_text(log.read_text() + "".join(
        f'2026-11-27T{t}.1Z time="2026-11-27T{t}Z" level=info msg="{m}" application=argocd/billing\n' for t, m in (
            (synced, "Initiated automated sync to '8c1f0e6b2d4a9735e1f0c8b6a2d4e9f1b3c5a7d9'"),
            (skipped, "Skipping auto-sync: already attempted sync to [8c1f0e6b2d4a9735e1f0c8b6a2d4e9f1b3c5a7d9] "
                      "with timeout 5s (retrying in 1m20s)"))))
    return bundle


def test_the_controllers_self_heal_lines_are_evidence(tmp_path: Path) -> None:
    bundle = _with_heal_lines(tmp_path, "07:58:31", "08:01:12")
    doc = scan_json(bundle, "--rule", RULE)
    [finding] = doc["findings"]
    assert "last self-heal syncs and back-offs: 2026-11-27T07:58:31.100Z, 2026-11-27T08:01:12.100Z" in (
        finding["summary"])
    assert sum(e["kind"] == "log" for e in finding["evidence"]) == 2


def test_the_write_then_the_self_heal_after_it_is_a_causal_chain(tmp_path: Path) -> None:
    bundle = _with_heal_lines(tmp_path, "08:40:00", "08:59:02")
    [finding] = scan_json(bundle, "--rule", RULE)["findings"]
    steps = [finding["evidence"][s["evidence"]] for s in finding["chain"]]
    assert [s["kind"] for s in steps] == ["object", "log"]  # the 08:40 sync came before the HPA's write
    assert "owns spec.replicas" in steps[0]["excerpt"] and "retrying in 1m20s" in steps[1]["excerpt"]


CERTIFICATES = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "certificates.cert-manager.io"},
    "spec": {"group": "cert-manager.io", "scope": "Namespaced",
             "names": {"kind": "Certificate", "plural": "certificates", "singular": "certificate"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {
                     "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                     "spec": {"type": "object", "properties": {
                         "secretName": {"type": "string"}, "renewBefore": {"type": "string"},
                         "dnsNames": {"type": "array", "items": {"type": "string"}},
                         "issuerRef": {"type": "object", "properties": {
                             "name": {"type": "string"}, "kind": {"type": "string"}}}}},
                     "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
"""The part of cert-manager's v1 Certificate schema that matters here (cert-manager deploy/crds)."""


def _misspelt(items: list[Raw]) -> None:
    """A Certificate of the checkout Application whose Git sets `renewBefor`: the API server prunes it."""
    applied = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
               "metadata": {"name": "checkout-tls", "namespace": "checkout"},
               "spec": {"secretName": "checkout-tls", "renewBefor": "720h", "dnsNames": ["checkout.example-shop.com"],
                        "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer"}}}
    live = json.loads(json.dumps(applied))
    del live["spec"]["renewBefor"]
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)}
    live["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    items += [json.loads(json.dumps(CERTIFICATES)), live]
    named(items, "Application", "checkout")["status"]["resources"].append(
        {"group": "cert-manager.io", "kind": "Certificate", "name": "checkout-tls", "namespace": "checkout",
         "status": "OutOfSync", "version": "v1"})


def test_a_field_the_crd_schema_does_not_declare_is_pruned_for_ever() -> None:
    [finding] = [f for f in scan(RULE, _misspelt) if f.objects[1].kind == "Certificate"]
    assert finding.severity == Severity.MEDIUM and "spec.renewBefor pruned by the API server" in finding.title
    assert "does not declare" in finding.summary

    def kept(items: list[Raw]) -> None:  # the same schema keeping unknown fields under spec
        _misspelt(items)
        crd = next(o for o in items if o["kind"] == "CustomResourceDefinition")  # a copy: _misspelt made it
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] = True
    assert [f for f in scan(RULE, kept) if f.objects[1].kind == "Certificate"] == []


def test_an_unknown_manager_that_took_a_spec_field_from_a_server_side_apply_is_named() -> None:
    def operator(items: list[Raw]) -> None:
        deployment = named(items, "Deployment", "billing-api")
        del deployment["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        argo = deployment["metadata"]["managedFields"][0]
        argo["manager"], argo["operation"] = "argocd-controller", "Apply"
        deployment["metadata"]["managedFields"][1:] = [{
            "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "manager": "sidecar-injector-operator",
            "operation": "Update", "time": "2026-11-27T08:20:00Z",
            "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"api"}': {
                "f:image": {}}}}}}}}]
    [finding] = scan(RULE, operator)
    assert finding.severity == Severity.LOW
    assert "the manager 'sidecar-injector-operator' took spec.template.spec.containers.0.image over" in finding.summary


def test_entries_for_the_kind_that_miss_the_field_are_named() -> None:
    def missed(items: list[Raw]) -> None:
        named(items, "Application", "billing")["spec"]["ignoreDifferences"] = [
            {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replica"]},
            {"group": "extensions", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]},
            {"group": "", "kind": "Service", "jsonPointers": ["/spec/clusterIP"]}]
    [finding] = scan(RULE, missed)
    assert ".spec.ignoreDifferences[0] jsonPointers /spec/replica select none of it" in finding.summary
    assert ".spec.ignoreDifferences[1] names group 'extensions', and the object's is 'apps'" in finding.summary
    assert "ignoreDifferences[2]" not in finding.summary


def _new_commit(items: list[Raw], alone: bool = True) -> Raw:
    """billing compares a newer commit than the one deployed; the Deployment as Argo CD applied it (`alone`)."""
    if alone:
        _argo_alone(items)
    app = named(items, "Application", "billing")
    app["status"]["history"] = [{"id": 3, "revision": "41d9c2e7a0b35f86c1e4d2a9b7f03c5e8d6a1b20",
                                 "deployedAt": "2026-11-26T16:40:12Z", "source": app["spec"]["source"]}]
    app["status"].pop("operationState", None)
    return app


def test_a_resource_out_of_sync_because_git_changed_is_reported_as_git_s_change_at_info() -> None:
    def manual(items: list[Raw]) -> None:
        _new_commit(items)["spec"]["syncPolicy"] = {}
    [finding] = scan(RULE, manual)
    assert finding.severity == Severity.INFO
    assert finding.title == ("Application argocd/billing OutOfSync because Git changed (41d9c2e deployed, 8c1f0e6 "
                             "in Git)")
    assert "1 resource differs because Git changed (Deployment/billing/billing-api)" in finding.summary
    assert "syncs only when someone syncs it" in finding.summary
    assert finding.remediation.command == "argocd app diff argocd/billing && argocd app sync argocd/billing"


def test_a_failed_automated_sync_of_the_new_commit_is_why_it_stays_out_of_sync() -> None:
    def failed(items: list[Raw]) -> None:
        app = _new_commit(items)
        app["spec"]["syncPolicy"] = {"automated": {"prune": True}}
        app["status"]["operationState"] = {
            "operation": {"initiatedBy": {"automated": True}, "sync": {"revision": app["status"]["sync"]["revision"]}},
            "phase": "Failed", "message": "one or more objects failed to apply", "startedAt": "2026-11-27T08:00:00Z",
            "finishedAt": "2026-11-27T08:00:09Z"}
    [finding] = scan(RULE, failed)
    assert "Automated sync tried this revision and ended Failed (2026-11-27T08:00:09Z)" in finding.summary
    assert finding.evidence[-1].excerpt == "automated sync of 8c1f0e6b2d4a Failed"


def test_git_s_change_is_not_said_of_a_resource_another_writer_changed_nor_without_a_newer_revision() -> None:
    def both(items: list[Raw]) -> None:  # the autoscaler's replicas still differ: that writer is the finding
        _new_commit(items, alone=False)
    assert [f.severity for f in scan(RULE, both)] == [Severity.HIGH]

    def same(items: list[Raw]) -> None:
        app = _new_commit(items)
        app["status"]["history"][0]["revision"] = app["status"]["sync"]["revision"]
    assert scan(RULE, same) == []

    def never_synced(items: list[Raw]) -> None:
        _new_commit(items)["status"]["history"] = []
    assert scan(RULE, never_synced) == []


def test_resources_git_adds_or_removes_are_counted() -> None:
    def added(items: list[Raw]) -> None:
        app = _new_commit(items)
        app["status"]["resources"] += [
            {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "billing", "name": "billing-flags",
             "status": "OutOfSync", "health": {"status": "Missing"}},
            {"group": "", "version": "v1", "kind": "Service", "namespace": "billing", "name": "billing-old",
             "status": "OutOfSync", "requiresPruning": True}]
    [finding] = scan(RULE, added)
    assert "3 resources differ because Git changed" in finding.summary
    assert "1 new in Git, 1 removed from Git" in finding.summary
