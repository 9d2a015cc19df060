"""rollout-degraded: image and configuration failures get a fix about the image or the missing object."""

from __future__ import annotations

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.sources import bundle
from tests.conftest import BUNDLES


def _remediation(rollout: str) -> str:
    result = run_scan(bundle.load([BUNDLES / "rollouts-mixed"]), select_analyzers(only=("rollout-degraded",)))
    (finding,) = [f for f in result.findings
                  if any(o.kind == "Rollout" and f"{o.namespace}/{o.name}" == rollout for o in f.objects)]
    return finding.remediation.text


def test_image_pull_fix_names_the_image_and_credentials() -> None:
    text = _remediation("media/thumbnailer")
    assert "registry.example.com/media/thumbnailer:2.8.0-rc1" in text
    assert "imagePullSecrets" in text and "`kubectl get secret -n media`" in text
    assert "no logs" in text and "previous logs" not in text


def test_missing_secret_fix_names_the_object() -> None:
    text = _remediation("config/settings-api")
    assert "`kubectl -n config get secret settings-api-db`" in text
    # the bundle holds no Secret of namespace config: the kubelet's message is the only word on it
    assert ("The kubelet's message is the only word on Secret config/settings-api-db: the input holds no Secret in "
            "namespace config (that kind was not collected there), so whether it exists is unknown.") in text
