"""Seat tokens and API keys.

A seat token names a game and a seat and carries an HMAC-SHA256 of both under the
server secret, so any replica checks it without a store lookup. API keys guard
``CreateGame`` when configured; operator keys unlock explicit deals and full logs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import denied, unauthenticated

_PREFIX = "gst1"
_VERIFIED_MAX = 8192
"""Seat tokens remembered as verified (a client sends its token with every call)."""
_TOKEN = re.compile(re.escape(_PREFIX) + r"\.([A-Za-z0-9_-]{1,64})\.(0|[1-9][0-9]?)\.([A-Za-z0-9_-]{43})")
"""The one canonical form of a seat token: the prefix, a game id, a seat number without leading
zeros (at most two digits: tables have at most four seats) and the unpadded base64url of a
32-byte MAC. Matched with ``fullmatch``, so no alias (``00``, ``+0``, a trailing newline), no
non-ASCII byte and no number too big for the logs or the wire gets through."""
_MAX_CREDENTIAL = 1024
"""Longest API key considered (longer ones are refused before any comparison)."""


def _as_bytes(value: str | bytes) -> bytes:
    """Header bytes to compare: ``compare_digest`` refuses ``str`` with non-ASCII characters, so
    every credential is compared as bytes (text as UTF-8, lone surrogates kept)."""
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: a seat of one game (or nobody), and whether it holds a key."""

    game_id: str | None
    seat: int | None
    api_key: bool
    operator: bool
    bot_seat: int | None = None
    """With a bot-worker key: the seat the worker acts for (``x-bot-seat``), which the game must
    have declared a bot seat (``Games`` checks)."""


class Authenticator:
    def __init__(self, secret: bytes, api_keys: Sequence[str] = (), operator_keys: Sequence[str] = (),
                 bot_keys: Sequence[str] = ()) -> None:
        if len(secret) < 16:
            raise ValueError("the token secret must be at least 16 bytes")
        self._secret = secret
        self._api_keys = tuple(_as_bytes(k) for k in api_keys if k)
        self._operator_keys = tuple(_as_bytes(k) for k in operator_keys if k)
        self._bot_keys = tuple(_as_bytes(k) for k in bot_keys if k)
        self._verified: dict[str, tuple[str, int]] = {}
        """Token → (game id, seat) of tokens whose signature was checked: a token's HMAC is computed once."""

    @property
    def api_keys_required(self) -> bool:
        return bool(self._api_keys or self._operator_keys)

    def _sign(self, game_id: str, seat: int) -> str:
        mac = hmac.new(self._secret, f"{game_id}.{seat}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def issue(self, game_id: str, seat: int) -> str:
        """The secret token of one seat of one game."""
        return f"{_PREFIX}.{game_id}.{seat}.{self._sign(game_id, seat)}"

    def caller(self, metadata: Sequence[tuple[str, str | bytes]]) -> Caller:
        """Identify the caller from request metadata; UNAUTHENTICATED for a bad credential.

        Every byte of the metadata is the caller's: whatever it holds ends in a
        ``ServiceError``, never in another exception.
        """
        token: bytes | None = None
        key: bytes | None = None
        bot_seat: bytes | None = None
        for name, value in metadata:
            raw = _as_bytes(value)
            if name == "authorization":
                if not raw.startswith(b"Bearer "):
                    raise unauthenticated("authorization must be 'Bearer <seat token>'")
                token = raw[len(b"Bearer "):].strip()
            elif name == "x-api-key":
                key = raw.strip()
            elif name == "x-bot-seat":
                bot_seat = raw.strip()
        api = operator = bot = False
        if key is not None:
            if not (self._api_keys or self._operator_keys or self._bot_keys):
                raise unauthenticated("this server has no API keys configured: call without x-api-key")
            if len(key) <= _MAX_CREDENTIAL:
                operator = any(hmac.compare_digest(key, k) for k in self._operator_keys)
                api = operator or any(hmac.compare_digest(key, k) for k in self._api_keys)
                bot = not api and any(hmac.compare_digest(key, k) for k in self._bot_keys)
            if not (api or bot):
                raise unauthenticated("unknown API key")
        if bot_seat is not None or bot:
            return self._bot_caller(bot, bot_seat, token)
        if token is None:
            return Caller(None, None, api, operator)
        text = token.decode("ascii", "replace")
        known = self._verified.get(text)
        if known is not None:
            return Caller(known[0], known[1], api, operator)
        parsed = _TOKEN.fullmatch(text)  # non-ASCII bytes decoded as U+FFFD never match
        if parsed is None:
            raise unauthenticated("malformed seat token")
        game_id, seat, mac = parsed.group(1), int(parsed.group(2)), parsed.group(3)
        if not hmac.compare_digest(mac.encode(), self._sign(game_id, seat).encode()):
            raise unauthenticated("invalid seat token")
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        self._verified[text] = (game_id, seat)
        return Caller(game_id, seat, api, operator)


    @staticmethod
    def _bot_caller(bot: bool, seat: bytes | None, token: bytes | None) -> Caller:
        """A bot worker: a bot key and the seat it acts for, nothing else."""
        if not bot:
            raise unauthenticated("x-bot-seat needs a bot-worker key (x-api-key)")
        if token is not None:
            raise unauthenticated("a bot worker acts by x-bot-seat, without a seat token")
        if seat is None:
            raise unauthenticated("a bot-worker key needs x-bot-seat: the seat it acts for")
        if not _BOT_SEAT.fullmatch(seat):
            raise unauthenticated("x-bot-seat must be a seat number (0-9)")
        return Caller(None, None, False, False, int(seat))


_BOT_SEAT = re.compile(rb"[0-9]")


def seat_in(caller: Caller, game_id: str) -> int | None:
    """The caller's seat in ``game_id`` (None for a spectator); a token of another game is refused."""
    if caller.game_id is None:
        return None
    if caller.game_id != game_id:
        raise denied("WRONG_GAME", "the seat token belongs to another game")
    return caller.seat
