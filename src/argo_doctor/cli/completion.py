"""`argo-doctor completion`: the shell script that completes commands, options and their values."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from argo_doctor.cli.group import COMPLETE_VAR, main

SHELLS = ("bash", "zsh", "fish")


@main.command(short_help="Print the shell completion script (bash, zsh, fish).")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the script that makes SHELL complete argo-doctor's commands, options and their values.

    \b
    Examples:
      source <(argo-doctor completion bash)    # add it to ~/.bashrc to keep it
      argo-doctor completion zsh > "${fpath[1]}/_argo-doctor"
      argo-doctor completion fish > ~/.config/fish/completions/argo-doctor.fish
    """
    complete = get_completion_class(shell)
    if complete is None:  # click knows the three shells of SHELLS
        raise click.UsageError(f"no completion for {shell}")
    click.echo(complete(main, {}, "argo-doctor", COMPLETE_VAR).source())
