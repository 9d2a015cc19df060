"""`argo-doctor audit`: the decisions of `serve` and `fix --apply`."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from argo_doctor.cli.common import table_width
from argo_doctor.cli.group import errors_to_exit, main


@main.command("audit", short_help="The decisions of serve and fix --apply.")
@click.option("--audit-db", required=True, envvar="ARGO_DOCTOR_AUDIT_DB",
              help="The audit store: sqlite:///ABS/PATH (or a path), or postgresql://... (env ARGO_DOCTOR_AUDIT_DB).")
@click.option("--since", default="24h", show_default=True, help="Only decisions this recent (90m, 24h, 7d).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many decisions, newest first.")
@click.option("-o", "--output", type=click.Choice(["table", "wide", "json"]), default="table", show_default=True,
              help="table: fitted to the terminal; wide: every text whole.")
def audit_command(audit_db: str, since: str, limit: int | None, output: str) -> None:
    """Show the decisions of `serve` and `fix --apply`, newest first: what was notified, the verdict, the policy
    outcome, the patch and the API's answer (-o json has every field).

    Exit status: 0, or 2 for bad options or an unreachable store.

    \b
    Example:
      argo-doctor audit --audit-db /data/audit.db --since 7d
    """
    from argo_doctor.remediate.store import open_store, parse_age
    from argo_doctor.report import audit as audit_report

    with errors_to_exit():
        store = open_store(audit_db, writable=False)
        try:
            entries = store.entries(since=datetime.now(UTC) - parse_age(since), limit=limit)
        finally:
            store.close()
    click.echo(audit_report.render(entries, "table" if output == "wide" else output, table_width(), output == "wide"))
