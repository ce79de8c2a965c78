"""The store's compact form (``service/compact.py``): values round-trip, older
plain values are read as they are, corrupt ones are refused as corrupt, and the dictionaries are
the fixed bytes the stored data depends on."""

from __future__ import annotations

import hashlib
import random
import zlib

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gostop.service import compact
from gostop.v1 import game_pb2 as pb
from testkit.servers import config, expect, running_server


@pytest.mark.parametrize("kind", compact.KINDS)
def test_the_dictionaries_are_the_pinned_bytes(kind: compact.Kind) -> None:
    data = compact.dictionary(1, kind)
    assert hashlib.sha256(data).hexdigest() == compact.DICTIONARY_SHA256[(1, kind)], \
        "a dictionary in use never changes: make a new version instead"


@pytest.mark.parametrize("kind", compact.KINDS)
@given(data=st.binary(max_size=5000))
def test_values_round_trip(kind: compact.Kind, data: bytes) -> None:
    packed = compact.pack(kind, data)
    assert packed[:2] == b"\xff\x01"
    assert compact.unpack(kind, packed) == data


def _real_values(kind: compact.Kind) -> list[bytes]:
    """Values of ``kind`` as the service stores them, from a seeded random round."""
    from gostop.engine import Rules, legal_actions, match_apply, match_to_bytes, new_match, redact
    from gostop.engine.serialize import encode
    from gostop.wire import convert

    rng = random.Random(3)
    match, events = new_match(Rules.preset("standard", players=2), 3)
    out = []
    while not match.finished and match.round.phase.value != "over":
        seat = match.round.to_move
        action = rng.choice(legal_actions(match.round))
        match, events = match_apply(match, action, seat)
        if kind == "snap":
            out.append(match_to_bytes(match))
        elif kind == "entry":
            out.append(encode({"v": len(out) + 2, "kind": "action", "seat": seat, "events": events}))
        else:
            response = pb.SubmitActionResponse(result=pb.TurnResult(version=len(out) + 2))
            response.result.events.extend(convert.event_to_pb(redact(e, seat)) for e in events)
            out.append(response.SerializeToString())
    return out


@pytest.mark.parametrize("kind", compact.KINDS)
def test_values_packed_with_the_window_of_before_and_of_now_both_unpack(kind: compact.Kind) -> None:
    """``pack`` once deflated with zlib's defaults (a 32 kB window, memLevel 8) and now with an 8 kB
    window and smaller tables: ``unpack`` reads both kinds of stream, the stored data of before
    included, and the new streams are no larger (within a byte or two per value)."""
    before = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY, compact.dictionary(1, kind))
    values = _real_values(kind)
    assert len(values) > 10
    old_total = new_total = 0
    for data in values:
        deflater = before.copy()
        old = bytes((compact.MAGIC, 1)) + deflater.compress(data) + deflater.flush()
        new = compact.pack(kind, data)
        assert compact.unpack(kind, old) == data
        assert compact.unpack(kind, new) == data
        old_total += len(old)
        new_total += len(new)
    assert (compact.WBITS, compact.MEM_LEVEL) != (15, 8), "the test compares two different compressors"
    assert new_total <= old_total + 2 * len(values)


def test_plain_values_of_before_are_read_as_they_are() -> None:
    for plain in (b'{"format": 1}', pb.SubmitActionResponse(result=pb.TurnResult(version=3)).SerializeToString(), b""):
        assert compact.unpack("snap", plain) == plain


@pytest.mark.parametrize("bad", [b"\xff", b"\xff\x01not deflate at all", b"\xff\x09" + b"x" * 10,
                                 compact.pack("entry", b"x" * 100)[:-3]])
def test_a_corrupt_value_is_refused(bad: bytes) -> None:
    with pytest.raises(compact.CompactError):
        compact.unpack("entry", bad)


def test_an_inflation_bomb_is_refused() -> None:
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, compact.dictionary(1, "snap"))
    bomb = b"\xff\x01" + deflater.compress(b"\x00" * (compact.MAX_INFLATED + 1024)) + deflater.flush()
    assert len(bomb) < 100_000
    with pytest.raises(compact.CompactError):
        compact.unpack("snap", bomb)


def test_the_stored_fingerprint_is_half_a_digest_and_old_ones_still_match() -> None:
    new = compact.digest("act|0|3|12")
    whole = hashlib.sha256(b"act|0|3|12").hexdigest()
    assert len(new) == 32 and whole.startswith(new)
    assert compact.same_digest(new, new) and compact.same_digest(whole, new)
    assert not compact.same_digest(compact.digest("act|1|3|12"), new)


async def test_a_game_stored_in_the_plain_form_plays_on(monkeypatch: pytest.MonkeyPatch, store_url: str) -> None:
    """A game written by a server of before the compact form (plain snapshot, entries, responses) is
    read, played on, and its old request ids answer as they did."""
    async with running_server(config(store_url)) as api:
        assert api.server is not None
        with monkeypatch.context() as plain:
            plain.setattr(compact, "pack", lambda kind, data: data)
            game = await api.create("standard", players=2, seed=21)
            seat, view = await api.to_move(game)
            first = await api.submit(game, seat, view.legal_actions[0].id, request_id="old-request")
            game.version = first.result.version
        api.server.games.repository.cache.clear()  # read from the store, not from this process's memory
        again = await api.submit(game, seat, view.legal_actions[0].id, version=1, request_id="old-request")
        assert again == first
        await api.play_round(game, random.Random(21))
        log = await api.log(game)
        assert log.entries[-1].events


async def test_a_corrupt_compact_snapshot_is_data_loss(store_url: str) -> None:
    async with running_server(config(store_url)) as api:
        assert api.server is not None
        game = await api.create("standard", players=2, seed=5)
        games = api.server.games
        original = games.store.load

        async def corrupt(game_id: str) -> object:
            snap = await original(game_id)
            assert snap is not None and snap.blob[:2] == b"\xff\x01", "snapshots are stored compact"
            return type(snap)(snap.version, snap.blob[:2] + b"garbage")

        games.repository.cache.clear()
        games.store.load = corrupt  # type: ignore[method-assign,assignment]
        await expect(api.get(game), grpc.StatusCode.DATA_LOSS, "SNAPSHOT_CORRUPT")

