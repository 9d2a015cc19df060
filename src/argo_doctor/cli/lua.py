"""`argo-doctor lua`: Argo CD's built-in Lua health scripts."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from argo_doctor.cli.group import errors_to_exit, main
from argo_doctor.health import cache as lua_cache
from argo_doctor.report.columns import columns
from argo_doctor.report.json import encode
from argo_doctor.sources import bundle


@main.group("lua", short_help="Argo CD's built-in Lua health scripts.")
def lua_group() -> None:
    """Argo CD's built-in Lua health scripts: fetch a release's into the cache, list what is cached.

    scan, health, timeline and map use the cached scripts of the installation's Argo CD version (found in the
    inputs) for the kinds that neither argocd-cm nor --lua-dir covers.
    """


@lua_group.command("fetch", short_help="Cache an Argo CD release's Lua health scripts.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--argocd-version", "version", metavar="vX.Y.Z",
              help="The Argo CD release, v3.5.1 or 3.5.1 (default: the version of the installation in PATHS, else "
                   "the latest).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def lua_fetch(paths: tuple[Path, ...], version: str | None, output: str) -> None:
    """Download the health scripts of an Argo CD release (its source archive from GitHub), check that each compiles,
    and cache them under $XDG_CACHE_HOME/argo-doctor/lua/<version>/ with a manifest.json.

    PATHS are bundles, dumps or files as for scan, read only for the Argo CD version. Exit status: 0 when cached,
    2 for a bad version, an unreachable or refused archive.

    \b
    Example:
      argo-doctor lua fetch --argocd-version v3.1.0
    """
    with errors_to_exit(), tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        if version is not None:
            version = lua_cache.check_version(version)
        elif paths:
            version = lua_cache.installed_argocd_version(bundle.load(paths, Path(workdir)))
            if version is not None:
                click.echo(f"argo-doctor: Argo CD {version} found in the inputs", err=True)
        if version is None:
            version = lua_cache.latest_version()
            click.echo(f"argo-doctor: fetching the latest Argo CD release, {version}", err=True)
        fetched = lua_cache.fetch(version)
    if output == "json":
        click.echo(encode({**lua_cache.manifest_json(fetched), "archiveSha256": fetched.archive_sha256}))
        return
    click.echo(f"Fetched {len(fetched.scripts)} health scripts of Argo CD {fetched.version} into {fetched.path}")
    click.echo(f"from {fetched.source} (sha256 {fetched.archive_sha256})\n")
    click.echo(columns([("GROUP", "KINDS"), *_kinds_by_group(fetched.scripts)]))


def _kinds_by_group(scripts: tuple[str, ...]) -> list[tuple[str, str]]:
    """Rows of (group, its kinds) for `<group>/<Kind>` keys; `_` wildcards shown as `*`."""
    groups: dict[str, list[str]] = {}
    for key in scripts:
        group, _, kind = key.rpartition("/")
        groups.setdefault(group.replace("_", "*") or "(core)", []).append(kind.replace("_", "*"))
    return [(group, ", ".join(kinds)) for group, kinds in sorted(groups.items())]


@lua_group.command("list", short_help="The cached Lua health scripts.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def lua_list(output: str) -> None:
    """List the Argo CD versions whose health scripts are cached, newest first."""
    with errors_to_exit():
        root = lua_cache.cache_root()
    found = lua_cache.cached_versions(root)
    if output == "json":
        click.echo(encode({"cache": str(root), "versions": [lua_cache.manifest_json(c) for c in found]}))
        return
    if not found:
        click.echo(f"argo-doctor: nothing cached in {root}; see `argo-doctor lua fetch`", err=True)
        return
    click.echo(columns([("VERSION", "SCRIPTS", "FETCHED", "PATH"),
                        *((c.version, str(len(c.scripts)), c.fetched_at, str(c.path)) for c in found)]))
