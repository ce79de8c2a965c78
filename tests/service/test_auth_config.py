"""How the key configuration of a server decides who may create games, and the bounds of the
credentials ``Authenticator`` accepts: the secret's shortest length, the longest API key compared,
and the cache of verified seat tokens."""

from __future__ import annotations

import grpc
import pytest

from gostop.service import auth as auth_module
from gostop.service.auth import Authenticator
from gostop.service.errors import Code, ServiceError
from gostop.v1 import game_pb2 as pb
from testkit.servers import API_KEY, OPERATOR_KEY, SECRET, config, expect, key_md, running_server

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
NEEDS_A_KEY = "CreateGame needs an API key (x-api-key)"


# ------------------------------------------------------------- who may create, by configuration


async def test_create_game_refused_without_key_when_only_api_keys_configured() -> None:
    async with running_server(config(api_keys=API_KEY, operator_keys="")) as api:
        req = pb.CreateGameRequest(preset="standard", seed=1)
        err = await expect(api.stub.CreateGame(req), UNAUTHENTICATED, "BAD_CREDENTIALS")
        assert err.message == NEEDS_A_KEY
        out = await api.stub.CreateGame(req, metadata=key_md(API_KEY))
        assert out.version == 1 and len(out.seats) == 2


async def test_create_game_refused_without_key_when_only_operator_keys_configured() -> None:
    async with running_server(config(api_keys="", operator_keys=OPERATOR_KEY)) as api:
        req = pb.CreateGameRequest(preset="standard", seed=1)
        err = await expect(api.stub.CreateGame(req), UNAUTHENTICATED, "BAD_CREDENTIALS")
        assert err.message == NEEDS_A_KEY
        out = await api.stub.CreateGame(req, metadata=key_md(OPERATOR_KEY))
        assert out.version == 1 and len(out.seats) == 2


def test_api_keys_are_required_when_either_kind_of_key_is_configured() -> None:
    secret = SECRET.encode()
    assert Authenticator(secret, api_keys=[API_KEY]).api_keys_required
    assert Authenticator(secret, operator_keys=[OPERATOR_KEY]).api_keys_required
    assert Authenticator(secret, api_keys=[API_KEY], operator_keys=[OPERATOR_KEY]).api_keys_required
    assert not Authenticator(secret).api_keys_required
    assert not Authenticator(secret, api_keys=[""], operator_keys=[""]).api_keys_required


# ------------------------------------------------------------------------------ the secret


def test_a_token_secret_of_16_bytes_is_accepted() -> None:
    auth = Authenticator(b"s" * 16)
    token = auth.issue("game", 1)
    caller = auth.caller((("authorization", f"Bearer {token}"),))
    assert (caller.game_id, caller.seat) == ("game", 1)


def test_a_token_secret_of_15_bytes_is_refused() -> None:
    with pytest.raises(ValueError) as caught:
        Authenticator(b"s" * 15)
    assert str(caught.value) == "the token secret must be at least 16 bytes"


# ------------------------------------------------------------------------ the longest API key


def test_an_api_key_of_1024_bytes_is_compared_and_accepted() -> None:
    key = "k" * 1024
    auth = Authenticator(SECRET.encode(), api_keys=[key], operator_keys=["o" * 1024])
    caller = auth.caller((("x-api-key", key),))
    assert (caller.api_key, caller.operator) == (True, False)
    operator = auth.caller((("x-api-key", "o" * 1024),))
    assert (operator.api_key, operator.operator) == (True, True)


def test_an_api_key_of_1025_bytes_is_refused_even_when_configured() -> None:
    """Keys longer than 1,024 bytes are refused before any comparison, configured or not."""
    key = "k" * 1025
    auth = Authenticator(SECRET.encode(), api_keys=[key], operator_keys=["o" * 1025])
    for presented in (key, "o" * 1025):
        with pytest.raises(ServiceError) as caught:
            auth.caller((("x-api-key", presented),))
        assert (caught.value.code, caught.value.reason, caught.value.message) == (
            Code.UNAUTHENTICATED, "BAD_CREDENTIALS", "unknown API key")


# -------------------------------------------------------------------- verified-token cache


def _verify(auth: Authenticator, token: str) -> tuple[str | None, int | None]:
    caller = auth.caller((("authorization", f"Bearer {token}"),))
    return caller.game_id, caller.seat


def test_verified_tokens_are_all_remembered_until_the_bound_then_the_cache_restarts() -> None:
    """Every verified token is remembered (no second HMAC for it) up to ``_VERIFIED_MAX``
    tokens; the next new token clears the cache and is the only one remembered."""
    bound = auth_module._VERIFIED_MAX
    assert bound == 8192
    auth = Authenticator(SECRET.encode())
    tokens = [auth.issue(f"game{i}", i % 4) for i in range(bound + 1)]
    assert _verify(auth, tokens[0]) == ("game0", 0)
    assert _verify(auth, tokens[1]) == ("game1", 1)
    assert auth._verified == {tokens[0]: ("game0", 0), tokens[1]: ("game1", 1)}
    for i, token in enumerate(tokens[2:bound], start=2):
        assert _verify(auth, token) == (f"game{i}", i % 4)
    assert len(auth._verified) == bound
    assert set(auth._verified) == set(tokens[:bound])
    # Remembered tokens are answered from the cache: the bound is not reached again by them.
    assert _verify(auth, tokens[5]) == ("game5", 1)
    assert len(auth._verified) == bound
    assert _verify(auth, tokens[bound]) == (f"game{bound}", bound % 4)
    assert auth._verified == {tokens[bound]: (f"game{bound}", bound % 4)}
