"""The turn clock on the web table (docs/clock.md, docs/web.md "The clock"), in a real browser
against ``gostop serve`` on the memory store, whose in-process bot worker plays the deadlines.

- A 2 s clock without a bank: the page counts the seat's decision down (with a bank, the bank's
  seconds apart once the decision time is spent); when the person lets it
  run out the table's bot plays for the seat and the log says so (시간 초과, 자동치기); after two
  timeouts in a row the seat is away (a badge, a log line), and the person's own move brings it
  back. A spectator sees the badge and the countdowns, and no switch.
- Auto-play (자동치기): the switch turns it on (the seat's decisions are then made after the
  clock's pause, and the log says so), and off again; the switch follows the seat's state in the
  streamed views.
- The lobby offers the time per move for a table with people (15 s by default, a 30 s bank, away
  after two timeouts), and none for a table of bots.
- The log's sentences for the clock's events, in Korean and English, and the countdown's
  arithmetic (the bank apart), run under Node from the page's own sources.

The other person's seat is played by the test through the API as soon as it is to move (it never
times out). Screenshots are saved under test-artifacts/web (docs/web-clock.png is one of them).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gostop.client import GostopClient
from gostop.v1 import game_pb2 as pb
from testkit.clocked_tables import (
    CHROMIUM,
    DESKTOP,
    SIZES,
    WAIT_MS,
    clocked,
    create_clocked,
    log_line,
    needs_page,
    shot,
    token_of,
)
from testkit.web import WebServer, start_web_server

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the [dev] extra")
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "clients" / "web"
ROLLDOWN = WEB / "node_modules" / ".bin" / "rolldown"
NODE = shutil.which("node")
pytestmark = pytest.mark.slow  # not in make check: Chromium, Node

@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    """A server that needs no key to create a game; its in-process bot worker plays deadlines."""
    started = start_web_server()
    try:
        yield started
    finally:
        started.stop()


class OtherPerson(threading.Thread):
    """Seat 1's person, through the API: its first legal action as soon as it is to move (well
    inside its time), until the match is over or the test ends."""

    def __init__(self, server: WebServer, game: pb.CreateGameResponse) -> None:
        super().__init__(name="seat-1", daemon=True)
        self.target = server.target
        self.game_id = game.game_id
        self.token = token_of(game, 1)
        self.stopped = threading.Event()
        self.moves = 0

    def run(self) -> None:
        with GostopClient(self.target) as client:
            while not self.stopped.is_set():
                try:
                    view = client.get_game(self.game_id, token=self.token)
                    if view.phase == pb.PHASE_OVER and view.match.finished:
                        return
                    if view.to_move == 1 and view.legal_actions:
                        client.submit_action(self.game_id, None, view.legal_actions[0].id,
                                             expected_version=view.version, token=self.token)
                        self.moves += 1
                        continue
                except Exception:  # a stale version, or the clock's move came first: look again
                    pass
                self.stopped.wait(0.05)

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)


def open_seat(browser: Browser, server: WebServer, game: pb.CreateGameResponse, locale: str) -> tuple[Any, Page]:
    context = browser.new_context(viewport=DESKTOP, locale=locale)
    page = context.new_page()
    page.goto(f"{server.url}#/g/{game.game_id}/0?t={token_of(game, 0)}")
    page.wait_for_selector("[data-testid=table][data-connection=live]", timeout=WAIT_MS)
    return context, page


def wait_my_decision(page: Page) -> None:
    """Until the page asks this seat for a decision (an enabled hand card or choice) with its clock running."""
    page.wait_for_function(
        """() => document.querySelector('[data-testid=my-clock]') &&
                 (document.querySelector('[data-testid=hand-card]:not([disabled])') ||
                  document.querySelector('[data-testid=choice]:not([disabled])'))""",
        timeout=WAIT_MS)


def act_now(page: Page) -> None:
    """One decision as quickly as a person can: a prompt's first choice, or a hand card played."""
    choice = page.locator("[data-testid=choice]:not([disabled])")
    card = page.locator("[data-testid=hand-card]:not([disabled])")
    if card.count():
        card.first.click()
        page.wait_for_selector("[data-testid=choice]:not([disabled])", timeout=WAIT_MS)
    choice.first.click()


def seat_view(server: WebServer, game: pb.CreateGameResponse) -> pb.GameView:
    with GostopClient(server.target) as client:
        return client.get_game(game.game_id, token=token_of(game, 0))


def assert_one_screen(page: Page, where: str) -> None:
    """At every size: nothing scrolls, the bar's countdown and switch are inside the window."""
    for name, size in SIZES.items():
        page.set_viewport_size(size)
        page.wait_for_timeout(200)
        if page.locator("[data-testid=side].open").count() and page.locator("[data-testid=log-toggle]").is_visible():
            page.keyboard.press("l")  # the log's drawer, open from the wide window: closed
            page.wait_for_timeout(300)
        got = page.evaluate("""() => {
          const d = document.documentElement;
          const box = (s) => { const e = document.querySelector(s); if (!e) return null;
            const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
          return { scroll: [d.scrollWidth - d.clientWidth, d.scrollHeight - d.clientHeight],
                   boxes: { 'auto-play': box('[data-testid=auto-play]'), hand: box('[data-testid=hand]') },
                   viewport: [innerWidth, innerHeight] };
        }""")
        shot(page, f"clock-{where}-{name}.png")
        at = f"{where} at {name}"
        assert got["scroll"][0] <= 0 and got["scroll"][1] <= 0, f"{at}: the page scrolls by {got['scroll']}"
        width, height = got["viewport"]
        for label, box in got["boxes"].items():
            if box is not None:
                left, top, right, bottom = box
                assert left >= -1 and top >= -1 and right <= width + 1 and bottom <= height + 1, \
                    f"{at}: {label} at {box} is outside {width}x{height}"
    page.set_viewport_size(DESKTOP)


# ------------------------------------------------------------------------- timeouts and away


@needs_page
def test_a_timed_out_decision_is_played_for_the_seat_then_it_is_away_until_the_person_plays(
        browser: Browser, server: WebServer) -> None:
    game = create_clocked(server, clocked(decision_ms=2000, bank_ms=0, away_after=2, auto_pause_ms=2500))
    other = OtherPerson(server, game)
    other.start()
    context, page = open_seat(browser, server, game, "ko-KR")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        # The seat's decision counts down from 2 s, in the bar.
        wait_my_decision(page)
        clock = page.locator("[data-testid=my-clock]")
        left = int(clock.get_attribute("data-left-ms") or "-1")
        assert 0 <= left <= 2000, left
        assert re.fullmatch(r"[0-2]초", clock.inner_text().strip()), clock.inner_text()
        assert clock.get_attribute("data-in-bank") == "0"
        shot(page, "clock-countdown.png")

        # Nobody acts: the table's greedy bot plays for the seat, and the log says so.
        timed_out = log_line(page, "시간 초과, 자동치기 (greedy)")
        timed_out.first.wait_for(timeout=WAIT_MS)
        assert timed_out.first.inner_text().startswith("나: "), timed_out.first.inner_text()
        shot(page, "clock-timed-out.png")

        # Again: two timeouts in a row and the seat is away (a badge and a log line).
        page.wait_for_selector("[data-testid=away-0]", timeout=WAIT_MS)
        log_line(page, "나: 자리 비움").first.wait_for(timeout=WAIT_MS)
        assert seat_view(server, game).seats[0].away
        wait_my_decision(page)
        # An away seat's decision waits only the clock's pause (2.5 s here).
        assert int(page.locator("[data-testid=my-clock]").get_attribute("data-left-ms") or "-1") <= 2500
        shot(page, "clock-away.png")
        # A spectator sees the badge, and every seat's countdown in its header; no switch.
        spectator = context.new_page()
        spectator.goto(f"{server.url}#/g/{game.game_id}")
        spectator.wait_for_selector("[data-testid=table][data-viewer='-1'] [data-testid=away-0]", timeout=WAIT_MS)
        spectator.wait_for_selector("[data-testid=clock-0], [data-testid=clock-1]", timeout=WAIT_MS)
        assert spectator.locator("[data-testid=auto-play]").count() == 0
        spectator.close()
        assert_one_screen(page, "away")

        # The person plays: the seat is back.
        for _attempt in range(5):
            wait_my_decision(page)
            act_now(page)
            try:
                page.wait_for_selector("[data-testid=away-0]", state="detached", timeout=5000)
                break
            except playwright_api.TimeoutError:
                continue  # the clock's move came first (TURN_TIMED_OUT): the next decision
        else:
            raise AssertionError("the seat did not come back")
        log_line(page, "나: 돌아옴").first.wait_for(timeout=WAIT_MS)
        view = seat_view(server, game)
        assert not view.seats[0].away and view.seats[0].timeouts == 0
        assert other.moves > 0
        assert errors == []
    finally:
        other.stop()
        context.close()


@needs_page
def test_a_move_that_loses_the_race_to_its_deadline_is_told_the_time_ran_out(
        browser: Browser, server: WebServer) -> None:
    """The person's move reaches the server only after the clock's move for the same decision (the
    test holds the request in the network until the log shows the clock's move): the server
    answers TURN_TIMED_OUT, and the page says that the table's bot moved for the seat."""
    game = create_clocked(server, clocked(decision_ms=2000, bank_ms=0, away_after=100, auto_pause_ms=0))
    other = OtherPerson(server, game)
    other.start()
    context, page = open_seat(browser, server, game, "ko-KR")
    held: list[Any] = []

    def hold(route: Any) -> None:
        held.append(route)

    page.route("**/gostop.v1.GameService/SubmitAction", hold)
    try:
        wait_my_decision(page)
        before = len(log_line(page, "시간 초과, 자동치기").all())
        act_now(page)
        for _ in range(100):
            if held:
                break
            page.wait_for_timeout(50)
        assert held, "the page sent its move"
        # The clock's move for the seat commits while the person's is still on its way.
        page.wait_for_function(
            "n => [...document.querySelectorAll('[data-testid=log] li')]"
            ".filter(li => li.textContent.includes('시간 초과, 자동치기')).length > n",
            arg=before, timeout=WAIT_MS)
        held[0].continue_()
        toast = page.locator("[role=status]", has_text="시간이 다 되어 테이블의 봇이 대신 두었습니다.")
        toast.wait_for(timeout=WAIT_MS)
        shot(page, "clock-turn-timed-out.png")
        assert seat_view(server, game).seats[0].timeouts >= 1
        # Regression: the notice sat over the hand's cards until clicked away.
        notice, hand = toast.bounding_box(), page.locator("[data-testid=hand]").bounding_box()
        assert notice is not None and hand is not None
        assert notice["y"] + notice["height"] <= hand["y"]
        toast.wait_for(state="hidden", timeout=WAIT_MS)  # it goes by itself
    finally:
        page.unroute("**/gostop.v1.GameService/SubmitAction")
        other.stop()
        context.close()


@needs_page
def test_the_bank_counts_down_apart_once_the_decision_time_is_spent(browser: Browser, server: WebServer) -> None:
    game = create_clocked(server, clocked(decision_ms=1000, bank_ms=3000))
    other = OtherPerson(server, game)
    other.start()
    context, page = open_seat(browser, server, game, "ko-KR")
    try:
        wait_my_decision(page)
        bank = page.locator("[data-testid=my-clock][data-in-bank='1']")
        bank.wait_for(timeout=WAIT_MS)
        assert re.fullmatch(r"추가 시간 [0-3]초", bank.inner_text().strip()), bank.inner_text()
        assert int(bank.get_attribute("data-left-ms") or "-1") <= 3000
        shot(page, "clock-bank.png")
        # The bank ran out too: the table's bot played, and the seat has no bank left this round.
        log_line(page, "시간 초과, 자동치기 (greedy)").first.wait_for(timeout=WAIT_MS)
        assert seat_view(server, game).seats[0].bank_ms == 0
    finally:
        other.stop()
        context.close()


# ------------------------------------------------------------------------------- auto-play


@needs_page
def test_auto_play_makes_the_seats_decisions_after_the_pause_until_it_is_turned_off(
        browser: Browser, server: WebServer) -> None:
    game = create_clocked(server, clocked(decision_ms=20_000, bank_ms=0, auto_pause_ms=1500))
    other = OtherPerson(server, game)
    other.start()
    context, page = open_seat(browser, server, game, "en-US")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        switch = page.locator("[data-testid=auto-play]")
        switch.wait_for(timeout=WAIT_MS)
        assert switch.get_attribute("data-on") == "0" and switch.get_attribute("aria-checked") == "false"
        switch.click()
        page.wait_for_selector("[data-testid=auto-play][data-on='1']", timeout=WAIT_MS)
        page.wait_for_selector("[data-testid=auto-0]", timeout=WAIT_MS)
        log_line(page, "You turn auto-play (자동치기) on").first.wait_for(timeout=WAIT_MS)
        assert seat_view(server, game).seats[0].auto_play

        # The seat's decisions are the table's bot's, each after the 1.5 s pause.
        wait_my_decision(page)
        assert int(page.locator("[data-testid=my-clock]").get_attribute("data-left-ms") or "-1") <= 1500
        played = log_line(page, "You are on auto-play: the table's greedy bot ")
        page.wait_for_function(
            """() => [...document.querySelectorAll('[data-testid=log] li')]
                     .filter(li => li.textContent.includes('on auto-play: the table')).length >= 2""",
            timeout=WAIT_MS)
        assert played.count() >= 2
        shot(page, "clock-auto-play.png")

        # Off again: the switch and the badge follow, and the seat's next decision waits for its person.
        page.locator("[data-testid=auto-play]").click()
        page.wait_for_selector("[data-testid=auto-play][data-on='0']", timeout=WAIT_MS)
        page.wait_for_selector("[data-testid=auto-0]", state="detached", timeout=WAIT_MS)
        log_line(page, "You turn auto-play (자동치기) off").first.wait_for(timeout=WAIT_MS)
        assert not seat_view(server, game).seats[0].auto_play
        auto_moves = played.count()
        wait_my_decision(page)
        page.wait_for_timeout(2500)  # longer than the pause: nothing is played for the seat
        assert played.count() == auto_moves
        left = int(page.locator("[data-testid=my-clock]").get_attribute("data-left-ms") or "-1")
        assert 10_000 < left <= 20_000, left
        assert_one_screen(page, "decision")
        wait_my_decision(page)
        act_now(page)
        assert errors == []
    finally:
        other.stop()
        context.close()


# --------------------------------------------------------------------------------- the lobby


@needs_page
def test_the_lobby_offers_a_clock_for_a_table_with_people(browser: Browser, server: WebServer) -> None:
    context = browser.new_context(viewport=DESKTOP, locale="ko-KR")
    page = context.new_page()
    try:
        page.goto(server.url)
        page.wait_for_selector("[data-testid=create]:not([disabled])", timeout=WAIT_MS)
        page.select_option("[data-testid=players]", "2")
        page.select_option("[data-testid=seat-1]", "greedy")
        assert page.locator("[data-testid=clock]").count() == 0, "a table of bots has no clock"
        page.select_option("[data-testid=seat-1]", "person")
        clock = page.locator("[data-testid=clock]")
        assert clock.input_value() == "15"
        assert clock.locator("option").all_inner_texts() == ["없음", "10초", "15초", "30초", "60초"]
        assert "30초" in page.locator("[data-testid=clock-text]").inner_text()
        shot(page, "clock-lobby.png")
        page.click("[data-testid=create]")
        page.wait_for_selector("[data-testid=created]", timeout=WAIT_MS)
        page.click("[data-testid=sit-down]")
        page.wait_for_selector("[data-testid=table]", timeout=WAIT_MS)
        game_id = re.search(r"#/g/([A-Za-z0-9_-]+)", page.url)
        assert game_id
        with GostopClient(server.target) as client:
            settings = client.get_game(game_id.group(1)).clock.settings
        assert (settings.decision_ms, settings.bank_ms, settings.away_after) == (15_000, 30_000, 2)
        # The clock runs for whichever seat is to move.
        page.wait_for_selector("[data-testid=my-clock], [data-testid=clock-1]", timeout=WAIT_MS)
    finally:
        context.close()


# ------------------------------------------------------------------- sentences and arithmetic

ENTRY = """
export {{ eventLine, seatNamer }} from "{src}/events";
export {{ clockTime }} from "{src}/clock";
export {{ setLang }} from "{src}/i18n";
"""

RUNNER = """
import { clockTime, eventLine, seatNamer, setLang } from "./clock.mjs";
const view = { viewer: 0, botSeats: [], seats: [] };
const ev = (kind, value) => ({ kind: { case: kind, value } });
const play = (card) => ({ kind: { case: "playCard", value: { card, shake: false } } });
const events = [
  ev("playedForSeat", { seat: 0, policy: "greedy", action: play(8), cause: "timeout" }),
  ev("playedForSeat", { seat: 1, policy: "greedy", action: { kind: { case: "stop", value: {} } }, cause: "away" }),
  ev("playedForSeat", { seat: 0, policy: "", action: { kind: { case: "go", value: {} } }, cause: "auto_play" }),
  ev("playedForSeat", { seat: 1, policy: "greedy", cause: "timeout" }),
  ev("seatAway", { seat: 0, away: true }),
  ev("seatAway", { seat: 1, away: false }),
  ev("autoPlaySet", { seat: 0, on: true }),
  ev("autoPlaySet", { seat: 1, on: false }),
];
const out = {};
for (const lang of ["en", "ko"]) {
  setLang(lang);
  out[lang] = events.map((e) => eventLine(e, seatNamer(view)));
}
const clock = { seat: 0, startedMs: 1000n, bankFromMs: 3000n, deadlineMs: 8000n };
out.clock = [500, 1000, 2500, 3000, 4000, 9000].map((now) => clockTime(clock, now));
out.away = clockTime({ seat: 0, startedMs: 1000n, bankFromMs: 3000n, deadlineMs: 2000n }, 1500);
process.stdout.write(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if NODE is None or not ROLLDOWN.exists():
        pytest.skip("needs node and clients/web's packages: make web")
    tmp = tmp_path_factory.mktemp("clock-wording")
    entry = tmp / "entry.ts"
    entry.write_text(ENTRY.format(src=(WEB / "src").as_posix()))
    bundle = subprocess.run([str(ROLLDOWN), str(entry), "--format", "esm", "--platform", "node",
                             "-o", str(tmp / "clock.mjs")], cwd=WEB, capture_output=True, text=True, timeout=300)
    assert bundle.returncode == 0, bundle.stdout + bundle.stderr
    (tmp / "run.mjs").write_text(RUNNER)
    ran = subprocess.run([NODE, str(tmp / "run.mjs")], cwd=tmp, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    result: dict[str, Any] = json.loads(ran.stdout)
    return result


def test_the_log_says_who_played_for_a_seat_and_why(said: dict[str, Any]) -> None:
    timeout, away, auto, next_round, gone, back, on, off = said["en"]
    assert timeout.startswith("You timed out: the table's greedy bot played "), timeout
    assert away == "Seat 1 is away: the table's greedy bot stopped (스톱)", away
    assert auto == "You are on auto-play: the table's greedy bot went (고)", auto
    assert next_round == "Seat 1 timed out: the table's greedy bot dealt the next round", next_round
    assert gone == "You are away (the table's bot plays)", gone
    assert back == "Seat 1 is back", back
    assert on == "You turn auto-play (자동치기) on", on
    assert off == "Seat 1 turns auto-play (자동치기) off", off
    ko_timeout, ko_away, ko_auto, _, ko_gone, ko_back, ko_on, ko_off = said["ko"]
    assert ko_timeout.startswith("나: 시간 초과, 자동치기 (greedy): ") and ko_timeout.endswith(" 냄"), ko_timeout
    assert ko_away == "자리 1: 자리 비움, 자동치기 (greedy): 스톱", ko_away
    assert ko_auto == "나: 자동치기 (greedy): 고", ko_auto
    assert ko_gone.startswith("나: 자리 비움") and ko_back == "자리 1: 돌아옴", (ko_gone, ko_back)
    assert (ko_on, ko_off) == ("나: 자동치기 켬", "자리 1: 자동치기 끔")


def test_the_countdown_shows_the_decision_time_then_the_bank_apart(said: dict[str, Any]) -> None:
    # Decision time 2 s from 1000, then a 5 s bank until 8000.
    before, start, mid, bank_starts, in_bank, after = said["clock"]
    assert (before["decisionMs"], before["inBank"], before["fraction"]) == (2000, False, 1)
    assert (start["decisionMs"], start["bankMs"]) == (2000, 5000)
    assert (mid["decisionMs"], mid["bankMs"], mid["inBank"]) == (500, 5000, False)
    assert (bank_starts["decisionMs"], bank_starts["bankMs"], bank_starts["inBank"]) == (0, 5000, True)
    assert (in_bank["bankMs"], in_bank["inBank"], in_bank["fraction"]) == (4000, True, 0.8)
    assert (after["decisionMs"], after["bankMs"], after["fraction"]) == (0, 0, 0)
    # An away seat's deadline (the pause) comes before its decision time would end: no bank.
    assert (said["away"]["decisionMs"], said["away"]["inBank"]) == (500, False)
