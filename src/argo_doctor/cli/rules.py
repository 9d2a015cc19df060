"""`argo-doctor rules` and `signatures`: what the engine knows."""

from __future__ import annotations

import click

from argo_doctor import knowledge
from argo_doctor.cli.group import errors_to_exit, main
from argo_doctor.engine import (
    select_analyzers,
    signatures_for,
)


@main.command(short_help="List the rules.")
def rules() -> None:
    """List the rules (analyzers)."""
    for analyzer in select_analyzers():
        click.echo(f"{analyzer.id:28} {analyzer.title}")
        for key, meaning in analyzer.options.items():
            click.echo(f"  --option {analyzer.id}.{key}=…  {meaning}")


@main.command(short_help="The log needles the engine prefilters on.")
@click.option("--rule", "rules_", multiple=True, help="Only the signatures of this rule.")
@click.option("--all", "all_", is_flag=True, help="Every signature of the knowledge base, used by a rule or not.")
def signatures(rules_: tuple[str, ...], all_: bool) -> None:
    """Print the literal log needles the engine prefilters on, one per line (for benchmarks)."""
    with errors_to_exit():
        table = knowledge.log_signatures() if all_ else signatures_for(select_analyzers(rules_))
        for needle in dict.fromkeys(sig.needle for sig in table.values()):
            click.echo(needle.decode())
