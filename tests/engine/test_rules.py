"""Rules presets against the product spec, immutability, overrides, serialization and validation."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gostop.engine import FIELDS, PRESET_PLAYERS, PRESETS, InvalidRules, Rules

ALL_CONFIGS: list[tuple[str, int]] = [(name, n) for name in PRESETS for n in PRESET_PLAYERS[name]]


def cfg_id(config: tuple[str, int]) -> str:
    return f"{config[0]}-{config[1]}p"


# ------------------------------------------------------------------ presets vs the spec


def test_preset_names_and_player_counts() -> None:
    assert PRESETS == ("standard", "simple", "classic", "house", "arcade")
    assert PRESET_PLAYERS == {
        "standard": (2, 3),
        "simple": (2,),
        "classic": (2, 3, 4),
        "house": (3, 2),
        "arcade": (2,),
    }


@pytest.mark.parametrize(
    ("name", "players"),
    [("standard", 2), ("simple", 2), ("classic", 2), ("house", 3), ("arcade", 2)],
)
def test_default_player_count(name: str, players: int) -> None:
    rules = Rules.preset(name)
    assert rules.players == players
    assert rules.name == name


@pytest.mark.parametrize(
    ("name", "deck", "bonus"),
    [("standard", 51, 3), ("simple", 48, 0), ("classic", 50, 2), ("house", 48, 0), ("arcade", 48, 0)],
)
def test_deck_sizes(name: str, deck: int, bonus: int) -> None:
    for n in PRESET_PLAYERS[name]:
        rules = Rules.preset(name, players=n)
        assert rules.deck_size == deck
        assert rules.bonus_cards == bonus


def test_default_rules_are_standard_two_player() -> None:
    assert Rules() == Rules.preset("standard")
    assert Rules.preset("standard", players=2) == Rules.preset("standard")


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=cfg_id)
def test_hand_and_floor_sizes(config: tuple[str, int]) -> None:
    name, n = config
    rules = Rules.preset(name, players=n)
    if n == 2:
        assert (rules.hand_size, rules.floor_size, rules.playing_seats) == (10, 8, 2)
    else:
        assert (rules.hand_size, rules.floor_size, rules.playing_seats) == (7, 6, 3)
    assert rules.players == n


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=cfg_id)
def test_go_thresholds(config: tuple[str, int]) -> None:
    name, n = config
    expected = 3 if name == "arcade" or n != 2 else 7
    assert Rules.preset(name, players=n).go_threshold == expected


def test_go_scoring_per_preset() -> None:
    assert Rules.preset("standard").go_scoring == "standard"
    assert Rules.preset("simple").go_scoring == "standard"
    assert Rules.preset("classic").go_scoring == "standard"
    assert Rules.preset("house").go_scoring == "additive"
    assert Rules.preset("arcade").go_scoring == "additive"


def test_gukjin_modes() -> None:
    assert Rules.preset("standard").gukjin == "on_settlement"
    assert Rules.preset("classic").gukjin == "on_settlement"
    assert Rules.preset("house").gukjin == "on_settlement"
    assert Rules.preset("arcade").gukjin == "on_capture"
    assert Rules.preset("simple").gukjin == "never"


def test_sseul_modes() -> None:
    for name in ("standard", "simple", "classic", "house"):
        assert Rules.preset(name).sseul_mode == "steal", name
    assert Rules.preset("arcade").sseul_mode == "point"


def test_last_turn_exceptions() -> None:
    assert Rules.preset("standard").last_turn_no_steal == frozenset({"sseul"})
    assert Rules.preset("standard", players=3).last_turn_no_steal == frozenset({"sseul"})
    assert Rules.preset("simple").last_turn_no_steal == frozenset({"sseul"})
    assert Rules.preset("arcade").last_turn_no_steal == frozenset()
    for n in (2, 3, 4):
        classic = Rules.preset("classic", players=n)
        assert classic.last_turn_no_steal == frozenset({"sseul", "jjok"})
        assert classic.last_turn_ppeok_captured is True
    for n in (2, 3):
        assert Rules.preset("house", players=n).last_turn_no_steal == frozenset({"sseul", "ttadak", "jjok"})
    for name in ("standard", "simple", "house", "arcade"):
        assert Rules.preset(name).last_turn_ppeok_captured is False, name


def test_ppeok_payments_and_instant_outcomes() -> None:
    c2 = Rules.preset("classic", players=2)
    c3 = Rules.preset("classic", players=3)
    c4 = Rules.preset("classic", players=4)
    assert c2.ppeok_payments == (7, 14, 21)
    assert c3.ppeok_payments == (3, 6, 9)
    assert c4.ppeok_payments == (3, 6, 9)
    assert (c2.three_ppeok, c2.three_ppeok_points) == ("win", 7)
    assert (c3.three_ppeok, c3.three_ppeok_points) == ("win", 3)
    assert c2.first_ttadak_payment == 7
    assert c3.first_ttadak_payment == 3
    assert (c2.heodang, c2.heodang_turns, c2.heodang_points) == (True, 5, 3)
    h2 = Rules.preset("house", players=2)
    h3 = Rules.preset("house", players=3)
    assert h2.ppeok_payments == (7,)
    assert h3.ppeok_payments == (3,)
    assert (h2.three_ppeok, h2.three_ppeok_points) == ("win", 7)
    assert (h3.three_ppeok, h3.three_ppeok_points) == ("win", 3)
    assert h3.first_ttadak_payment == 0
    assert h3.heodang is False
    arcade = Rules.preset("arcade")
    assert arcade.ppeok_payments == ()
    assert arcade.three_ppeok == "lose"
    for name in ("standard", "simple"):
        r = Rules.preset(name)
        assert r.ppeok_payments == ()
        assert r.three_ppeok == "none"
        assert r.first_ttadak_payment == 0
        assert r.heodang is False


def test_chongtong_presets() -> None:
    assert Rules.preset("standard").chongtong is False
    assert Rules.preset("simple").chongtong is False
    for name in ("classic", "house", "arcade"):
        r = Rules.preset(name)
        assert r.chongtong is True, name
        assert r.chongtong_points == 10, name


def test_point_value_and_first_leader() -> None:
    assert Rules.preset("house").point_value == 100
    assert Rules.preset("house", players=2).point_value == 100
    for name in ("standard", "simple", "classic", "arcade"):
        assert Rules.preset(name).point_value == 0, name
    assert Rules.preset("arcade").first_leader == "seat0"
    for name in ("standard", "simple", "classic", "house"):
        assert Rules.preset(name).first_leader == "seeded", name


def test_pibak_thresholds() -> None:
    assert Rules.preset("classic", players=2).pibak_max_pi == 7
    assert Rules.preset("classic", players=3).pibak_max_pi == 5
    assert Rules.preset("classic", players=4).pibak_max_pi == 5
    for name, n in (("standard", 2), ("standard", 3), ("house", 3), ("house", 2)):
        r = Rules.preset(name, players=n)
        assert r.pibak is True
        assert r.pibak_max_pi == 5
        assert r.pibak_requires_winner_pi is True
        assert r.pibak_zero_exempt is True
    arcade = Rules.preset("arcade")
    # "the loser's 피 value is below 5, however the winner scored" (0 included)
    assert arcade.pibak is True
    assert arcade.pibak_max_pi == 4
    assert arcade.pibak_requires_winner_pi is False
    assert arcade.pibak_zero_exempt is False


def test_simple_has_no_multipliers_nor_carry() -> None:
    r = Rules.preset("simple")
    assert r.shake_bomb is False
    assert (r.meongbak, r.pibak, r.gwangbak, r.gobak) == (False, False, False, False)
    assert r.nagari_carry is False
    for name in ("standard", "classic", "house", "arcade"):
        other = Rules.preset(name)
        assert other.nagari_carry is True, name
        assert other.shake_bomb is True, name
        assert (other.meongbak, other.gwangbak, other.gobak) == (True, True, True), name


def test_shake_bomb_counting() -> None:
    assert Rules.preset("standard").shake_bomb_count == "per_month"
    for name in ("classic", "house", "arcade"):
        assert Rules.preset(name).shake_bomb_count == "per_declaration", name
    for name in PRESETS:
        assert Rules.preset(name).shake_bomb_when_losing is False, name


def test_arcade_go_and_exhaustion() -> None:
    arcade = Rules.preset("arcade")
    assert arcade.last_action_go == "allowed"
    assert arcade.exhausted == "best_score"
    for name in ("standard", "simple", "classic", "house"):
        r = Rules.preset(name)
        assert r.last_action_go == "auto_stop", name
        assert r.exhausted == "nagari", name


def test_packet_deal_only_classic() -> None:
    for name in PRESETS:
        assert Rules.preset(name).packet_deal is (name == "classic"), name


def test_four_players_only_classic_and_gwang_sale_price() -> None:
    assert Rules.preset("classic", players=4).gwang_sale_price == 1
    assert Rules.preset("classic", players=4).playing_seats == 3


# ------------------------------------------------------------------ immutability, overrides


def test_rules_are_frozen() -> None:
    rules = Rules.preset("standard")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.players = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.gwangbak = False  # type: ignore[misc]
    assert rules.players == 2
    assert rules.gwangbak is True


def test_rules_are_hashable_and_compare_by_value() -> None:
    a = Rules.preset("classic", players=3)
    b = Rules.preset("classic", players=3)
    assert a == b
    assert hash(a) == hash(b)
    assert a != Rules.preset("classic", players=2)


def test_preset_overrides() -> None:
    rules = Rules.preset("standard", gwangbak=False)
    assert rules.gwangbak is False
    assert rules.name == "standard"
    assert dataclasses.replace(rules, gwangbak=True) == Rules.preset("standard")
    simple = Rules.preset("simple", pibak=True)
    assert simple.pibak is True
    assert simple.gwangbak is False
    # a player-count dependent field may still be overridden explicitly
    classic = Rules.preset("classic", players=3, go_threshold=5, ppeok_payments=(1, 2))
    assert classic.go_threshold == 5
    assert classic.ppeok_payments == (1, 2)
    assert classic.pibak_max_pi == 5


def test_preset_players_depend_fields() -> None:
    # the player-count dependent fields take the value for `players`
    assert Rules.preset("house", players=2).go_threshold == 7
    assert Rules.preset("standard", players=3).go_threshold == 3


def test_replace() -> None:
    base = Rules.preset("house")
    changed = base.replace(point_value=50, gobak=False)
    assert changed.point_value == 50
    assert changed.gobak is False
    assert base.point_value == 100
    assert base.gobak is True
    assert changed.replace(point_value=100, gobak=True) == base
    with pytest.raises(InvalidRules) as err:
        base.replace(go_threshold=0)
    assert err.value.field == "go_threshold"
    with pytest.raises(InvalidRules) as err:
        base.replace(no_such_rule=1)
    assert err.value.field == "no_such_rule"


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=cfg_id)
def test_to_dict_from_dict_round_trip(config: tuple[str, int]) -> None:
    name, n = config
    rules = Rules.preset(name, players=n)
    data = rules.to_dict()
    assert list(data) == list(FIELDS)
    assert isinstance(data["last_turn_no_steal"], list)
    assert data["last_turn_no_steal"] == sorted(rules.last_turn_no_steal)
    assert isinstance(data["ppeok_payments"], list)
    assert Rules.from_dict(data) == rules
    assert Rules.from_dict(data).to_dict() == data


def test_from_dict_partial_and_unknown() -> None:
    assert Rules.from_dict({}) == Rules()
    assert Rules.from_dict({"players": 3, "go_threshold": 3}) == Rules.preset("standard", players=3)
    with pytest.raises(InvalidRules) as err:
        Rules.from_dict({"players": 2, "bogus": True})
    assert err.value.field == "bogus"


def test_fields_cover_every_dataclass_field() -> None:
    assert tuple(f.name for f in dataclasses.fields(Rules)) == FIELDS
    assert FIELDS[0] == "name"


# ------------------------------------------------------------------ validation


def expect_invalid(field: str, **kwargs: Any) -> InvalidRules:
    with pytest.raises(InvalidRules) as err:
        Rules(**kwargs)
    assert err.value.field == field, f"{kwargs}: expected field {field!r}, got {err.value.field!r}"
    assert str(err.value).startswith(f"{field}: ")
    assert err.value.reason == "INVALID_RULES"
    assert isinstance(err.value, ValueError)
    return err.value


@pytest.mark.parametrize("value", ["", 3, None])
def test_name_must_be_a_non_empty_string(value: Any) -> None:
    expect_invalid("name", name=value)


INT_FIELDS = [
    "players", "bonus_cards", "go_threshold", "meongbak_min_yeol", "pibak_max_pi",
    "chongtong_points", "three_ppeok_points", "first_ttadak_payment", "heodang_turns",
    "heodang_points", "point_value", "gwang_sale_price",
]
BOOL_FIELDS = [
    "packet_deal", "shake_bomb", "shake_bomb_when_losing", "meongbak", "pibak",
    "pibak_requires_winner_pi", "pibak_zero_exempt", "gwangbak", "gobak", "nagari_carry",
    "last_turn_ppeok_captured", "chongtong", "heodang",
]
CHOICE_FIELDS = [
    "go_scoring", "last_action_go", "exhausted", "shake_bomb_count", "sseul_mode", "gukjin",
    "three_ppeok", "first_leader",
]


def test_field_groups_cover_every_scalar_field() -> None:
    covered = {"name", "last_turn_no_steal", "ppeok_payments", *INT_FIELDS, *BOOL_FIELDS, *CHOICE_FIELDS}
    assert covered == set(FIELDS)


@pytest.mark.parametrize("field", INT_FIELDS)
@pytest.mark.parametrize("value", ["3", 2.0, True, None])
def test_int_fields_reject_wrong_types(field: str, value: Any) -> None:
    expect_invalid(field, **{field: value})


@pytest.mark.parametrize("field", INT_FIELDS)
def test_int_fields_reject_negative(field: str) -> None:
    expect_invalid(field, **{field: -1})


@pytest.mark.parametrize("field", BOOL_FIELDS)
@pytest.mark.parametrize("value", [1, 0, "true", None])
def test_bool_fields_reject_wrong_types(field: str, value: Any) -> None:
    expect_invalid(field, **{field: value})


@pytest.mark.parametrize("field", CHOICE_FIELDS)
@pytest.mark.parametrize("value", ["bogus", "", None, 1])
def test_choice_fields_reject_bad_values(field: str, value: Any) -> None:
    expect_invalid(field, **{field: value})


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("go_scoring", ("standard", "additive")),
        ("last_action_go", ("auto_stop",)),
        ("exhausted", ("nagari", "best_score")),
        ("shake_bomb_count", ("per_month", "per_declaration")),
        ("sseul_mode", ("steal",)),
        ("gukjin", ("on_settlement", "on_capture", "never")),
        ("three_ppeok", ("none", "lose")),
        ("first_leader", ("seeded", "seat0")),
    ],
)
def test_choice_fields_accept_documented_values(field: str, values: tuple[str, ...]) -> None:
    for value in values:
        kwargs: dict[str, Any] = {field: value}
        assert getattr(Rules(**kwargs), field) == value


@pytest.mark.parametrize("players", [5, 1, 0])
def test_players_out_of_range(players: int) -> None:
    err = expect_invalid("players", players=players)
    assert str(players) in err.message


def test_players_five_message() -> None:
    err = expect_invalid("players", players=5)
    assert str(err) == "players: must be 2, 3 or 4, not 5"


@pytest.mark.parametrize("bonus", [1, 4, 48])
def test_bonus_cards_values(bonus: int) -> None:
    expect_invalid("bonus_cards", bonus_cards=bonus)


def test_go_threshold_zero() -> None:
    expect_invalid("go_threshold", go_threshold=0)
    assert Rules(go_threshold=1).go_threshold == 1


@pytest.mark.parametrize(
    "value",
    [frozenset({"bogus"}), frozenset({"sseul", "ppeok"}), ["sseul"], {"sseul"}, ("sseul",), "sseul", None],
)
def test_last_turn_no_steal_bad_entries(value: Any) -> None:
    expect_invalid("last_turn_no_steal", last_turn_no_steal=value)


def test_last_turn_no_steal_accepts_every_event() -> None:
    every: frozenset[Any] = frozenset({"sseul", "jjok", "ttadak"})
    assert Rules(last_turn_no_steal=every).last_turn_no_steal == every
    assert Rules(last_turn_no_steal=frozenset()).last_turn_no_steal == frozenset()


def test_sseul_point_mode_with_sseul_exception() -> None:
    expect_invalid("last_turn_no_steal", sseul_mode="point")  # the default holds "sseul"
    expect_invalid("last_turn_no_steal", sseul_mode="point", last_turn_no_steal=frozenset({"sseul", "jjok"}))
    ok = Rules(sseul_mode="point", last_turn_no_steal=frozenset({"jjok"}))
    assert ok.sseul_mode == "point"


@pytest.mark.parametrize("value", [(-1,), (7, -14), (7, "14"), (True,), (7.0,), [7, 14], None, 7])
def test_ppeok_payments_bad_values(value: Any) -> None:
    expect_invalid("ppeok_payments", ppeok_payments=value)


def test_ppeok_payments_too_long() -> None:
    expect_invalid("ppeok_payments", ppeok_payments=(1, 2, 3, 4))
    assert Rules(ppeok_payments=(1, 2, 3)).ppeok_payments == (1, 2, 3)
    assert Rules(ppeok_payments=(0,)).ppeok_payments == (0,)


def test_shake_bomb_when_losing_needs_shake_bomb() -> None:
    expect_invalid("shake_bomb_when_losing", shake_bomb=False, shake_bomb_when_losing=True)
    assert Rules(shake_bomb_when_losing=True).shake_bomb_when_losing is True


def test_three_ppeok_points_consistency() -> None:
    expect_invalid("three_ppeok_points", three_ppeok="win", three_ppeok_points=0)
    expect_invalid("three_ppeok_points", three_ppeok="none", three_ppeok_points=3)
    expect_invalid("three_ppeok_points", three_ppeok="lose", three_ppeok_points=3)
    assert Rules(three_ppeok="win", three_ppeok_points=1).three_ppeok_points == 1
    assert Rules(three_ppeok="lose").three_ppeok_points == 0


def test_chongtong_points_zero() -> None:
    expect_invalid("chongtong_points", chongtong=True, chongtong_points=0)
    assert Rules(chongtong=False, chongtong_points=0).chongtong_points == 0


def test_heodang_turns_and_points() -> None:
    expect_invalid("heodang_turns", heodang=True, heodang_turns=0)
    expect_invalid("heodang_points", heodang=True, heodang_points=0)
    assert Rules(heodang=False, heodang_turns=0, heodang_points=0).heodang is False


def test_meongbak_min_yeol() -> None:
    expect_invalid("meongbak_min_yeol", meongbak=True, meongbak_min_yeol=0)
    assert Rules(meongbak=False, meongbak_min_yeol=0).meongbak_min_yeol == 0


def test_pibak_max_pi_negative() -> None:
    # caught by the non-negative integer rule before the 피박 specific one
    expect_invalid("pibak_max_pi", pibak=True, pibak_zero_exempt=False, pibak_max_pi=-1)


def test_last_action_go_allowed_needs_two_players() -> None:
    expect_invalid("last_action_go", last_action_go="allowed", players=3, go_threshold=3)
    expect_invalid("last_action_go", last_action_go="allowed", players=4, go_threshold=3)
    assert Rules(last_action_go="allowed").last_action_go == "allowed"


@pytest.mark.parametrize("players", [3, 4])
def test_arcade_for_more_players_says_it_is_a_two_player_preset_regression(players: int) -> None:
    """Regression: ``Rules.preset("arcade", players=3)`` answered "last_action_go: 'allowed' is defined
    for two players only", a rule a person never set; the player count is what is wrong."""
    with pytest.raises(InvalidRules) as err:
        Rules.preset("arcade", players=players)
    assert err.value.field == "players"
    assert err.value.message.startswith("arcade is a two-player preset: play it with 2 players")
    assert "last_action_go" not in str(err.value)
    # A rule the caller set is still named as it is (the preset's players are not to blame).
    with pytest.raises(InvalidRules) as err:
        Rules.preset("arcade", players=players, gwangbak=False, last_action_go="allowed")
    assert err.value.field == "last_action_go"
    assert Rules.preset("arcade", players=players, last_action_go="auto_stop").players == players


def test_unknown_override_name() -> None:
    with pytest.raises(InvalidRules) as err:
        Rules.preset("standard", gwangbakk=False)
    assert err.value.field == "gwangbakk"
    assert "no such rule" in str(err.value)
    with pytest.raises(InvalidRules) as err:
        Rules.preset("classic", zzz=1, aaa=2)
    assert err.value.field == "aaa"  # the first unknown name, sorted


@pytest.mark.parametrize("name", ["bogus", "Standard", ""])
def test_unknown_preset_name(name: str) -> None:
    with pytest.raises(InvalidRules) as err:
        Rules.preset(name)
    assert err.value.field == "name"
    assert "unknown preset" in str(err.value)


@pytest.mark.parametrize("players", [5, 1, True, "2"])
def test_preset_bad_player_count(players: Any) -> None:
    with pytest.raises(InvalidRules) as err:
        Rules.preset("standard", players=players)
    assert err.value.field == "players"


def test_overrides_are_validated() -> None:
    with pytest.raises(InvalidRules) as err:
        Rules.preset("standard", go_threshold=0)
    assert err.value.field == "go_threshold"
    with pytest.raises(InvalidRules) as err:
        Rules.preset("arcade", last_turn_no_steal=frozenset({"sseul"}))
    assert err.value.field == "last_turn_no_steal"


def test_from_dict_is_validated() -> None:
    data = Rules.preset("classic").to_dict()
    data["ppeok_payments"] = [7, 14, 21, 28]
    with pytest.raises(InvalidRules) as err:
        Rules.from_dict(data)
    assert err.value.field == "ppeok_payments"
    data = Rules.preset("classic").to_dict()
    data["last_turn_no_steal"] = ["sseul", "bogus"]
    with pytest.raises(InvalidRules) as err:
        Rules.from_dict(data)
    assert err.value.field == "last_turn_no_steal"


def test_deck_too_small_rule_is_unreachable_for_valid_counts() -> None:
    # `_validate`'s last rule (more cards dealt than the deck holds) cannot trigger for
    # 2-4 players with any valid deck: the largest deal is 4 x 7 + 6 = 34 < 48.
    for players in (2, 3, 4):
        for bonus in (0, 2, 3):
            r = Rules(players=players, bonus_cards=bonus, go_threshold=3)
            assert r.hand_size * r.players + r.floor_size <= r.deck_size


def test_list_valued_overrides_are_normalized() -> None:
    rules = Rules.preset("classic", ppeok_payments=[1, 2], last_turn_no_steal=["jjok"])
    assert rules.ppeok_payments == (1, 2)
    assert rules.last_turn_no_steal == frozenset({"jjok"})
    again = Rules.preset("standard").replace(last_turn_no_steal=["sseul", "ttadak"], ppeok_payments=[3])
    assert again.last_turn_no_steal == frozenset({"sseul", "ttadak"})
    assert again.ppeok_payments == (3,)
    with pytest.raises(InvalidRules) as err:
        Rules.preset("classic", ppeok_payments=[1, 2, 3, 4])
    assert err.value.field == "ppeok_payments"
