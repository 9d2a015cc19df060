"""`argo-doctor mcp`: the findings, timeline, health and map of one input for AI assistants, over the Model Context
Protocol (stdio, or streamable HTTP behind a bearer token)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click

from argo_doctor.cli.common import DEPLOYED_NEEDS, live_args, live_options, lua_dir_option, secret_file, snapshot
from argo_doctor.cli.group import errors_to_exit, main, problem_lines
from argo_doctor.engine import map_needs, needs_for, parse_options, select_analyzers
from argo_doctor.errors import ConfigError
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.redact import clean


@main.command("mcp", short_help="The findings for AI assistants (an MCP server).")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--http", "listen", metavar="[HOST:]PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST default 127.0.0.1); needs "
                   "--token-file.")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --http: the file holding the bearer token clients send as `Authorization: Bearer <token>`.")
@click.option("--max-result-bytes", type=int, default=None, metavar="BYTES",
              help="The most a tool result may be (default 48000, about 12,000 tokens); longer lists are paged.")
@click.option("--option", "option_pairs", multiple=True, metavar="RULE.KEY=VALUE",
              help="A rule option, as for scan.")
@lua_dir_option
@live_options
def mcp_command(paths: tuple[Path, ...], listen: str | None, token_file: Path | None, max_result_bytes: int | None,
                option_pairs: tuple[str, ...], lua_dirs: tuple[Path, ...], **live_kwargs: Any) -> None:
    """Serve the Model Context Protocol to an AI assistant: read-only tools (scan, finding, timeline, health, map,
    deprecations, upgrade_check, rules, and refresh with --live) over the input read once at start, every result
    redacted as the reports are, and at most --max-result-bytes. MCP clients start it over stdio; --http serves
    several clients, each with the token.

    Exit status: 0 when the client closes the connection (or after Ctrl-C), 2 for bad options or unreadable input.

    \b
    Example (the client's configuration runs it):
      argo-doctor mcp bundle.tgz
      argo-doctor mcp --live --http 127.0.0.1:8765 --token-file token
    """
    from argo_doctor.analyzers.upgrade_check import UpgradeCheck
    from argo_doctor.listen import parse_listen
    from argo_doctor.mcp.paging import DEFAULT_CAP, MIN_CAP
    from argo_doctor.mcp.server import build_server, serve_http
    from argo_doctor.mcp.session import Session
    from argo_doctor.mcp.tools import summary

    with errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        cap = DEFAULT_CAP if max_result_bytes is None else max_result_bytes
        if cap < MIN_CAP:
            raise ConfigError(f"--max-result-bytes {cap}: at least {MIN_CAP}, room for a page of one item")
        if token_file is not None and listen is None:
            raise ConfigError("--token-file is the token of --http; over stdio the client that starts the server is "
                              "the only one talking to it")
        address = parse_listen(listen, "--http", "127.0.0.1") if listen is not None else None
        token = secret_file(token_file, "--token-file", "token")
        if address is not None and token is None:
            raise ConfigError("--http needs --token-file: every HTTP client must send the bearer token")
        analyzers = select_analyzers()
        options = parse_options(option_pairs, analyzers)
        live = live_args(live_kwargs)
        # a live collection reads at once what every tool may ask for
        needs = needs_for(analyzers) | DEPLOYED_NEEDS | map_needs() | UpgradeCheck.needs

        def load(folder: Path) -> tuple[Snapshot, tuple[Path, ...]]:
            snap = snapshot(paths, folder, live, needs)
            return snap, (folder / "live",) if live.live else paths

        session = Session(load, Path(workdir), live.live, lua_dirs, options)
        try:
            with session.using() as state:
                guard.watch(state.snap)
                first = summary(state)
                problem_lines(state.result.problems, state.snap.scrubber)
            source = clean(state.snap.source, state.snap.scrubber, human=True)
            told = (f"argo-doctor mcp: {source}: {first['findings']} findings, {len(state.snap):,} objects; "
                    f"serving {{}} (Ctrl-C to stop)")
            server = build_server(session, cap)
            if address is None:
                click.echo(told.format("the Model Context Protocol over stdio"), err=True)
                server.run("stdio")
            elif token is not None:
                serve_http(server, *address, token,
                           lambda url: click.echo(told.format(f"{url} (bearer token required)"), err=True))
        finally:
            session.close()
