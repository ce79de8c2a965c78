"""Bot seats: seats of a game that the server's bot workers play.

``CreateGame`` declares them (``BotSeat``: seat, bot, budget); they are checked here against the
server's settings and kept in the game's first log entry, which never changes. A bot seat gets no
seat token: only a caller with a bot-worker key acts for it (``auth.Caller.bot_seat``), and such a
caller acts for nothing else. Which bot a seat may name is the operator's choice, never a caller's:
the built-in bots, the remote bots named in ``GOSTOP_REMOTE_BOTS`` (so no request can make a worker
dial an address of its choosing) and the plugins listed in ``GOSTOP_BOT_PLUGINS``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gostop.engine import Match
from gostop.v1 import game_pb2 as pb

from .config import Config
from .errors import ServiceError, invalid

BUILTIN_BOTS = ("random", "greedy", "mcts")
MAX_BOT_SPEC = 200
_OPTION = r"[A-Za-z_][A-Za-z0-9_]{0,63}=[A-Za-z0-9_.+-]{1,64}"
_OPTIONS = re.compile(f"{_OPTION}(,{_OPTION})*")
"""``key=value,...``: the options of a bot spec (the bot that takes them checks their meaning)."""


@dataclass(frozen=True, slots=True)
class BotSeatSpec:
    """A seat a bot plays: which bot (a spec as ``gostop.bots.make_bot`` reads it, or ``remote:NAME``)
    and its CPU budget per decision in milliseconds."""

    seat: int
    bot: str
    budget_ms: int

    def to_pb(self) -> pb.BotSeat:
        return pb.BotSeat(seat=self.seat, bot=self.bot, budget_ms=self.budget_ms)


def _refused(reason: str, message: str, **metadata: str) -> ServiceError:
    return invalid(reason, message, field="bot_seats", **metadata)


def _target_and_options(spec: str) -> tuple[str, str]:
    """The bot a spec names and its options text (``''`` for none), as ``gostop.bots`` splits them:
    the ``:``-separated parts without ``=`` name the bot, the part with ``=`` holds the options."""
    parts = spec.split(":")
    named = [p for p in parts if "=" not in p]
    options = [p for p in parts if "=" in p]
    if len(options) > 1 or (options and parts[-1] != options[0]):
        raise _refused("BAD_BOT_SPEC", f"bot {spec!r}: options come last, once: name:key=value,...")
    if not named or not all(named):
        raise _refused("BAD_BOT_SPEC", f"bot {spec!r}: no bot named")
    if options and not _OPTIONS.fullmatch(options[0]):
        raise _refused("BAD_BOT_SPEC", f"bot {spec!r}: options are key=value,... (letters, digits, _ . + -)")
    return ":".join(named), options[0] if options else ""


def check_bot_spec(spec: str, config: Config) -> None:
    """Refuse (``INVALID_ARGUMENT``) a bot this server's settings do not offer."""
    if not spec or len(spec) > MAX_BOT_SPEC or not spec.isascii() or not spec.isprintable() or " " in spec:
        raise _refused("BAD_BOT_SPEC", f"a bot is 1-{MAX_BOT_SPEC} printable ASCII characters without spaces")
    target, options = _target_and_options(spec)
    if target in BUILTIN_BOTS:
        return
    if target.startswith("remote:"):
        name = target[len("remote:"):]
        remotes = config.remote_bot_addresses()
        if name in remotes:
            if options:
                raise _refused("BAD_BOT_SPEC", f"remote bot {name!r} takes no options here")
            return
        known = ", ".join(sorted(remotes)) or "none"
        raise _refused("UNKNOWN_BOT", f"no remote bot {name!r} on this server (the operator names them; "
                       f"configured: {known}); a request cannot name an address", bot=spec)
    if target in config.keys("bot_plugins"):
        return
    offered = ", ".join([*BUILTIN_BOTS, *config.keys("bot_plugins"), *(f"remote:{n}" for n in
                                                                        sorted(config.remote_bot_addresses()))])
    raise _refused("UNKNOWN_BOT", f"bot seats on this server may be {offered}, not {target!r}", bot=spec)


def parse_bot_seats(seats: Sequence[pb.BotSeat], players: int, config: Config) -> tuple[BotSeatSpec, ...]:
    """The checked bot seats of a new game, ascending by seat, each budget resolved (0: the default)."""
    out: dict[int, BotSeatSpec] = {}
    for item in seats:
        if not 0 <= item.seat < players:
            raise _refused("BAD_BOT_SEAT", f"bot seat {item.seat} is not a seat of this {players}-player game")
        if item.seat in out:
            raise _refused("BAD_BOT_SEAT", f"seat {item.seat} is declared a bot seat twice")
        check_bot_spec(item.bot, config)
        if item.budget_ms < 0:
            raise _refused("BAD_BOT_BUDGET", "budget_ms must not be negative (0 takes the server's default)")
        if item.budget_ms > config.bot_budget_max_ms:
            raise _refused("BOT_BUDGET_TOO_LARGE",
                           f"budget_ms {item.budget_ms} is above this server's maximum {config.bot_budget_max_ms}",
                           max_budget_ms=str(config.bot_budget_max_ms))
        out[item.seat] = BotSeatSpec(item.seat, item.bot, item.budget_ms or config.bot_budget_ms)
    return tuple(out[seat] for seat in sorted(out))


def bot_seats_to_doc(seats: Sequence[BotSeatSpec]) -> list[list[Any]]:
    return [[s.seat, s.bot, s.budget_ms] for s in seats]


def bot_seats_from_doc(doc: Any) -> tuple[BotSeatSpec, ...]:
    """The bot seats kept in a game's first log entry (none for a game that has none)."""
    if not doc:
        return ()
    return tuple(BotSeatSpec(int(seat), str(bot), int(budget)) for seat, bot, budget in doc)


def decider(match: Match, seats: Sequence[BotSeatSpec]) -> tuple[BotSeatSpec, str] | None:
    """The bot seat that must act next and how (``act``; or ``next_round`` at a finished round of a
    table of bots alone, which nobody else would deal), or None when a person (or nobody) is next."""
    if not seats or match.finished:
        return None
    if match.round.over:
        if len(seats) == match.rules.players:
            return seats[0], "next_round"
        return None
    for spec in seats:
        if spec.seat == match.round.to_move:
            return spec, "act"
    return None
