"""The ``gostop`` command: ``gostop serve`` runs the service; ``gostop demo`` plays a round;
``gostop tournament`` plays bots against each other through the service; ``gostop ladder`` rates
every tournament game ever recorded; ``gostop bot`` plays seats of a game with a bot; ``gostop play``
is a terminal game against bots. The server-side commands (``serve``, ``bots serve``) live with the
service, in ``gostop.service.programs``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gostop.engine.rules import PRESETS
from gostop.tools.demo import demo


def main(argv: Sequence[str] | None = None) -> int:
    """The ``gostop`` command; its exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:  # `gostop demo | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


OPAQUE_VALUES = ("--game", "--token")
"""Flags whose values are ids the server made: a game id is base64url and may begin with ``-``."""


def joined_opaque_values(argv: Sequence[str]) -> list[str]:
    """``argv`` with each opaque flag joined to the value after it (``--game=-x1``), so that a
    value beginning with ``-`` is not read as another flag; argparse alone refuses it.

    >>> joined_opaque_values(["bot", "--game", "-cQ4", "--token", "t", "--seed", "5"])
    ['bot', '--game=-cQ4', '--token=t', '--seed', '5']
    """
    out: list[str] = []
    pending = ""
    for arg in argv:
        if pending:
            out.append(f"{pending}={arg}")
            pending = ""
        elif arg in OPAQUE_VALUES:
            pending = arg
        else:
            out.append(arg)
    return out + ([pending] if pending else [])


def _main(argv: Sequence[str] | None) -> int:
    argv = joined_opaque_values(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="gostop", description="Go-Stop game engine and service")
    sub = parser.add_subparsers(dest="command", required=True)
    try:
        from gostop.service import config as cfg
    except ImportError as exc:  # installed without the [server] extra
        missing = str(exc)
        for name, text in (("serve", "run the gRPC game service"), ("settings", "print the table of server settings"),
                           ("play", "play against bots in the terminal"), ("tournament", "a bot tournament"),
                           ("bots", "bot workers for bot seats"), ("ladder", "the ratings of every tournament")):
            sub.add_parser(name, help=f"{text} (needs the [server] extra)").add_argument("rest", nargs="*")
        add_client_commands(sub)
        args, _ = parser.parse_known_args(argv)
        if args.command in ("serve", "settings", "play", "tournament", "bots", "ladder"):
            sys.stderr.write(f"gostop {args.command}: {missing}\n")
            return 2
        return run_client_command(parser.parse_args(argv))
    from gostop.service.programs import botworker, serve
    from gostop.tools import ladder, play, tournament

    serve.add_arguments(sub.add_parser("serve", help="run the gRPC game service"))
    sub.add_parser("settings", help="print the table of server settings")
    botworker.add_arguments(sub.add_parser("bots", help="bot workers: gostop bots serve plays the bot seats' turns"))
    tournament.add_arguments(sub.add_parser("tournament", help="a duplicate-deal bot tournament (docs/tournaments.md)"))
    ladder.add_arguments(sub.add_parser("ladder", help="the ratings of every tournament game recorded "
                                        "(docs/tournaments.md#ladder)"))
    play.add_play_arguments(sub.add_parser("play", help="play against bots in the terminal (docs/clients.md)"))
    add_client_commands(sub)
    args = parser.parse_args(argv)
    if args.command == "play":
        return play.play_command(args)
    if args.command == "tournament":
        return tournament.run_from_args(args)
    if args.command == "ladder":
        return ladder.run_from_args(args)
    if args.command == "bots":
        return botworker.serve_command(args)
    if args.command in ("bot", "demo"):
        return run_client_command(args)
    if args.command == "settings":
        print(cfg.settings_table())
        return 0
    return serve.serve_command(args, parser)


def add_client_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that need no server: ``demo`` and ``bot``."""
    from gostop.tools import bot

    d = sub.add_parser("demo", help="play a seeded demo round in the terminal")
    d.add_argument("--preset", choices=PRESETS, default="standard")
    d.add_argument("--players", type=int, default=None)
    d.add_argument("--seed", type=int, default=2026)
    bot.add_bot_arguments(sub.add_parser("bot", help="play seats of a game with a bot (docs/clients.md)"))


def run_client_command(args: argparse.Namespace) -> int:
    if args.command == "demo":
        return demo(args.preset, args.players, args.seed)
    from gostop.tools import bot

    return bot.bot_command(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
