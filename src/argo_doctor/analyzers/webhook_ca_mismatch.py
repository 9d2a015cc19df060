"""webhook-ca-mismatch: a webhook's caBundle that does not match the CA its serving pods use.

Compares, by fingerprint only, `clientConfig.caBundle` with the `ca.crt` of the Secrets mounted
by the pods behind the webhook's Service. A mismatch means every call fails TLS verification
(`x509: certificate signed by unknown authority`). A Secret mounted through `subPath` is never
refreshed by the kubelet, so after any rotation the pod keeps serving the old certificate until it
restarts. A caBundle rendered by a chart that generates its CA on every render is flagged too.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence, regenerating_chart
from argo_doctor.facts.webhooks import WEBHOOK_NEEDS, Webhook, backing_service, serving_pods, webhooks
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.sources.redact import fingerprint

CA_KEYS = ("ca.crt",)
DOCS = (
    "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#service-reference",
    "https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-files-from-a-pod",
    "https://cert-manager.io/docs/concepts/ca-injector/",
)


def secret_mounts(pod: Obj) -> list[tuple[str, bool]]:
    """(Secret name, mounted through subPath) for every Secret volume the pod's containers mount."""
    volumes: dict[str, list[str]] = {}
    for volume in as_list(pod.spec.get("volumes")):
        volume = mapping(volume)
        names = [str(mapping(volume.get("secret")).get("secretName") or "")]
        for source in as_list(mapping(volume.get("projected")).get("sources")):
            names.append(str(mapping(mapping(source).get("secret")).get("name") or ""))
        volumes[str(volume.get("name"))] = [n for n in names if n]
    found: dict[str, bool] = {}
    for container in as_list(pod.spec.get("containers")):
        for mount in as_list(mapping(container).get("volumeMounts")):
            mount = mapping(mount)
            for secret in volumes.get(str(mount.get("name")), []):
                found[secret] = found.get(secret, False) or bool(mount.get("subPath"))
    return sorted(found.items())


def bundle_fingerprint(ca_bundle: str) -> str | None:
    """The fingerprint of a caBundle's PEM, as Secrets' values are fingerprinted at load time."""
    try:
        return fingerprint(base64.b64decode(ca_bundle, validate=True))
    except (binascii.Error, ValueError):
        return None


class WebhookCaMismatch(Analyzer):
    """caBundles that do not match the serving CA, and serving certificates that never refresh."""

    id = "webhook-ca-mismatch"
    title = "Webhook CA does not match its serving certificate"
    needs = Needs(frozenset({"Service", "Endpoints", "discovery.k8s.io/EndpointSlice", "Secret",
                             "argoproj.io/Application"}) | WEBHOOK_NEEDS)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per webhook with a mismatching CA or a certificate mounted through subPath."""
        failures = ctx.webhook_failures()
        for hook in webhooks(ctx.snap):
            service = backing_service(ctx.snap, hook)
            if service is None or not hook.ca_bundle:
                continue
            pods = serving_pods(ctx.snap, service)
            expected = bundle_fingerprint(hook.ca_bundle)
            mismatched, subpath, compared = [], [], []
            for pod in pods:
                for secret_name, via_subpath in secret_mounts(pod):
                    secret = ctx.snap.get("Secret", secret_name, pod.namespace, "")
                    data = mapping(secret.raw.get("data")) if secret is not None else {}
                    for key in CA_KEYS:
                        if key in data and secret is not None:
                            compared.append(secret)
                            if expected is not None and fingerprint_of(str(data[key])) != expected:
                                mismatched.append((pod, secret))
                    if via_subpath and secret is not None:
                        subpath.append((pod, secret))
            regenerates = regenerating_chart(ctx, hook)
            if not (mismatched or subpath):
                continue
            seen = [f.evidence for f in failures if f.webhook == hook.name][:3]
            yield self._finding(hook, expected, mismatched, subpath, regenerates, seen, bool(compared))

    def _finding(
        self, hook: Webhook, expected: str | None, mismatched: list[tuple[Obj, Obj]], subpath: list[tuple[Obj, Obj]],
        regenerates: str | None, seen: list[Evidence], compared: bool,
    ) -> Finding:
        config = hook.config
        lines, evidence = [], [object_evidence(config, f"{hook.path}.clientConfig.caBundle",
                                               f"caBundle of {hook.name}: {expected or 'not base64'}")]
        if mismatched:
            pods = sorted({p.name for p, _ in mismatched})
            secrets = sorted({s.name for _, s in mismatched})
            lines.append(
                f"The caBundle of webhook {hook.name} ({expected}) is not the CA in Secret(s) {', '.join(secrets)} "
                f"that its serving pods {', '.join(pods)} mount: the API server cannot verify the certificate they "
                "serve, and every call fails with x509: certificate signed by unknown authority."
            )
            for _, secret in mismatched[:2]:
                ca = mapping(secret.raw.get("data")).get("ca.crt")
                evidence.append(object_evidence(secret, ".data[ca.crt]", f"{secret.name} ca.crt {ca}"))
        elif compared:
            lines.append(f"The caBundle of webhook {hook.name} matches the CA its serving pods mount now.")
        if subpath:
            lines.append(
                f"Pods {', '.join(sorted({p.name for p, _ in subpath}))} mount Secret(s) "
                f"{', '.join(sorted({s.name for _, s in subpath}))} through subPath, which the kubelet never "
                "refreshes: after a rotation they serve the old certificate until they restart."
            )
            evidence.extend(object_evidence(p, ".spec.containers[].volumeMounts[].subPath",
                                            f"{p.name} mounts {s.name} with subPath") for p, s in subpath[:2])
        if regenerates:
            lines.append(
                f"The chart renders a new CA on every render ({regenerates}): each manifest cache miss can re-apply a "
                "new caBundle and Secret, and for up to a minute the pods serve the old certificate, so calls fail "
                "(see helm-nondeterministic-render and auto-sync-without-change)."
            )
        evidence.extend(seen)
        severity = Severity.CRITICAL if mismatched and hook.failure_policy == "Fail" else (
            Severity.HIGH if mismatched or (subpath and regenerates) else Severity.MEDIUM)
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Webhook {hook.name}: "
            + ("caBundle does not match the serving CA" if mismatched else
               "serving certificate is never refreshed (subPath)"),
            summary=" ".join(lines),
            objects=[config.ref, *(s.ref for _, s in mismatched[:1]), *(p.ref for p, _ in subpath[:1])],
            evidence=evidence,
            remediation=Remediation(
                text=(
                    "Let one source own the certificate and its CA: cert-manager with its CA injector "
                    "(cert-manager.io/inject-ca-from on the webhook configuration), or fixed certificates given to "
                    "the chart. Mount the Secret as a whole volume, not through subPath, so that rotations reach "
                    "the pods; restart the serving pods after a manual rotation."
                ),
                docs=DOCS,
            ),
        )


def fingerprint_of(redacted: str) -> str:
    """The fingerprint inside a redacted Secret value (`<redacted sha256:…>`)."""
    return redacted.removeprefix("<redacted ").removesuffix(">")
