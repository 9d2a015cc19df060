"""The log engine's worst case, for bench/run.py: every known log signature on every file given.

Run as a child process: `python bench/log_engine.py FILE...`; prints JSON with the bytes read
and the lines that matched. No component filtering, no analyzers: the byte prefilter, line
parsing and dispatch alone.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from argo_doctor import knowledge
from argo_doctor.sources.logs import LogFile, ScanStats, scan_logs


def main(paths: list[str]) -> None:
    """Scan `paths` with every signature and print {"bytes", "lines", "signatures"}."""
    signatures = list(knowledge.log_signatures().values())
    stats = ScanStats()
    jobs = [(LogFile(Path(p), p, "", "", ""), signatures) for p in paths]
    # every line parsed in full, as when a rule reads each line's fields (the pass itself parses on demand)
    scan_logs(jobs, lambda sig, record, match: record.fields, [], datetime.now(UTC), stats)
    print(json.dumps({"bytes": stats.bytes, "lines": stats.matched_lines, "signatures": len(signatures)}))


if __name__ == "__main__":
    main(sys.argv[1:])
