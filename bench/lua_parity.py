#!/usr/bin/env python3
"""Run Argo CD's own health test cases through argo-doctor's Lua runtime, by way of `lua fetch` and its cache.

Usage: lua_parity.py RESOURCE_CUSTOMIZATIONS_DIR [--version v3.5.1] [-v]

The directory is an export of Argo CD's `resource_customizations` (e.g. `git archive v3.5.1
resource_customizations | tar -x`); nothing of it ships with argo-doctor. The script packs its health.lua
files into a release archive as GitHub serves it, serves that from a local HTTP server, fetches it with
`argo_doctor.health.cache.fetch` into a temporary cache, then, for every `health_test.yaml` case, reads
the input object with argo-doctor's object reader, looks the script up as a scan does (exact directory,
then the `_` wildcards) and compares status and message with the expected ones, as Argo CD's
util/lua/health_test.go does. Prints one line per mismatch and the counts; exit status 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import os
import sys
import tarfile
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from argo_doctor.health import HealthAssessor
from argo_doctor.health.cache import GITHUB_URL_ENV, fetch, scripts_for
from argo_doctor.health.fields import split_api_version
from argo_doctor.model import Problem
from argo_doctor.sources.objects import read_object_file


def release_archive(customizations: Path, version: str) -> bytes:
    """A tar.gz laid out as GitHub's archive of the release: `argo-cd-<n>/resource_customizations/...`."""
    buffer = io.BytesIO()
    top = f"argo-cd-{version.removeprefix('v')}"
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for script in sorted(customizations.rglob("health.lua")):
            tar.add(script, f"{top}/resource_customizations/{script.relative_to(customizations).as_posix()}")
    return buffer.getvalue()


class _Archive(http.server.BaseHTTPRequestHandler):
    def __init__(self, *args: object, path: str, body: bytes) -> None:
        self.served_path, self.body = path, body
        super().__init__(*args)  # type: ignore[arg-type]

    def do_GET(self) -> None:
        found = self.path == self.served_path
        self.send_response(200 if found else 404)
        self.send_header("Content-Length", str(len(self.body) if found else 0))
        self.end_headers()
        if found:
            self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _folded(entry: dict[str, Any]) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in entry.items()}


def main(argv: Sequence[str]) -> int:
    """Fetch, then run every case; print mismatches and counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("customizations", type=Path)
    parser.add_argument("--version", default="v3.5.1")
    parser.add_argument("-v", "--verbose", action="store_true", help="print passing cases too")
    args = parser.parse_args(argv)
    root: Path = args.customizations
    path = f"/argoproj/argo-cd/archive/refs/tags/{args.version}.tar.gz"
    handler = functools.partial(_Archive, path=path, body=release_archive(root, args.version))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ[GITHUB_URL_ENV] = f"http://127.0.0.1:{server.server_address[1]}"
    passed = failed = 0
    with tempfile.TemporaryDirectory() as cache:
        fetched = fetch(args.version, Path(cache))
        print(f"fetched {len(fetched.scripts)} scripts of {args.version} into the cache")
        server.shutdown()
        scripts, _ = scripts_for(args.version, Path(cache))
        with HealthAssessor(scripts) as assessor:
            for test_file in sorted(root.rglob("health_test.yaml")):
                cases = (yaml.safe_load(test_file.read_text(encoding="utf-8")) or {}).get("tests") or []
                for found in cases:
                    case = _folded(found)  # Go's JSON decoding matches field names case-insensitively
                    where = f"{test_file.parent.relative_to(root)}/{case['inputpath']}"
                    problems: list[Problem] = []
                    objs = list(read_object_file(test_file.parent / case["inputpath"], where, problems))
                    expected = _folded(case.get("healthstatus") or {})
                    want = (str(expected.get("status") or ""), str(expected.get("message") or ""))
                    if len(objs) != 1:
                        failed += 1
                        print(f"FAIL {where}: {len(objs)} objects read {problems}")
                        continue
                    raw = objs[0].data
                    group, _ = split_api_version(str(raw.get("apiVersion") or ""))
                    script = scripts.script_for(group, str(raw.get("kind") or "")) if scripts else None
                    if script is None:
                        failed += 1
                        print(f"FAIL {where}: no script for {group}/{raw.get('kind')}")
                        continue
                    health = assessor.worker.run(script, raw, assessor.limits).health
                    got = (health.status.value, health.message) if health else ("", "")
                    if got == want:
                        passed += 1
                        if args.verbose:
                            print(f"ok   {where}")
                    else:
                        failed += 1
                        print(f"FAIL {where}: expected {want}, got {got}")
            for problem in assessor.problems:
                print(f"problem: {problem.location}: {problem.message}")
    print(f"{passed} passed, {failed} failed, {passed + failed} cases")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
