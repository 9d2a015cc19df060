#!/usr/bin/env python3
"""`argo-doctor serve` under load: two replicas sharing one PostgreSQL audit store, the fake kube-apiserver of the
tests, and Argo CD Notifications sent at a fixed rate, alternately to each replica, for a bounded time (loopback
only; at most rate × seconds notifications).

The installation is the tests' (`tests/remediate/cluster.py`): one Application with a stuck Rollout, a crash-looping
one, a healthy one and a stuck single-replica one; the policy restarts with a cooldown of an hour, so that of all the
notifications exactly one may restart the stuck Rollout. Reports p50/p99 of notification → answer, the errors, the
PATCHes the API received per Rollout, and whether the audit trail holds one `restarted` decision per PATCH.
`--results` appends the table to bench/RESULTS.md; exit 1 when an aim is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.live.fakeapi import FakeApiServer, write_kubeconfig  # noqa: E402
from tests.remediate import cluster, pgserver  # noqa: E402

from remediate import TOKEN, append_results, free_port, percentile, wait_ready  # noqa: E402

AIM_P99_MS = 100.0


async def send(urls: list[str], rate: float, seconds: float) -> tuple[list[float], Counter[str], list[str]]:
    """Notifications at `rate` per second for `seconds`, open loop (each sent at its time, whatever the answers of
    the others), alternately to each URL; the latencies (ms), the count of each status and each decision."""
    total = int(rate * seconds)
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    actions: list[str] = []
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, limits=limits) as client:
        async def one(n: int) -> None:
            start = time.perf_counter()
            try:
                response = await client.post(f"{urls[n % len(urls)]}/v1/notifications/argocd",
                                             json=cluster.notification())
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1
                return
            latencies.append((time.perf_counter() - start) * 1000)
            statuses[str(response.status_code)] += 1
            if response.status_code == 200:
                actions.extend(d["action"] for d in response.json()["decisions"])

        began = time.perf_counter()
        tasks = []
        for n in range(total):
            delay = began + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(n)))
        await asyncio.gather(*tasks)
    return latencies, statuses, actions


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=200.0, help="notifications per second (default 200)")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long (default 60)")
    ap.add_argument("--argo-doctor", type=Path, default=Path(sys.executable).parent / "argo-doctor")
    ap.add_argument("--results", type=Path, nargs="?", const=ROOT / "bench" / "RESULTS.md", default=None)
    args = ap.parse_args()

    patches: Counter[str] = Counter()
    server = pgserver.start_server()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp, \
                FakeApiServer(cluster.installation(), writable=True) as api:
            work = Path(tmp)
            api.on_write(lambda method, path, obj: patches.update([path]) if method == "PATCH" else None)
            kubeconfig = write_kubeconfig(work / "kubeconfig", {"fake": api}, "fake")
            (work / "policy.yaml").write_text(yaml.safe_dump({
                "dryRun": False, "cooldown": "1h", "maxRestartsPerHour": 100,
                "allow": {"namespaces": ["apps"], "applications": ["argocd/*"]}}))
            (work / "token").write_text(TOKEN)
            urls = []
            for replica in ("a", "b"):
                port = free_port()
                urls.append(f"http://127.0.0.1:{port}")
                processes.append(subprocess.Popen(
                    [str(args.argo_doctor), "serve", "--listen", f"127.0.0.1:{port}", "--policy",
                     str(work / "policy.yaml"), "--audit-db", server.url, "--token-file", str(work / "token"),
                     "--kubeconfig", str(kubeconfig)], env={**os.environ, "POD_NAME": f"replica-{replica}"},
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            for url, process in zip(urls, processes, strict=True):
                with httpx.Client(base_url=url) as client:
                    wait_ready(client, process)
            latencies, statuses, actions = asyncio.run(send(urls, args.rate, args.seconds))
            audit = subprocess.run([str(args.argo_doctor), "audit", "--audit-db", server.url, "--since", "1h",
                                    "-o", "json"], capture_output=True, text=True, check=True)
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
        server.stop()
    entries = yaml.safe_load(audit.stdout)
    recorded = Counter(e.get("action") for e in (entries if isinstance(entries, list) else entries.get("entries", [])))
    rows = report(args, latencies, statuses, Counter(actions), patches, recorded)
    print("\n".join(rows))
    if args.results:
        append_results(args.results, "Serve under load", f"`bench/serve_load.py --rate {args.rate:g} --seconds "
                       f"{args.seconds:g}`: two `argo-doctor serve` replicas sharing one PostgreSQL store, the fake "
                       "API and the sender on one machine.", rows)
    met = bool(latencies) and percentile(latencies, 99) < AIM_P99_MS and set(statuses) == {"200"} and \
        max(patches.values(), default=0) <= 1 and recorded["restarted"] == sum(patches.values())
    return 0 if met else 1


def report(args: argparse.Namespace, latencies: list[float], statuses: Counter[str], actions: Counter[str],
           patches: Counter[str], recorded: Counter[Any]) -> list[str]:
    sent = int(args.rate * args.seconds)
    p99 = percentile(latencies, 99) if latencies else float("inf")
    errors = sum(n for status, n in statuses.items() if status != "200")
    twice = [path for path, n in patches.items() if n > 1]
    consistent = recorded["restarted"] == sum(patches.values()) == actions["restarted"]
    return [
        "| metric | value | aim | status | detail |",
        "|---|---:|---|---|---|",
        f"| notifications sent | {sent} |  |  | {args.rate:g}/s for {args.seconds:g} s, alternately to 2 replicas |",
        f"| notification → answer, p50 | {percentile(latencies, 50) if latencies else 0:.1f} ms |  |  | "
        f"mean {sum(latencies) / max(1, len(latencies)):.1f} ms, max {max(latencies, default=0):.1f} ms |",
        f"| notification → answer, p99 | {p99:.1f} ms | < {AIM_P99_MS:.0f} ms | "
        f"{'ok' if p99 < AIM_P99_MS else 'MISSED'} |  |",
        f"| errors | {errors} | 0 | {'ok' if errors == 0 else 'MISSED'} | "
        f"{', '.join(f'{s}: {n}' for s, n in sorted(statuses.items()))} |",
        f"| restarts (PATCHes) per Rollout | {max(patches.values(), default=0)} | ≤ 1 | "
        f"{'ok' if not twice else 'MISSED'} | {dict(patches) or 'none'} |",
        f"| audit trail | {recorded['restarted']} restarted | = PATCHes | {'ok' if consistent else 'MISSED'} | "
        f"decisions answered: {dict(actions)}; recorded: {dict(recorded)} |",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
