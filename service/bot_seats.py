"""Bot seats: seats of a game that the server's bot workers play.

``CreateGame`` declares them (``BotSeat``: seat, bot, budget); they are checked here against the
server's settings and kept in the game's first log entry, which never changes. A bot seat gets no
seat token: only a caller with a bot-worker key acts for it (``auth.Caller.bot_seat``), and such a
caller acts for nothing else. Which bot a seat may name is the operator's choice, never a caller's:
the built-in bots, the remote bots named in ``GOSTOP_REMOTE_BOTS`` (so no request can make a worker
dial an address of its choosing) and the plugins listed in ``GOSTOP_BOT_PLUGINS``.

A built-in bot's options are checked here too (``BOT_OPTIONS``): a seat may set only the options
its bot reads, within their ranges, and no option may buy more work than the seat's budget (a
search given a day of wall-clock time would run on, a core busy, long after its decision timed
out and fell back). The worker bounds a search by the budget whatever its options say (games
created before these checks keep their specs) and stops a decision past its deadline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
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


def _refused(reason: str, message: str, field: str = "bot_seats", **metadata: str) -> ServiceError:
    return invalid(reason, message, field=field, **metadata)


def _target_and_options(spec: str, field: str = "bot_seats") -> tuple[str, str]:
    """The bot a spec names and its options text (``''`` for none), as ``gostop.bots`` splits them:
    the ``:``-separated parts without ``=`` name the bot, the part with ``=`` holds the options."""
    parts = spec.split(":")
    named = [p for p in parts if "=" not in p]
    options = [p for p in parts if "=" in p]
    if len(options) > 1 or (options and parts[-1] != options[0]):
        raise _refused("BAD_BOT_SPEC", f"bot {spec!r}: options come last, once: name:key=value,...", field)
    if not named or not all(named):
        raise _refused("BAD_BOT_SPEC", f"bot {spec!r}: no bot named", field)
    if options and not _OPTIONS.fullmatch(options[0]):
        raise _refused("BAD_BOT_SPEC", f"bot {spec!r}: options are key=value,... (letters, digits, _ . + -)", field)
    return ":".join(named), options[0] if options else ""


@dataclass(frozen=True, slots=True)
class BotOption:
    """What one option of a built-in bot may be: ``kind`` ``int``, ``float``, ``bool`` or ``choice``
    (one of ``choices``); a number from ``low`` (excluded when ``low_open``) to ``high``; and, when
    ``budgeted``, milliseconds of one decision, so at most the seat's budget."""

    kind: str
    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    budgeted: bool = False
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        """What the option may be, in words (for a refusal's message)."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return " or ".join(self.choices)
        what = "a whole number" if self.kind == "int" else "a finite number"
        low = f"above {self.low:g}" if self.low_open else f"at least {self.low:g}"
        if self.budgeted:
            return f"{what} {low}, at most the seat's budget_ms"
        return f"{what} {low}" + ("" if self.high == math.inf else f", at most {self.high:g}")

    def fits(self, value: bool | int | float | str) -> bool:
        """Whether ``value`` is of this option's kind and in its range (the budget aside)."""
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "choice":
            return isinstance(value, str) and value in self.choices
        if isinstance(value, (bool, str)) or (self.kind == "int" and not isinstance(value, int)):
            return False
        if not math.isfinite(value):
            return False
        return (value > self.low if self.low_open else value >= self.low) and value <= self.high


MCTS_OPTIONS: Mapping[str, BotOption] = {
    # The search's work: each bounded, and every search ends at the seat's budget of CPU time.
    "iterations": BotOption("int", 1),
    "millis": BotOption("float", 0, low_open=True, budgeted=True),
    "cpu_millis": BotOption("float", 0, low_open=True, budgeted=True),
    "belief_samples": BotOption("int", 1, 64),
    "reply_depth": BotOption("int", 0, 8),
    # Its tuning: no work of their own.
    "mode": BotOption("choice", choices=("flat", "uct")),
    "halving": BotOption("bool"),
    "infer": BotOption("bool"),
    "exploration": BotOption("float", 0, 100),
    "epsilon": BotOption("float", 0, 1),
    "points_weight": BotOption("float", 0, 100),
    "points_scale": BotOption("float", 0, 1e6, low_open=True),
    "prior_weight": BotOption("float", 0, 100),
    "beta": BotOption("float", 0, 1000),
    "noise": BotOption("float", 0, 1),
}
"""The options a bot seat may give ``mcts`` (``gostop.bots.MctsBot``'s parameters but ``seed``,
which the worker derives from the turn) and what each may be."""

BOT_OPTIONS: Mapping[str, Mapping[str, BotOption]] = {"random": {}, "greedy": {}, "mcts": MCTS_OPTIONS}
"""Per built-in bot, the options a bot seat may give it."""


def option_value(text: str) -> bool | int | float | str:
    """An option's value as ``gostop.bots`` reads it: true or false, else a whole number, else a
    number, else the text itself."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def check_bot_options(spec: str, budget_ms: int, field: str = "bot_seats") -> None:
    """Refuse (``INVALID_ARGUMENT``) a built-in bot's options that it does not read, that are given
    twice or out of range (``BAD_BOT_OPTION``), or that ask for more time than the seat's budget
    (``BOT_OPTION_OVER_BUDGET``). A plugin's options are the plugin's to read."""
    target, text = _target_and_options(spec, field)
    allowed = BOT_OPTIONS.get(target)
    if allowed is None or not text:
        return
    seen: set[str] = set()
    for item in text.split(","):
        key, _, raw = item.partition("=")
        option = allowed.get(key)
        if option is None:
            takes = f"it takes {', '.join(allowed)}" if allowed else "it takes none"
            raise _refused("BAD_BOT_OPTION", f"bot {spec!r}: {target} has no option {key!r} ({takes})", bot=spec)
        if key in seen:
            raise _refused("BAD_BOT_OPTION", f"bot {spec!r}: option {key!r} is given twice", field, bot=spec)
        seen.add(key)
        value = option_value(raw)
        if not option.fits(value):
            raise _refused("BAD_BOT_OPTION", f"bot {spec!r}: {key} must be {option.describe()}, not {raw!r}",
                           field, bot=spec)
        if option.budgeted and isinstance(value, (int, float)) and value > budget_ms:
            raise _refused("BOT_OPTION_OVER_BUDGET", f"bot {spec!r}: {key}={raw} is more than the seat's budget of "
                           f"{budget_ms} ms per decision (lower it, or raise budget_ms up to this server's maximum)",
                           field, bot=spec, budget_ms=str(budget_ms))


def check_bot_spec(spec: str, config: Config, field: str = "bot_seats") -> None:
    """Refuse (``INVALID_ARGUMENT``, naming ``field``) a bot this server's settings do not offer."""
    if not spec or len(spec) > MAX_BOT_SPEC or not spec.isascii() or not spec.isprintable() or " " in spec:
        raise _refused("BAD_BOT_SPEC", f"a bot is 1-{MAX_BOT_SPEC} printable ASCII characters without spaces", field)
    target, options = _target_and_options(spec, field)
    if target in BUILTIN_BOTS:
        return
    if target.startswith("remote:"):
        name = target[len("remote:"):]
        remotes = config.remote_bot_addresses()
        if name in remotes:
            if options:
                raise _refused("BAD_BOT_SPEC", f"remote bot {name!r} takes no options here", field)
            return
        known = ", ".join(sorted(remotes)) or "none"
        raise _refused("UNKNOWN_BOT", f"no remote bot {name!r} on this server (the operator names them; "
                       f"configured: {known}); a request cannot name an address", field, bot=spec)
    if target in config.keys("bot_plugins"):
        return
    offered = ", ".join([*BUILTIN_BOTS, *config.keys("bot_plugins"), *(f"remote:{n}" for n in
                                                                        sorted(config.remote_bot_addresses()))])
    raise _refused("UNKNOWN_BOT", f"bots on this server may be {offered}, not {target!r}", field, bot=spec)


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
        budget_ms = item.budget_ms or config.bot_budget_ms
        check_bot_options(item.bot, budget_ms)
        out[item.seat] = BotSeatSpec(item.seat, item.bot, budget_ms)
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
