"""The shared conformance scenarios (``tests/conformance/scenarios/*.json``), run by a Python client.

Every scenario is played against a live in-process server over the memory store (a few also over a
real Redis) with the generated gRPC stub, exactly as ``tests/conformance/README.md`` tells every
client to: create the game with the operator key, submit each step with the seat's token at the
current version (auto-play steps with ``SetAutoPlay``), make the calls the server must refuse, then
check the version, the whole log (paged), the settlement and the spectator's view (the clock's times
by how they relate). A last test regenerates the files in memory with ``testkit.conformance`` and compares
them byte for byte, so the scenarios always follow the engine.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from gostop.client.errors import error_from_rpc
from gostop.engine import action_id
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from gostop.wire import convert
from testkit import conformance
from testkit.redis_server import RedisServer
from testkit.servers import OPERATOR, config, running_server, seat_md

ROOT: Final = Path(__file__).resolve().parents[2]
SCENARIOS: Final = ROOT / "tests" / "conformance" / "scenarios"
PAGE_SIZE: Final = 7
"""Small log pages, so that every long scenario exercises ``next_after_version``."""
REDIS_SCENARIOS: Final = ("classic-4p-gwang-sale", "standard-2p-clock-auto-play", "standard-2p-steal-order")

Json = dict[str, Any]


def scenario_files() -> list[Path]:
    return sorted(SCENARIOS.glob("*.json"))


def load(path: Path) -> Json:
    doc: Json = json.loads(path.read_text(encoding="utf-8"))
    return doc


def parse(value: Json, message: Message) -> Message:
    return json_format.ParseDict(value, message)


def project(view: pb.GameView, keys: set[str]) -> pb.GameView:
    """A copy of ``view`` keeping only the top-level fields whose JSON names are in ``keys``."""
    out = pb.GameView()
    out.CopyFrom(view)
    for fd in pb.GameView.DESCRIPTOR.fields:
        if fd.json_name not in keys:
            out.ClearField(fd.name)
    return out


async def read_log(stub: pb_grpc.GameServiceStub, game_id: str) -> tuple[pb.GetGameLogResponse, int]:
    """Every log entry, page by page with the operator key; also the number of pages read."""
    whole = pb.GetGameLogResponse()
    after, pages = 0, 0
    while True:
        page: pb.GetGameLogResponse = await stub.GetGameLog(
            pb.GetGameLogRequest(game_id=game_id, after_version=after, page_size=PAGE_SIZE), metadata=OPERATOR)
        pages += 1
        if pages == 1:
            whole.CopyFrom(page)
        else:
            whole.entries.extend(page.entries)
        after = page.next_after_version
        if not after:
            return whole, pages


def check_clock(view: pb.GameView) -> pb.GameView:
    """``view`` with its clock's server times cleared, once they are seen to agree with the settings
    and the banks (README: "Spectator view")."""
    if not view.HasField("clock"):
        return view
    out = pb.GameView()
    out.CopyFrom(view)
    clock = out.clock
    times = (clock.started_ms, clock.bank_from_ms, clock.deadline_ms)
    if clock.seat < 0:
        assert times == (0, 0, 0), "a clock that runs for nobody has no times"
        return out
    seat = next(s for s in out.seats if s.seat == clock.seat)
    settings = clock.settings
    assert clock.started_ms > 0
    if seat.away or seat.auto_play:
        assert clock.bank_from_ms == clock.deadline_ms == clock.started_ms + settings.auto_pause_ms
    else:
        assert clock.bank_from_ms == clock.started_ms + settings.decision_ms
        assert clock.deadline_ms == clock.bank_from_ms + seat.bank_ms
    for name in ("started_ms", "bank_from_ms", "deadline_ms"):
        clock.ClearField(name)
    return out


async def step_call(stub: pb_grpc.GameServiceStub, game_id: str, version: int, step: Json, request_id: str,
                    md: tuple[tuple[str, str], ...]) -> tuple[int, pb.TurnResult | None]:
    """Make one step's call; the version it answers and, for a step of the game, its ``TurnResult``."""
    if "set_auto_play" in step:
        auto: pb.SetAutoPlayResponse = await stub.SetAutoPlay(
            pb.SetAutoPlayRequest(game_id=game_id, on=step["set_auto_play"], request_id=request_id), metadata=md)
        assert auto.view.seats[step["seat"]].auto_play == step["set_auto_play"]
        return auto.version, None
    result: pb.TurnResult
    if step.get("start_next_round"):
        result = (await stub.StartNextRound(
            pb.StartNextRoundRequest(game_id=game_id, expected_version=version, request_id=request_id),
            metadata=md)).result
    else:
        result = (await stub.SubmitAction(
            pb.SubmitActionRequest(game_id=game_id, expected_version=version, request_id=request_id,
                                   action_id=step["action_id"]),
            metadata=md)).result
    return result.version, result


async def check_refusals(stub: pb_grpc.GameServiceStub, doc: Json, game_id: str, tokens: dict[int, str],
                         version: int) -> None:
    """Every call of ``refusals`` fails with its code, reason and metadata, and changes nothing."""
    for n, refusal in enumerate(doc.get("refusals", []), start=1):
        want: Json = refusal["error"]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            if "create" in refusal:
                await stub.CreateGame(parse(refusal["create"], pb.CreateGameRequest()), metadata=OPERATOR)
            else:
                await step_call(stub, game_id, version, refusal, f"refusal-{n}", seat_md(tokens[refusal["seat"]]))
        error = error_from_rpc(refused.value)
        assert (error.code.name, error.reason) == (want["code"], want["reason"]), f"refusal {n}: {error}"
        assert want.get("metadata", {}).items() <= error.metadata.items(), f"refusal {n}: {error.metadata}"


async def run_scenario(stub: pb_grpc.GameServiceStub, doc: Json) -> None:
    """Play one scenario document through the API and check every expectation it states."""
    expect: Json = doc["expect"]
    request = pb.CreateGameRequest()
    parse(doc["create"], request)
    created: pb.CreateGameResponse = await stub.CreateGame(request, metadata=OPERATOR)
    game_id = created.game_id
    tokens = {s.seat: s.token for s in created.seats}
    assert created.version == 1
    version = created.version
    settlement: pb.Settlement | None = created.view.settlement if created.view.HasField("settlement") else None
    sent: dict[int, str] = {}
    for n, step in enumerate(doc["steps"], start=1):
        request_id = f"conformance-{n}"
        answered, result = await step_call(stub, game_id, version, step, request_id, seat_md(tokens[step["seat"]]))
        assert answered == version + 1, f"step {n}"
        version = answered
        sent[version] = request_id
        if result is not None:
            settlement = result.settlement if result.HasField("settlement") else None
    await check_refusals(stub, doc, game_id, tokens, version)
    assert version == expect["final_version"]

    log, pages = await read_log(stub, game_id)
    assert pages == -(-len(expect["log"]) // PAGE_SIZE)
    assert log.version == expect["final_version"]
    assert log.seed == request.seed
    assert log.deal == request.deal
    assert [e.version for e in log.entries] == [e["version"] for e in expect["log"]]
    for entry, want in zip(log.entries, expect["log"], strict=True):
        where = f"version {entry.version}"
        assert entry.seat == want["seat"], where
        assert entry.kind == want.get("kind", entry.kind), where
        if want["actionId"] is None:
            assert not entry.HasField("action"), where
        else:
            assert action_id(convert.action_from_pb(entry.action)) == want["actionId"], where
            assert entry.action == parse(want["action"], pb.Action()), where
        assert entry.request_id == sent.get(entry.version, ""), where
        events = [parse(e, pb.Event()) for e in want["events"]]
        assert list(entry.events) == events, where

    if expect["settlement"] is None:
        assert settlement is None
    else:
        assert settlement == parse(expect["settlement"], pb.Settlement())

    wanted: Json = expect["final_view_spectator"]
    spectator: pb.GetGameResponse = await stub.GetGame(pb.GetGameRequest(game_id=game_id))
    assert spectator.version == expect["final_version"]
    assert project(check_clock(spectator.view), set(wanted)) == parse(wanted, pb.GameView())


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.stem)
async def test_scenario_memory(path: Path) -> None:
    doc = load(path)
    assert doc["name"] == path.stem
    async with running_server(config()) as api:
        await run_scenario(api.stub, doc)


@pytest.mark.parametrize("name", REDIS_SCENARIOS)
async def test_scenario_redis(name: str, service_redis: RedisServer) -> None:
    async with running_server(config(service_redis.url)) as api:
        await run_scenario(api.stub, load(SCENARIOS / f"{name}.json"))


def test_there_are_scenarios() -> None:
    names = [p.stem for p in scenario_files()]
    assert len(names) >= 25
    assert set(REDIS_SCENARIOS) <= set(names)
    presets = {n.split("-")[0] for n in names}
    assert presets == {"standard", "simple", "classic", "house", "arcade"}


def test_scenario_files_are_up_to_date() -> None:
    render_all: Callable[[], dict[str, str]] = conformance.render_all
    files = render_all()
    on_disk = {p.name for p in scenario_files()}
    missing, stale = sorted(set(files) - on_disk), sorted(on_disk - set(files))
    changed = sorted(n for n in set(files) & on_disk if (SCENARIOS / n).read_text(encoding="utf-8") != files[n])
    assert not (missing or stale or changed), (
        f"the scenario files differ from the engine (missing {missing}, stale {stale}, changed {changed}); "
        "if the change is intended, run `make conformance-data` and commit the files"
    )
