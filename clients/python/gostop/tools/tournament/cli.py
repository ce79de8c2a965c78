"""``gostop tournament``: the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from gostop.bots.arena import wilson as wilson
from gostop.bots.plugins import SPEC_HELP
from gostop.client import PermissionDenied, Unauthenticated

from .plan import RESULTS
from .report import WIDTH, format_report, wrap, write_report
from .run import Options, RunSummary, _say, remote_target, run_tournament

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT, as a shell reports a command that SIGINT ended)."""

# --------------------------------------------------------------------------- command line


def _names(text: str) -> tuple[str, ...]:
    from gostop.bots import split_specs

    out = tuple(dict.fromkeys(split_specs(text)))
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def _counts(text: str) -> tuple[int, ...]:
    try:
        out = tuple(dict.fromkeys(int(t) for t in text.split(",") if t.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not out or any(n not in (2, 3, 4) for n in out):
        raise argparse.ArgumentTypeError("player counts are 2, 3 or 4")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``gostop tournament`` flags."""
    parser.add_argument("--bots", type=_names, default=("random", "greedy"),
                        help=f"comma-separated bots ({SPEC_HELP}; or remote:NAME, a BotService server named "
                             "by --remote-bot); default random,greedy")
    parser.add_argument("--remote-bot", action="append", default=[], metavar="NAME=HOST:PORT",
                        help="the address of the remote bot remote:NAME (repeatable; adds to and overrides "
                             "GOSTOP_REMOTE_BOTS, NAME=HOST:PORT,...)")
    parser.add_argument("--remote-deadline-ms", type=int, default=2000,
                        help="milliseconds a remote bot has per decision")
    parser.add_argument("--presets", type=_names, default=("standard",), help="comma-separated presets")
    parser.add_argument("--players", type=_counts, default=(2,), help="comma-separated table sizes, e.g. 2,3")
    parser.add_argument("--games", type=int, default=100, help="deals per matchup (each played in every rotation)")
    parser.add_argument("--parallel", type=int, default=8, help="games played at once")
    parser.add_argument("--server", default="", help="HOST:PORT of a game server (default: an in-process server)")
    parser.add_argument("--api-key", default="", help="API key for CreateGame (when the server requires one)")
    parser.add_argument("--operator-key", default="", help="operator key (explicit deals)")
    parser.add_argument("--tls", action="store_true", help="connect to --server over TLS")
    parser.add_argument("--out", type=Path, default=Path("tournament"), help="directory for results and report")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals")
    parser.add_argument("--mcts-millis", type=float, default=None,
                        help="mcts budget per decision (ms of CPU time)")
    parser.add_argument("--workers", type=int, default=0, help="processes for mcts decisions (0: one per CPU)")
    parser.add_argument("--max-games", type=int, default=0,
                        help="stop after this many new games (a later run resumes); 0: play all")
    parser.add_argument("--report-only", action="store_true", help="only re-render the report from results.jsonl")
    parser.add_argument("--ladder", default=None, metavar="PATH|URL",
                        help="record the games in this ladder (gostop ladder): a SQLite file, a redis:// URL or "
                             "off; default $GOSTOP_LADDER, else ~/.local/share/gostop/ladder.sqlite3")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


async def _run(options: Options, progress: bool) -> RunSummary:
    """``run_tournament`` with Ctrl-C (SIGINT) as its ``stop``: the first Ctrl-C stops the games,
    the pool and the server in order, and a second one, while that is under way, changes nothing."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):  # no loop signal handlers on Windows
        loop.add_signal_handler(signal.SIGINT, stop.set)
    try:
        return await run_tournament(options, progress=progress, stop=stop)
    finally:
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)


def _record(out: Path, ladder: str | None) -> None:
    """Record the games of ``out`` in the ladder (each once: a resumed run adds only its new ones),
    and say so on stderr; a ladder that cannot be written is said, and changes no exit status."""
    from gostop.tools.ladder import record_tournament

    message = record_tournament(out, ladder)
    if message:
        _say("\n".join(wrap(message, WIDTH)))


def _interrupted(out: Path, summary: RunSummary | None, ladder: str | None = None) -> int:
    """Say what an interrupted run saved and how to go on; the exit status."""
    resume = f"run the same command again to resume (gostop tournament --report-only --out {out} shows " \
             "the partial report)"
    if summary is not None and summary.planned:
        message = f"interrupted: {summary.saved:,} of {summary.planned:,} games are saved in {out / RESULTS}; {resume}"
    else:  # no summary: stopped before the run had one, or after it ended
        message = f"interrupted: every finished game is saved in {out / RESULTS}; {resume}"
    _say("\n".join(wrap(message, WIDTH)))
    if (out / RESULTS).exists():
        _record(out, ladder)
    return INTERRUPTED


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``gostop tournament`` from parsed arguments; the exit code (130 after Ctrl-C)."""
    try:
        return _run_from_args(args)
    except KeyboardInterrupt:  # Ctrl-C outside the run's own handler (start-up, shutting the loop down)
        return _interrupted(args.out, None, args.ladder)


def _run_from_args(args: argparse.Namespace) -> int:
    out: Path = args.out
    if args.report_only:
        if not (out / RESULTS).exists():
            _say(f"no {RESULTS} in {out}")
            return 2
        print(format_report(write_report(out)))
        _record(out, args.ladder)
        return 0
    from gostop.bots import BotSpecError, check_bot
    from gostop.service.config import parse_remote_bots

    try:
        remote_bots = parse_remote_bots(os.environ.get("GOSTOP_REMOTE_BOTS", ""))
        for item in args.remote_bot:
            remote_bots.update(parse_remote_bots(item))
    except ValueError as error:
        _say(f"gostop tournament: --remote-bot: {error}")
        return 2
    for spec in args.bots:
        if remote_target(spec) is not None:
            continue  # a remote bot: run_tournament checks that it has an address
        try:
            check_bot(spec)
        except BotSpecError as error:
            _say(f"gostop tournament: --bots: {error}")
            return 2
    if args.games < 1 or args.parallel < 1 or args.remote_deadline_ms < 1:
        _say("--games, --parallel and --remote-deadline-ms must be at least 1")
        return 2
    if not args.server:
        # The in-process server logs every call at info level, and a call that ends other than OK
        # (a stale version, the calls a Ctrl-C cancels) at warning level: keep only its errors. The
        # tournament reports its own failures.
        from gostop.service.logs import configure

        configure("auto", "error")
    options = Options(
        bots=args.bots, presets=args.presets, players=args.players, games=args.games, out=out,
        parallel=args.parallel, seed=args.seed, server=args.server, api_key=args.api_key,
        operator_key=args.operator_key, tls=args.tls, mcts_millis=args.mcts_millis, workers=args.workers,
        max_games=args.max_games, remote_bots=tuple(remote_bots.items()),
        remote_deadline_ms=args.remote_deadline_ms,
    )
    try:
        summary = asyncio.run(_run(options, progress=not args.no_progress))
    except (Unauthenticated, PermissionDenied, ValueError) as error:
        _say(f"gostop tournament: {error}")
        return 2
    if summary.interrupted:
        return _interrupted(out, summary, args.ladder)
    assert summary.report is not None
    print(format_report(summary.report))
    print()
    print("\n".join(wrap(f"{summary.played:,} games played, {summary.skipped:,} already done, {summary.failed:,} "
                         f"failed, of {summary.planned:,}; {summary.wall_seconds:.1f} s; results and report in {out}",
                         WIDTH)))
    _record(out, args.ladder)
    return 1 if summary.failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gostop tournament", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
