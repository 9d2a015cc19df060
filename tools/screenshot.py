"""Screenshot of an HTML report in headless Chromium (Debian's `chromium`, driven by Playwright; no browser is
downloaded): `python tools/screenshot.py REPORT.html OUT.png`. `make demo` writes the reports; the README's
docs/img/html-report.png is made from demo-out/unwanted-sync.html with this script."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import BrowserContext, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def chromium() -> Iterator[BrowserContext]:
    """Debian's Chromium, headless, with a fresh profile; a clear error when it is not installed."""
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} missing: `make chromium` (as root) installs Debian's chromium package")
    with tempfile.TemporaryDirectory(prefix="argo-doctor-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), args=ARGS,
                                                       headless=True, viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


def screenshot(report: Path, out: Path, width: int = 1280, height: int = 900) -> None:
    """A PNG of the report's first screen, with the first finding that has a causal chain opened."""
    with chromium() as context:
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": height})
        page.goto(report.resolve().as_uri())
        page.wait_for_selector("#chart svg")
        shown = page.query_selector("details.finding:has(ol.chain)") or page.query_selector("details.finding")
        if shown is not None:
            shown.evaluate("d => { d.open = true; }")
        page.screenshot(path=str(out), full_page=False)


def main() -> None:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("report", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    screenshot(args.report, args.out)


if __name__ == "__main__":
    main()
