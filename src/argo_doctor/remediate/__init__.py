"""Remediation: restart Rollouts stuck Degraded, deciding with the rule that explains them (`fix`, `serve`).

`policy` (what may be touched), `decide` (the pure decision), `kube` (the one writing client), `restarter`
(read, decide, re-check, patch, record), `store` (the audit trail, SQLite or PostgreSQL), `service` (the webhook
receiver) and `notifications` (the Argo CD Notifications configuration that calls it).
"""
