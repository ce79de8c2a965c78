"""Hostile input against a real server process: hypothesis-generated requests to every RPC (random
fields, unknown enum values, wrong and malformed game ids, tokens of another game or seat, tampered
tokens, replayed request ids with other content), byte-level fuzzed raw request bytes through a
generic channel call, oversized messages, and corrupted game data written straight into Redis.
Every answer is a clear status code — never INTERNAL or UNKNOWN — with its ``ErrorInfo``, and a
failed call changes nothing (the games' versions and views stay byte for byte the same)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gostop.engine import match_from_bytes
from gostop.service.auth import Authenticator
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from testkit.redis_server import RedisServer
from testkit.servers import (
    API_KEY,
    OPERATOR_KEY,
    SECRET,
    ServerProcess,
    config,
    failure,
    running_server,
    start_process,
)
from testkit.servers import stub as make_stub

from .harness import reason_of, record, scaled

# Not in make check: generated hostile requests in volume.
pytestmark = pytest.mark.slow

SERVICE = pb.DESCRIPTOR.services_by_name["GameService"]
METHODS = {m.name: m for m in SERVICE.methods}
CLEAR = {
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ABORTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.OUT_OF_RANGE,
}  # fmt: skip
"""The codes hostile input may get (never INTERNAL, UNKNOWN, DATA_LOSS or UNAVAILABLE)."""
MUTATING = {"SubmitAction", "StartNextRound"}
MAX_MESSAGE = 1 << 20


# --------------------------------------------------------------------------- the target


@dataclass
class Target:
    """A server process (memory store or Redis), its games and what a caller may present."""

    server: ServerProcess
    channel: grpc.Channel
    stub: pb_grpc.GameServiceStub
    games: list[pb.CreateGameResponse]
    request_ids: list[str]
    tokens: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    def state(self, seats: bool = False) -> list[bytes]:
        """Every game's spectator view and version (and with ``seats`` each seat's), as bytes."""
        out = []
        for game in self.games:
            req = pb.GetGameRequest(game_id=game.game_id)
            out.append(self.stub.GetGame(req, timeout=5).SerializeToString())
            for seat in game.seats if seats else ():
                md = (("authorization", f"Bearer {seat.token}"),)
                out.append(self.stub.GetGame(req, metadata=md, timeout=5).SerializeToString())
        return out


def _tokens(games: list[pb.CreateGameResponse]) -> list[str]:
    """Valid tokens, tokens of seats a game lacks, tampered and malformed ones, foreign secrets."""
    auth = Authenticator(SECRET.encode())
    foreign = Authenticator(b"another-secret-of-sixteen-bytes")
    out = [s.token for g in games for s in g.seats]
    for g in games:
        out += [auth.issue(g.game_id, 7), auth.issue(g.game_id, -1), foreign.issue(g.game_id, 0)]
        token = g.seats[0].token
        out += [token[:-1] + ("A" if token[-1] != "A" else "B"), token + "x", token.replace("gst1", "gst2"),
                token.rsplit(".", 1)[0], f"gst1.{g.game_id}.0", f"gst1.{g.game_id}.01.x", f"gst1.{g.game_id}.+1.x"]
    out += ["", "garbage", "gst1....", "gst1.a.b.c.d", auth.issue("no-such-game", 0), auth.issue("bad{id}", 0)]
    return out


def _play_a_little(stub: pb_grpc.GameServiceStub, game: pb.CreateGameResponse, steps: int) -> list[str]:
    """A few legal actions with request ids (to be replayed with other content later)."""
    rids = []
    for n in range(steps):
        spectator = stub.GetGame(pb.GetGameRequest(game_id=game.game_id), timeout=5)
        if spectator.view.phase == pb.PHASE_OVER:
            break
        seat = spectator.view.to_move
        md = (("authorization", f"Bearer {game.seats[seat].token}"),)
        own = stub.GetGame(pb.GetGameRequest(game_id=game.game_id), metadata=md, timeout=5)
        rid = f"fixture-{game.game_id}-{n}"
        stub.SubmitAction(pb.SubmitActionRequest(game_id=game.game_id, expected_version=own.version, request_id=rid,
                                                 action_id=own.view.legal_actions[0].id), metadata=md, timeout=5)
        rids.append(rid)
    return rids


@pytest.fixture(scope="module")
def target(store_url: str) -> Iterator[Target]:
    server = asyncio.run(start_process(store_url, GOSTOP_API_KEYS=API_KEY))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = make_stub(channel)
    operator = (("x-api-key", OPERATOR_KEY),)
    games = [stub.CreateGame(pb.CreateGameRequest(preset=p, players=n, seed=s, rounds=r), metadata=operator, timeout=5)
             for p, n, s, r in (("standard", 2, 1, 1), ("classic", 4, 2, 2), ("house", 3, 3, 0))]
    rids = [rid for g in games for rid in _play_a_little(stub, g, 3)]
    try:
        yield Target(server, channel, stub, games, rids, _tokens(games))
    finally:
        channel.close()
        server.stop()
    assert server.process.returncode == 0, server.log()
    assert '"internal error"' not in server.log()


# ------------------------------------------------------------------------- strategies

INT32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-3, 140), st.sampled_from([0, 1, -1, 48, 50, 51, 128]))
INT64 = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 12))
TEXT = st.text(max_size=40)


def _string(name: str, target: Target) -> st.SearchStrategy[str]:
    ids = [g.game_id for g in target.games]
    if name == "game_id":
        return st.one_of(st.sampled_from(ids), st.sampled_from(["", "x" * 65, "a{b}c", "../etc", "no-such-game",
                                                                "Ünïcode", ids[0] + " ", ids[0].lower()]), TEXT)
    if name == "request_id":
        return st.one_of(st.just(""), st.sampled_from(target.request_ids), TEXT, st.text(min_size=129, max_size=200))
    if name in ("preset", "name"):
        return st.one_of(st.sampled_from(["standard", "simple", "classic", "house", "arcade", "", "STANDARD"]), TEXT)
    return TEXT


def _field(f: FieldDescriptor, target: Target, depth: int) -> st.SearchStrategy[Any] | None:
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        if depth >= 3:
            return None
        sub = f.message_type
        assert sub is not None
        one: st.SearchStrategy[Any] = st.deferred(lambda: message(sub, target, depth + 1))
    elif f.type == FieldDescriptor.TYPE_ENUM:
        one = st.integers(-3, 12)  # unknown values included: proto3 enums are open
    elif f.type == FieldDescriptor.TYPE_BOOL:
        one = st.booleans()
    elif f.type == FieldDescriptor.TYPE_STRING:
        one = _string(f.name, target)
    elif f.type == FieldDescriptor.TYPE_UINT64:
        one = st.integers(0, 2**64 - 1)
    elif f.type == FieldDescriptor.TYPE_INT64:
        one = INT64
    else:
        one = INT32
    if f.is_repeated:
        return st.lists(one, max_size=12)
    return one


def message(descriptor: Descriptor, target: Target, depth: int = 0) -> st.SearchStrategy[Message]:
    """Any message of ``descriptor``: every field may be set (oneofs: any one of them) to any value."""
    cls = _class(descriptor)
    optional = {f.name: s for f in descriptor.fields if (s := _field(f, target, depth)) is not None}

    def build(values: dict[str, Any]) -> Message:
        out = cls()
        for name, value in values.items():
            f = descriptor.fields_by_name[name]
            if f.type == FieldDescriptor.TYPE_MESSAGE:
                if f.is_repeated:
                    getattr(out, name).extend(value)
                else:
                    getattr(out, name).CopyFrom(value)
            elif f.is_repeated:
                getattr(out, name).extend(value)
            else:
                setattr(out, name, value)
        return out

    return st.fixed_dictionaries({}, optional=optional).map(build)


def _class(descriptor: Descriptor) -> type[Message]:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(descriptor)


def metadata(target: Target) -> st.SearchStrategy[tuple[tuple[str, str], ...]]:
    auth = st.one_of(st.sampled_from(target.tokens).map(lambda t: ("authorization", f"Bearer {t}")),
                     st.sampled_from(["Basic x", "Bearer", "bearer x", "Bearer  "]).map(lambda v: ("authorization", v)))
    key = st.sampled_from([OPERATOR_KEY, API_KEY, "wrong-key", ""]).map(lambda k: ("x-api-key", k))
    return st.lists(st.one_of(auth, key), max_size=2).map(tuple)


# ------------------------------------------------------------------------------- calls


def invoke(target: Target, method: str, request: Any, md: tuple[tuple[str, str], ...], raw: bool = False,
           listen: float = 0.5) -> str:
    """Call ``method`` (raw bytes when ``raw``; a stream is listened to for ``listen`` seconds); the
    outcome's code name, after checking it is clear."""
    desc = METHODS[method]
    path = f"/{SERVICE.full_name}/{method}"
    ser = None if raw else (lambda m: m.SerializeToString())
    try:
        if desc.server_streaming:
            stream = target.channel.unary_stream(path, request_serializer=ser, response_deserializer=None)
            for _ in zip(range(3), stream(request, metadata=md, timeout=listen), strict=False):
                pass
        else:
            target.channel.unary_unary(path, request_serializer=ser, response_deserializer=None)(
                request, metadata=md, timeout=5)
    except grpc.RpcError as error:
        code = error.code()
        if desc.server_streaming and code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return "OK"  # a valid watch, still open when the client stopped listening
        reason = reason_of(error)
        assert code in CLEAR, f"{method}: {code.name} {reason}: {error.details()}"
        if code is not grpc.StatusCode.RESOURCE_EXHAUSTED:
            assert reason not in ("TRANSPORT", "NO_ERROR_INFO"), f"{method}: {code.name} without ErrorInfo"
        details = error.details() or ""
        assert not any(t in details for t in target.tokens if len(t) > 20), "a token in an error message"
        target.outcomes[f"{method} {code.name} {reason}"] += 1
        return str(code.name)
    target.outcomes[f"{method} OK"] += 1
    return "OK"


def _check_state(target: Target, before: list[bytes], method: str, code: str, seats: bool = False) -> list[bytes]:
    after = target.state(seats)
    if code != "OK" or method not in MUTATING:
        assert after == before, f"{method} answered {code} but changed a game"
    return after


# ------------------------------------------------------------------------------- tests

CALLS = st.sampled_from(sorted(METHODS))


@settings(max_examples=scaled(150, 2.0), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_generated_requests_get_clear_errors_and_change_nothing(target: Target, data: st.DataObject) -> None:
    method = data.draw(CALLS)
    request = data.draw(message(METHODS[method].input_type, target))
    md = data.draw(metadata(target))
    before = target.state()
    code = invoke(target, method, request, md)
    _check_state(target, before, method, code)
    record(bad_inputs_generated=1)


def _corpus(target: Target) -> dict[str, list[bytes]]:
    """Valid requests of every method, to mutate."""
    g = target.games[0]
    corpus: dict[str, list[Message]] = {
        "ListRuleSets": [pb.ListRuleSetsRequest()],
        "CreateGame": [pb.CreateGameRequest(preset="classic", players=3, seed=5, rounds=2,
                                            overrides=pb.Rules(go_threshold=3, point_value=50))],
        "GetGame": [pb.GetGameRequest(game_id=g.game_id)],
        "SubmitAction": [pb.SubmitActionRequest(game_id=g.game_id, expected_version=2, request_id="fuzz",
                                                structured=pb.Action(play_card=pb.PlayCard(card=13, shake=True))),
                         pb.SubmitActionRequest(game_id=g.game_id, expected_version=4, action_id=7)],
        "StartNextRound": [pb.StartNextRoundRequest(game_id=g.game_id, expected_version=3, request_id="n")],
        "WatchGame": [pb.WatchGameRequest(game_id=g.game_id, after_version=2)],
        "GetGameLog": [pb.GetGameLogRequest(game_id=g.game_id, after_version=1, page_size=2)],
    }
    return {m: [r.SerializeToString() for r in rs] for m, rs in corpus.items()}


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[pos % len(data)] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[pos:pos] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 8)))
        elif op == 2:
            del data[pos:pos + rng.randint(1, 8)]
        elif op == 3:
            data = data[:pos]
        elif op == 4 and data:
            data[pos % len(data)] = rng.choice([0x00, 0x7F, 0x80, 0xFF])
        else:
            data += bytes([rng.randrange(1, 16) << 3 | rng.choice([0, 1, 2, 5]), 0xFF, 0xFF])
    return bytes(data)


def test_fuzzed_raw_bytes_get_clear_errors_and_change_nothing(target: Target) -> None:
    rng = random.Random(77)
    corpus = _corpus(target)
    md = (("authorization", f"Bearer {target.games[0].seats[0].token}"), ("x-api-key", OPERATOR_KEY))
    before = target.state(seats=True)
    tried = 0
    for round_ in range(scaled(6, 0.1)):
        mutated = False
        for method, seeds in corpus.items():
            for _ in range(40):
                raw = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64))) if rng.random() < 0.2 else \
                    _mutate(rng.choice(seeds), rng)
                code = invoke(target, method, raw, md, raw=True)
                mutated |= code == "OK" and method in MUTATING
                tried += 1
        before = _check_state(target, before, "SubmitAction", "OK" if mutated else f"fuzz round {round_}", seats=True)
    record(bad_inputs_fuzzed=tried)
    print("outcomes:", sorted(target.outcomes.items()))


def test_oversized_messages_are_resource_exhausted(target: Target) -> None:
    g = target.games[0]
    big = "x" * (MAX_MESSAGE + 10)
    requests: dict[str, Message] = {
        "ListRuleSets": pb.ListRuleSetsRequest(),  # made big with unknown-field bytes below
        "CreateGame": pb.CreateGameRequest(preset=big),
        "GetGame": pb.GetGameRequest(game_id=big),
        "SubmitAction": pb.SubmitActionRequest(game_id=g.game_id, expected_version=2, request_id=big, action_id=1),
        "StartNextRound": pb.StartNextRoundRequest(game_id=g.game_id, request_id=big),
        "WatchGame": pb.WatchGameRequest(game_id=big),
        "GetGameLog": pb.GetGameLogRequest(game_id=big),
    }
    before = target.state()
    for method, request in requests.items():
        raw = request.SerializeToString() + (b"\x7a" + _varint(len(big)) + big.encode() if method == "ListRuleSets"
                                             else b"")
        assert invoke(target, method, raw, (), raw=True, listen=10) == "RESOURCE_EXHAUSTED", method
    assert target.state() == before
    record(bad_inputs_oversized=len(requests))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


# ---------------------------------------------------------------------- corrupted data


async def test_corrupted_game_data_in_redis_is_a_clear_error(service_redis: RedisServer) -> None:
    """Garbage, truncated and bit-flipped snapshots, a non-numeric version, keys of the wrong type,
    undecodable log entries and stored responses: each answers DATA_LOSS / SNAPSHOT_CORRUPT (or, for
    bytes that still decode to a state the engine cannot use, INTERNAL with its ``ErrorInfo``) for
    that game only; the server keeps serving every other game."""
    rng = random.Random(5)
    outcomes: Counter[str] = Counter()
    async with running_server(config(service_redis.url, snapshot_cache=0)) as api:
        healthy = await api.create("standard", seed=1)
        sample = await api.create("standard", seed=2)
        snap_key = f"gostop:{{{sample.id}}}:snap"
        blob = service_redis.command("HGET", snap_key, "blob")
        assert isinstance(blob, bytes)
        corruptions: list[tuple[str, list[tuple[Any, ...]]]] = [
            ("garbage", [("HSET", "{snap}", "blob", b"\x00garbage\xff")]),
            ("empty", [("HSET", "{snap}", "blob", b"")]),
            ("truncated", [("HSET", "{snap}", "blob", blob[: len(blob) // 2])]),
            ("no version", [("HDEL", "{snap}", "version")]),
            ("bad version", [("HSET", "{snap}", "version", "two")]),
            ("wrong type", [("DEL", "{snap}"), ("SET", "{snap}", "x")]),
            ("bad log", [("DEL", "{log}"), ("XADD", "{log}", "1-0", "e", b"{not json")]),
            ("log wrong type", [("DEL", "{log}"), ("SET", "{log}", "x")]),
            ("bad stored response", [("HSET", "{req}", "r1", b"no separator")]),
        ]
        decodable = 0
        for i in range(scaled(40, 0.5)):
            flipped = bytearray(blob)
            for _ in range(rng.randint(1, 3)):
                flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            corruptions.append((f"flip {i}", [("HSET", "{snap}", "blob", bytes(flipped))]))
            try:
                match_from_bytes(bytes(flipped))
                decodable += 1  # no checksum: a flip that still decodes is served as another state
            except Exception:
                pass
        for label, commands in corruptions:
            game = await api.create("standard", seed=rng.getrandbits(32))
            keys = {"{snap}": f"gostop:{{{game.id}}}:snap", "{log}": f"gostop:{{{game.id}}}:log",
                    "{req}": f"gostop:{{{game.id}}}:req"}
            seat, v = await api.to_move(game)
            first = await api.submit(game, seat, v.legal_actions[0].id, request_id="r1")
            for command in commands:
                service_redis.command(*(keys.get(a, a) if isinstance(a, str) else a for a in command))
            calls = {
                "GetGame": api.get(game),
                "GetGame seat": api.get(game, 0),
                "SubmitAction": api.submit(game, 0, 0, version=2, request_id="r2"),
                "SubmitAction retry": api.submit(game, seat, v.legal_actions[0].id, version=1, request_id="r1"),
                "GetGameLog": api.log(game),
                "WatchGame": _first(api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id), timeout=2)),
            }
            for name, pending in calls.items():
                try:
                    answer = await pending
                except grpc.aio.AioRpcError as error:
                    assert error.code() is not grpc.StatusCode.DEADLINE_EXCEEDED, f"{label}: {name} hung"
                    err = await failure(_raise(error))
                    assert err.code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNAVAILABLE), (label, name, err)
                    if err.code is grpc.StatusCode.INTERNAL:
                        assert err.info.reason == "INTERNAL"
                    outcomes[f"{err.code.name} {err.info.reason}"] += 1
                else:
                    if name == "SubmitAction retry":
                        assert answer == first, f"{label}: a retry got another response"
                    outcomes["OK"] += 1
            if not label.startswith("flip"):
                assert outcomes["DATA_LOSS SNAPSHOT_CORRUPT"], label
            # Every other game is untouched and keeps working.
            assert (await api.get(healthy)).version == healthy.version
        seat, v = await api.to_move(healthy)
        await api.submit(healthy, seat, v.legal_actions[0].id)
    record(corrupted_games=len(corruptions), corrupted_snapshots_still_decoding=decodable,
           corrupted_internal_answers=sum(n for k, n in outcomes.items() if k.startswith("INTERNAL")))
    print("corrupted-data outcomes:", dict(outcomes))


async def _first(call: Any) -> Any:
    return await call.read()


async def _raise(error: Exception) -> None:
    raise error
