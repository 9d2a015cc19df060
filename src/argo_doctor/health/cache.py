"""The cache of Argo CD's built-in Lua health scripts, one folder per Argo CD release.

`fetch` downloads a release's source archive from GitHub, keeps only
`<top>/resource_customizations/**/health.lua` (regular files, checked names, bounded sizes), checks that
every script compiles in the runtime scripts run in, and puts them in
`$XDG_CACHE_HOME/argo-doctor/lua/<version>/` (default `~/.cache/...`) in one rename, with a
`manifest.json`: version, source URL, archive sha256, each script's sha256, when fetched. A
refused archive leaves the cache as it was. The scans then take the scripts of the installation's
Argo CD version from here (`scripts_for`), each only if its sha256 is still the manifest's.

The GitHub addresses come from `ARGO_DOCTOR_GITHUB_URL` and `ARGO_DOCTOR_GITHUB_API_URL`, so that
tests and mirrors can stand in for github.com.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import tarfile
import tempfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any

from argo_doctor.errors import ArgoDoctorError, ConfigError
from argo_doctor.health.luascripts import LuaHealthScripts, syntax_errors
from argo_doctor.health.types import LUA_SCRIPTS_LOCATION, HealthProblem
from argo_doctor.snapshot import Snapshot

if TYPE_CHECKING:
    import httpx

GITHUB_URL_ENV = "ARGO_DOCTOR_GITHUB_URL"
GITHUB_API_URL_ENV = "ARGO_DOCTOR_GITHUB_API_URL"
DEFAULT_GITHUB_URL = "https://github.com"
DEFAULT_GITHUB_API_URL = "https://api.github.com"
REPOSITORY = "argoproj/argo-cd"
MANIFEST = "manifest.json"
SCRIPT = "health.lua"
CUSTOMIZATIONS = "resource_customizations"
MAX_ARCHIVE_BYTES = 512 << 20
"""Largest release archive downloaded (Argo CD's are some tens of MB)."""
MAX_UNPACKED_BYTES = 4 << 30
"""Most bytes read out of the archive's compression before it is refused."""
MAX_ENTRIES = 200_000
MAX_SCRIPT_BYTES = 1 << 20
MAX_SCRIPTS = 10_000
TIMEOUT_SECONDS = 60.0
VERSION = re.compile(r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z][0-9A-Za-z.-]*)?")
"""An Argo CD release tag: vMAJOR.MINOR.PATCH with an optional pre-release (v3.5.0-rc1)."""
_INSTALLATION_COMPONENTS = ("application-controller", "server", "repo-server", "applicationset-controller",
                            "notifications-controller", "commit-server")
"""Argo CD's components, the one that computes health first."""


class FetchError(ArgoDoctorError):
    """A release archive that cannot be downloaded or is refused; the message is one line."""


@dataclass(frozen=True)
class Fetched:
    """What `fetch` put in the cache."""

    version: str
    path: Path
    source: str
    archive_sha256: str
    scripts: tuple[str, ...]
    """`<group>/<Kind>` (or `<Kind>`) of each script, sorted."""


@dataclass(frozen=True)
class Cached:
    """One version in the cache, as its manifest describes it."""

    version: str
    path: Path
    source: str
    fetched_at: str
    scripts: tuple[str, ...]
    sha256: Mapping[str, str] = field(hash=False)
    """The sha256 of each script when fetched, by its path below `path` (`<group>/<Kind>/health.lua`)."""

    def vet(self, name: str, data: bytes) -> str | None:
        """Why the cached script `name` (with content `data`) is not to be used: changed since the fetch."""
        expected = self.sha256.get(name)
        if expected == hashlib.sha256(data).hexdigest():
            return None
        why = ("not in manifest.json" if expected is None
               else "changed since it was fetched (its sha256 differs from manifest.json's)")
        return f"{why}, so not used; run `argo-doctor lua fetch --argocd-version {self.version}` to fetch it again"

    def scripts_here(self) -> LuaHealthScripts:
        """The scripts of this version, those changed since the fetch left out (with a note each)."""
        return LuaHealthScripts.from_dir(self.path, self.vet)


# -- versions ----------------------------------------------------------------------------------------------------


def check_version(text: str) -> str:
    """The release tag `text` names, like v3.5.1 or v3.5.0-rc1 (`3.5.1` becomes `v3.5.1`); ConfigError otherwise."""
    release = _as_release(text)
    if release is None:
        raise ConfigError(f"{text!r} is not an Argo CD release version like v3.5.1 (vMAJOR.MINOR.PATCH[-pre])")
    return release


def _version_key(version: str) -> tuple[int, int, int, int, str]:
    match = VERSION.fullmatch(version)
    if match is None:
        return (-1, -1, -1, -1, version)
    major, minor, patch, pre = match.groups()
    return (int(major), int(minor), int(patch), 0 if pre else 1, pre or "")


def _as_release(text: str | None) -> str | None:
    """A release tag from an image tag or version label (`v3.5.1`, `3.5.1`); None for `latest`, digests..."""
    if not text:
        return None
    tag = text if text.startswith("v") else f"v{text}"
    return tag if VERSION.fullmatch(tag) else None


def installed_argocd_version(snap: Snapshot) -> str | None:
    """The Argo CD release of the installation in the snapshot: the image tag (else `app.kubernetes.io/version`
    label) of its application controller, else of another Argo CD component; None when none names a release."""
    order = {name: i for i, name in enumerate(_INSTALLATION_COMPONENTS)}
    components = sorted((c for c in snap.components if c.product == "argo-cd"),
                        key=lambda c: order.get(c.name, len(order)))
    for comp in components:
        labels = [comp.workload.labels] if comp.workload is not None else []
        labels += [p.labels for p in comp.pods]
        for text in (comp.version, *(found.get("app.kubernetes.io/version") for found in labels)):
            release = _as_release(text)
            if release is not None:
                return release
    return None


# -- the cache ---------------------------------------------------------------------------------------------------


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/argo-doctor/lua` (an absolute XDG_CACHE_HOME only, as the XDG spec says), else
    `~/.cache/argo-doctor/lua`."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or ""
    if os.path.isabs(base):
        return Path(base) / "argo-doctor" / "lua"
    try:
        home = Path(env.get("HOME") or Path.home())
    except RuntimeError:  # no HOME and no passwd entry, as for a random uid in a container
        raise ConfigError("no home folder for the Lua script cache: set XDG_CACHE_HOME") from None
    return home / ".cache" / "argo-doctor" / "lua"


def cached_versions(root: Path | None = None) -> list[Cached]:
    """The versions in the cache with a readable manifest, newest first."""
    if root is None:
        try:
            root = cache_root()
        except ConfigError:
            return []
    found = []
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            if VERSION.fullmatch(entry.name) is None or not entry.is_dir():
                continue
            try:
                manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
                hashes = {str(name): str(digest) for name, digest in manifest["scripts"].items()}
                scripts = tuple(sorted(str(PurePosixPath(p).parent) for p in hashes))
                found.append(Cached(entry.name, entry, str(manifest["source"]), str(manifest["fetchedAt"]), scripts,
                                    hashes))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue  # not a complete fetch: ignored
    return sorted(found, key=lambda c: _version_key(c.version), reverse=True)


def scripts_for(installed: str | None, root: Path | None = None) -> tuple[LuaHealthScripts | None, list[HealthProblem]]:
    """The cached scripts to use for an installation of Argo CD `installed` (None: not known), and what to say
    about the choice: the exact version only; with no version known, the newest cached."""
    cached = {c.version: c for c in cached_versions(root)}
    if installed is not None:
        chosen = cached.get(installed)
        if chosen is None:
            return None, []
        return chosen.scripts_here(), []
    if not cached:
        return None, []
    newest = next(iter(cached.values()))
    note = HealthProblem(
        LUA_SCRIPTS_LOCATION,
        f"no Argo CD version found in the inputs: health scripts of the newest cached release, {newest.version}, "
        "apply (use `argo-doctor lua fetch --argocd-version vX.Y.Z` to match the installation)",
        "note",
    )
    return newest.scripts_here(), [note]


# -- fetching ----------------------------------------------------------------------------------------------------


def _base(env_name: str, default: str) -> str:
    return (os.environ.get(env_name) or default).rstrip("/")


def archive_url(version: str) -> str:
    """Where GitHub serves the source archive of an Argo CD release."""
    return f"{_base(GITHUB_URL_ENV, DEFAULT_GITHUB_URL)}/{REPOSITORY}/archive/refs/tags/{version}.tar.gz"


def latest_url() -> str:
    """The GitHub API address of Argo CD's latest release."""
    return f"{_base(GITHUB_API_URL_ENV, DEFAULT_GITHUB_API_URL)}/repos/{REPOSITORY}/releases/latest"


def _client() -> httpx.Client:
    import httpx  # only a download needs it: not imported by every scan

    return httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=True,
                        headers={"User-Agent": "argo-doctor", "Accept-Encoding": "identity"})


def _http_failure(url: str, exc: httpx.HTTPError) -> FetchError:
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        return FetchError(f"{url}: HTTP {exc.response.status_code} {exc.response.reason_phrase}".rstrip())
    if isinstance(exc, httpx.TimeoutException):
        return FetchError(f"{url}: timed out after {TIMEOUT_SECONDS:g} s")
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return FetchError(f"{url}: {reason}")


def latest_version() -> str:
    """The tag of Argo CD's latest release, from the GitHub API."""
    import httpx

    url = latest_url()
    try:
        with _client() as client:
            response = client.get(url, headers={"Accept": "application/vnd.github+json"})
            response.raise_for_status()
            tag = response.json().get("tag_name")
    except httpx.HTTPError as exc:
        raise _http_failure(url, exc) from None
    except (ValueError, AttributeError):
        raise FetchError(f"{url}: not the JSON of a GitHub release") from None
    if not isinstance(tag, str) or VERSION.fullmatch(tag) is None:
        raise FetchError(f"{url}: the latest release's tag {tag!r} is not a version like v3.5.1")
    return tag


def _download(url: str, out: IO[bytes]) -> tuple[str, str]:
    """Stream `url` into `out`; the sha256 of what came, and its Content-Type."""
    import httpx

    digest = hashlib.sha256()
    size = 0
    try:
        with _client() as client, client.stream("GET", url) as response:
            response.raise_for_status()
            content_type = response.headers.get("Content-Type", "")
            for chunk in response.iter_raw():
                size += len(chunk)
                if size > MAX_ARCHIVE_BYTES:
                    raise FetchError(f"{url}: larger than {MAX_ARCHIVE_BYTES:,} bytes; refused")
                digest.update(chunk)
                out.write(chunk)
    except httpx.HTTPError as exc:
        raise _http_failure(url, exc) from None
    return digest.hexdigest(), content_type


def _looks_like_html(content_type: str, archive: IO[bytes]) -> bool:
    """Whether a download is a web page (a proxy's or captive portal's) rather than an archive."""
    archive.seek(0)
    start = archive.read(512).lstrip()
    return content_type.split(";")[0].strip().lower() == "text/html" or start.startswith(b"<")


def _script_key(name: str, top: str) -> str | None:
    """`<group>/<Kind>` (or `<Kind>`) when `name` is `<top>/resource_customizations/.../health.lua`."""
    parts = PurePosixPath(name).parts
    if len(parts) in (4, 5) and parts[0] == top and parts[1] == CUSTOMIZATIONS and parts[-1] == SCRIPT:
        return "/".join(parts[2:-1])
    return None


def _gunzipped_size(archive: IO[bytes]) -> int:
    """The size of the archive once decompressed; FetchError when the gzip stream is damaged or incomplete."""
    size = 0
    try:
        with gzip.GzipFile(fileobj=archive, mode="rb") as stream:
            while chunk := stream.read(1 << 20):
                size += len(chunk)
                if size > MAX_UNPACKED_BYTES:
                    raise FetchError(f"expands to more than {MAX_UNPACKED_BYTES:,} bytes; refused")
    except (OSError, EOFError, zlib.error) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise FetchError(f"not a complete tar.gz archive ({reason}); refused") from None
    return size


def read_scripts(archive: IO[bytes], version: str) -> dict[str, bytes]:
    """The health scripts of a release archive (`<group>/<Kind>` → text), read to its end; FetchError for a
    damaged, truncated or foreign archive, an unsafe name or link among them, or one over the size limits."""
    tops = {f"argo-cd-{version.removeprefix('v')}", f"argo-cd-{version}"}
    scripts: dict[str, bytes] = {}
    top: str | None = None
    unpacked = _gunzipped_size(archive)  # tarfile itself takes a truncated archive for a shorter one
    archive.seek(0)
    try:
        with tarfile.open(fileobj=archive, mode="r|gz") as tar:
            for entries, member in enumerate(tar, 1):
                if entries > MAX_ENTRIES:
                    raise FetchError(f"more than {MAX_ENTRIES:,} entries; refused")
                path = PurePosixPath(member.name)
                if path.is_absolute() or ".." in path.parts or "\\" in member.name:
                    raise FetchError(f"unsafe entry name {member.name!r}; refused")
                first = path.parts[0] if path.parts else ""
                if top is None:
                    if first not in tops:
                        raise FetchError(f"its top folder {first!r} is not that of Argo CD {version}; refused")
                    top = first
                elif first != top:
                    raise FetchError(f"entry {member.name!r} outside its top folder {top!r}; refused")
                key = _script_key(member.name, top)
                if key is None:
                    continue
                if not member.isreg():
                    raise FetchError(f"{member.name} is not a regular file (a link or device); refused")
                if member.size > MAX_SCRIPT_BYTES or len(scripts) >= MAX_SCRIPTS:
                    raise FetchError(f"{member.name}: over the limit of {MAX_SCRIPTS:,} scripts of at most "
                                     f"{MAX_SCRIPT_BYTES:,} bytes; refused")
                handle = tar.extractfile(member)
                if handle is None:
                    raise FetchError(f"{member.name} cannot be read; refused")
                scripts[key] = handle.read()
            if unpacked - tar.offset < 2 * tarfile.BLOCKSIZE:
                raise FetchError("the tar archive ends without its end-of-archive blocks; refused")
    except FetchError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError, UnicodeError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise FetchError(f"not a complete tar.gz archive ({reason}); refused") from None
    if top is None:
        raise FetchError("an empty archive; refused")
    if not scripts:
        raise FetchError(f"no {CUSTOMIZATIONS}/**/{SCRIPT} in it; refused")
    return scripts


def _texts(scripts: Mapping[str, bytes]) -> dict[str, str]:
    texts = {}
    for key, data in scripts.items():
        try:
            texts[key] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FetchError(f"{key}/{SCRIPT} is not UTF-8 text; refused") from None
    return texts


def fetch(version: str, root: Path | None = None) -> Fetched:
    """Download, check and cache the health scripts of Argo CD `version`; the cache is changed only when all
    is well."""
    version = check_version(version)
    root = cache_root() if root is None else root
    url = archive_url(version)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".fetch-{version}-", dir=root) as work:
            with open(Path(work) / "archive.tar.gz", "w+b") as archive:
                archive_sha, content_type = _download(url, archive)
                archive.seek(0)
                try:
                    scripts = read_scripts(archive, version)
                except FetchError as exc:
                    if _looks_like_html(content_type, archive):
                        raise FetchError(f"{url}: an HTML page, not a tar.gz archive (a proxy or captive portal?); "
                                         "refused") from None
                    raise FetchError(f"{url}: {exc}") from None
            texts = _texts(scripts)
            broken = syntax_errors(texts)
            if broken:
                key, why = sorted(broken.items())[0]
                more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
                raise FetchError(f"{key}/{SCRIPT} does not compile: {why}{more}; refused, the cache is unchanged")
            staged = Path(work) / version
            hashes = {}
            for key, data in sorted(scripts.items()):
                target = staged / key / SCRIPT
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                hashes[f"{key}/{SCRIPT}"] = hashlib.sha256(data).hexdigest()
            manifest = {
                "version": version, "source": url, "archiveSha256": archive_sha,
                "fetchedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "scripts": hashes,
            }
            (staged / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            _replace(staged, root / version, Path(work))
    except OSError as exc:
        raise FetchError(f"cannot write the cache {root}: {exc.strerror or exc}") from None
    return Fetched(version, root / version, url, archive_sha, tuple(sorted(scripts)))


def _replace(staged: Path, final: Path, work: Path) -> None:
    """Put `staged` at `final` by renames; an older copy goes into `work` (removed with it)."""
    if final.exists():
        final.rename(work / "previous")
    staged.rename(final)


def manifest_json(found: Fetched | Cached) -> dict[str, Any]:
    """The JSON `lua fetch` and `lua list` print for one version."""
    return {"version": found.version, "path": str(found.path), "source": found.source,
            "scripts": len(found.scripts), "kinds": list(found.scripts)}

