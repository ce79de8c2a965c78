"""The soak run: the reliability suite (``tests/reliability``) at longer sizes, bounded in time.

Usage: ``python scripts/soak.py [--minutes 5] [pytest arguments...]`` (``make soak``,
``make soak ARGS="--minutes 20"``).

Everything runs on loopback: the tests start their own ``redis-server`` processes (standalone and a
three-master Cluster) and server processes on free ports. The tests share the time budget
(``GOSTOP_SOAK_SECONDS``, 80 % of ``--minutes``; the rest is for set-up and verification): the
storms, fault injections and secrecy games repeat until their share is spent, and the generated and
fuzzed inputs scale with it. The whole run is killed if it takes more than twice ``--minutes`` plus
two minutes. At the end it prints the figures of the run (requests made, conflicts provoked, faults
injected, bad inputs tried, games verified by replay, leaks found) and exits with pytest's status.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FIGURES = (
    ("requests", "gRPC requests made"),
    ("conflicts", "conflicts provoked (ABORTED answers)"),
    ("stale_sent", "  of which stale versions sent on purpose"),
    ("wrong_seat_sent", "actions sent by a seat not to move"),
    ("duplicates", "retries of a request id (same request)"),
    ("request_ids_reused", "request ids reused for another request"),
    ("faults_injected", "faults injected (Redis killed, server SIGKILL, SIGTERM)"),
    ("failed_calls_under_faults", "calls failed with UNAVAILABLE under faults"),
    ("in_flight_calls_at_sigterm", "calls in flight at SIGTERM (all finished)"),
    ("lost_replies_recovered", "commits no client saw acknowledged (recovered at verification)"),
    ("bad_inputs_generated", "hypothesis-generated requests"),
    ("bad_inputs_fuzzed", "byte-fuzzed raw requests"),
    ("bad_inputs_oversized", "oversized messages"),
    ("corrupted_games", "games with corrupted data in Redis"),
    ("corrupted_snapshots_still_decoding", "  bit-flipped snapshots that still decoded"),
    ("corrupted_internal_answers", "  INTERNAL answers about them"),
    ("games_verified", "games verified by replay (log -> engine -> stored snapshot)"),
    ("versions_verified", "  versions in them"),
    ("acknowledged", "  acknowledged requests matched to the log and retried"),
    ("secrecy_games", "games checked for leaks"),
    ("secrecy_messages_checked", "  messages decoded and checked"),
    ("error_messages_checked", "  error messages checked"),
    ("log_lines_checked", "log lines checked"),
    ("games_expired", "games expired by TTL"),
    ("streams_on_one_connection", "WatchGame streams on one connection"),
    ("store_unavailable_without_fault", "STORE_UNAVAILABLE without a fault (overload), retried"),
    ("leaks_found", "leaks found"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="time budget of the run (default 5)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    with tempfile.TemporaryDirectory(prefix="gostop-soak-") as tmp:
        figures = Path(tmp) / "figures.json"
        env = {**os.environ, "GOSTOP_SOAK_SECONDS": str(args.minutes * 60 * 0.8),
               "GOSTOP_FIGURES_FILE": str(figures)}
        command = [sys.executable, "-m", "pytest", "tests/reliability", "-q", "-p", "no:cacheprovider",
                   "--durations=0", *pytest_args]
        started = time.monotonic()
        try:
            status = subprocess.run(command, cwd=ROOT, env=env, timeout=args.minutes * 120 + 120,
                                    check=False).returncode
        except subprocess.TimeoutExpired:
            print(f"soak: killed after {args.minutes * 2 + 2:.0f} minutes", file=sys.stderr)
            status = 1
        elapsed = time.monotonic() - started
        data = json.loads(figures.read_text()) if figures.exists() else {"counts": {}, "max": {}}
    counts: dict[str, int] = data["counts"]
    print(f"\nsoak figures ({elapsed / 60:.1f} minutes, pytest exit status {status}):")
    for key, label in FIGURES:
        print(f"  {label:<62} {counts.get(key, 0):>10,}")
    for key, value in sorted(data["max"].items()):
        print(f"  {key.replace('_', ' '):<62} {value:>10}")
    return status


if __name__ == "__main__":
    sys.exit(main())
