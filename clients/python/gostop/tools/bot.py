"""``gostop bot``: play seats of a game on any server with a bot, until the match is finished."""

from __future__ import annotations

import argparse
import sys

from gostop.bots import BotSpecError, check_bot, make_bot
from gostop.bots.plugins import SPEC_HELP
from gostop.client import GostopClient, GostopError, seat_of_token
from gostop.client.runner import BotError, Chooser, run_seats
from gostop.engine import Action
from gostop.engine.render import action_text
from gostop.v1 import game_pb2 as pb

__all__ = ["add_bot_arguments", "bot_command"]


def add_bot_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``gostop bot``."""
    parser.add_argument("--server", default="127.0.0.1:50051", help="HOST:PORT of the game service")
    parser.add_argument("--game", default=None, help="game id (default: the one the token names)")
    parser.add_argument("--token", action="append", required=True,
                        help="seat token of a seat to play (repeat for several seats)")
    parser.add_argument("--bot", default="greedy", help="the bot: " + SPEC_HELP)
    parser.add_argument("--seed", type=int, default=0, help="bot seed (seat i's bot gets seed + i)")
    parser.add_argument("--tls-ca", default=None, help="PEM root certificates: connect with TLS")
    parser.add_argument("--tls", action="store_true", help="connect with TLS (system roots)")
    parser.add_argument("--no-next-round", action="store_true",
                        help="do not deal next rounds (wait for another seat to)")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")


def bot_command(args: argparse.Namespace) -> int:
    """``gostop bot``: play seats of a game with a bot until the match is finished."""
    roots = open(args.tls_ca, "rb").read() if args.tls_ca else None  # noqa: SIM115
    tokens: list[str] = args.token
    try:
        game_id: str = args.game or seat_of_token(tokens[0])[0]
    except ValueError as exc:
        sys.stderr.write(f"gostop bot: --token: {exc}\n")
        return 2
    try:
        check_bot(args.bot)
    except BotSpecError as exc:
        sys.stderr.write(f"gostop bot: --bot: {exc}\n")
        return 2
    out = sys.stdout

    def said(seat: int, action: Action, result: pb.TurnResult) -> None:
        if not args.quiet:
            out.write(f"v{result.version} seat {seat} ({args.bot}): {action_text(action)}\n")
            if result.HasField("settlement"):
                out.write(f"round over: {result.settlement.outcome}, points {list(result.settlement.points)}\n")
            out.flush()

    try:
        with GostopClient(args.server, root_certificates=roots, tls=args.tls) as client:
            seats: dict[int, tuple[str, Chooser]] = {}
            for token in tokens:
                seat = client.get_game(game_id, token=token).viewer
                seats[seat] = (token, make_bot(args.bot, seed=args.seed + seat))
            out.write(f"gostop bot: {args.bot} plays seat(s) {sorted(seats)} of game {game_id} on {args.server}\n")
            out.flush()
            report = run_seats(client, game_id, seats, start_next_rounds=not args.no_next_round, on_decision=said)
    except (GostopError, BotError) as exc:
        sys.stderr.write(f"gostop bot: {exc}\n")
        return 1
    out.write(report.text() + "\n")
    return 0
