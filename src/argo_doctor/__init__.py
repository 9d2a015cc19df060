"""argo-doctor: find out why Argo CD misbehaves, with evidence, and fix what is safe to fix."""

__version__ = "0.1.0"
ARGOCD_PARITY = "v3.5.1"
"""The Argo CD release whose built-in health checks (gitops-engine kinds, HPA, CRD, Rollout) `health` follows: here,
so that `--version` says it without loading the checks.

One addition from Argo CD's main branch (after v3.5.1): the Pod annotation
`argocd.argoproj.io/ignore-restart-policy: "true"`, which is not honoured on hook pods.
"""
