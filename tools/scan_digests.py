#!/usr/bin/env python3
"""One line per example and test bundle: the SHA-256 of `argo-doctor scan BUNDLE -o json` and its count of findings,
so that two checkouts can be compared (a change meant to be faster must not change a finding):

    PYTHONPATH=/path/to/old/src python tools/scan_digests.py > old.txt
    python tools/scan_digests.py > new.txt && diff old.txt new.txt

Bundles are named from the repository root; the scan runs in this process, as `scan` does, for each in turn.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from click.testing import CliRunner

from argo_doctor.cli import main

ROOT = Path(__file__).resolve().parent.parent


def bundles() -> list[Path]:
    """Every example bundle and every folder of tests/bundles, sorted."""
    found = {p.parent for p in (ROOT / "examples").rglob("bundle.yaml")}
    found |= {p for p in (ROOT / "tests" / "bundles").iterdir() if p.is_dir()}
    return sorted(found)


def digest(path: Path) -> str:
    """`sha256 findings exit path` of one scan."""
    result = CliRunner().invoke(main, ["scan", str(path.relative_to(ROOT)), "-o", "json", "--fail-on", "never"])
    try:
        findings = len(json.loads(result.stdout)["findings"])
    except (ValueError, KeyError, TypeError):
        findings = -1
    return (f"{hashlib.sha256(result.stdout.encode()).hexdigest()[:16]} {findings:5d} exit {result.exit_code} "
            f"{path.relative_to(ROOT)}")


if __name__ == "__main__":
    import os

    os.chdir(ROOT)  # the JSON names its inputs as given: relative, so that two checkouts compare
    for bundle in bundles():
        print(digest(bundle), flush=True)
    sys.exit(0)
