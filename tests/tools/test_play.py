"""``gostop play`` in a pseudo-terminal (``pty.fork``): a person plays through the whole round by
choosing a listed number at every prompt until the settlement screen; the next-round prompt, ``q``
and end of input quit cleanly; every line fits 80 columns.

What the screen says is checked against itself: each hand card's hint names floor cards of its
month that are on the floor; each captured pile's count and 피 value add up from the names listed;
the settlement gives every 박 of the rules with a reason that matches the table, and the points
paid are the product it shows and the net points of the round."""

from __future__ import annotations

import codecs
import dataclasses
import os
import pty
import random
import re
import select
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from gostop.engine import Rules, Stop, View, apply, legal_actions, new_match, view
from gostop.engine.cards import ALL_CARDS, KIND, MONTH, NAME, PI_VALUE, Kind
from gostop.engine.render import card_name, term
from gostop.engine.state import Phase, State
from gostop.tools.play import _width, prompt_text
from gostop.wire import convert

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "(q quits): "
CHOICE = re.compile(r"choose 1-(\d+) \(q quits\): $")


class Terminal:
    """``gostop play ARGS`` running on a pseudo-terminal."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "TERM": "dumb", "COLUMNS": "80", "LINES": "24", "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": str(ROOT)}
        pid, fd = pty.fork()
        if pid == 0:  # the child: becomes the game
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-m", "gostop", "play", *args], env)
        self.pid, self.fd = pid, fd
        self.text = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.status: int | None = None

    def read_until(self, pattern: re.Pattern[str] | str, deadline: float) -> re.Match[str] | None:
        """Read output until ``pattern`` matches its end (None when the program exits first)."""
        regex = re.compile(re.escape(pattern) + "$") if isinstance(pattern, str) else pattern
        while True:
            found = regex.search(self.text)
            if found:
                return found
            if not self._read(deadline):
                return None

    def _read(self, deadline: float) -> bool:
        left = deadline - time.monotonic()
        assert left > 0, f"timed out; the screen ends with:\n{self.text[-3000:]}"
        ready, _, _ = select.select([self.fd], [], [], min(left, 1.0))
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            return False
        self.text += self._decoder.decode(data).replace("\r\n", "\n")
        return True

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait(self, deadline: float) -> int:
        while self._read(deadline):
            pass
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.02)
        raise AssertionError("gostop play did not exit")

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _lines_fit(text: str) -> None:
    for line in text.splitlines():
        assert _width(line) <= 80, f"too wide ({_width(line)} columns): {line!r}"


MONTHS_OF: dict[str, set[int]] = {}
"""The months a card name may stand for (``1월 피`` is two cards of one month; 보너스 cards have none)."""
KIND_OF: dict[str, Kind] = {}
PI_OF: dict[str, int] = {}
for _card in range(ALL_CARDS):
    MONTHS_OF.setdefault(card_name(_card), set()).add(MONTH[_card])
    KIND_OF[card_name(_card)] = KIND[_card]
    PI_OF[card_name(_card)] = PI_VALUE[_card]
KIND_OF[f"{NAME[32]} (쌍피)"], PI_OF[f"{NAME[32]} (쌍피)"] = Kind.PI, 2  # a converted 국진
KINDS = {"광": Kind.GWANG, "열끗": Kind.YEOL, "띠": Kind.TTI, "피": Kind.PI}


def _screens(out: str) -> list[str]:
    """Each table the person was shown, with what follows it up to the next table."""
    return ["== " + part for part in out.split("\n== ")[1:]]


def _floor(screen: str) -> Counter[str]:
    """The floor cards of a table, by name."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("floor: "))
    text = lines[start].removeprefix("floor: ")
    for line in lines[start + 1:]:
        if not line.startswith("       ") or line.strip().startswith("stack month"):
            break
        text += "  " + line.strip()
    return Counter(name for name in text.split("  ") if name.strip() and name != "(empty)")


def _check_hints(screen: str) -> int:
    """Every ``play`` choice of a menu says what its card takes from this table's floor, truly:
    nothing when no floor card has its month, else the floor cards of its month. Returns the number
    of hints that name floor cards."""
    floor = _floor(screen)
    lines = screen.splitlines()
    taking = 0
    for i, line in enumerate(lines):
        played = re.match(r" +\d+\) play (\d\d)-[a-z-]+ (\S+(?: \S+)?)(?: and shake \(흔들기\))?(?: +-> (.*))?$", line)
        if not played:
            continue
        month = int(played.group(1))
        hint = played.group(3) or lines[i + 1].strip().removeprefix("-> ")
        same = Counter({name: n for name, n in floor.items() if month in MONTHS_OF[name]})
        if hint == "stays on the floor":
            assert not same, (line, floor)
            continue
        taken = re.fullmatch(r"takes (.+?)(?: \((?:you choose|뻑: \+1 피 from each|자뻑: \+2 피 from each)\))?", hint)
        assert taken, hint
        names = Counter(taken.group(1).replace(" or ", ", ").split(", "))
        assert names == same, (line, hint, floor)
        taking += 1
    return taking


def _piles(screen: str) -> dict[str, dict[str, tuple[int, int]]]:
    """Each seat's captured piles on a table: seat head -> kind -> (cards, 피 value), after checking
    that every pile lists its cards by name, of its kind, as many as its count says."""
    seats: dict[str, dict[str, tuple[int, int]]] = {}
    seat = ""
    lines = screen.split("\nyour hand")[0].splitlines()
    for i, line in enumerate(lines):
        if line.startswith("seat "):
            seat = line.split(" | ")[0]
            seats[seat] = {}
        head = re.match(r"  (광|열끗|띠|피) (\d+) cards?(?: = (\d+) 피 \((?:쌍피 = 2|쓰리피 = 3|, )+\))?:(.*)$", line)
        if not head:
            continue
        text = head.group(4)
        for more in lines[i + 1:]:
            if not more.startswith("    "):
                break
            text += " " + more.strip()
        cards = value = 0
        for item in text.strip().split(", "):
            name, _, times = item.partition(" ×")
            n = int(times or 1)
            assert KIND_OF[name] is KINDS[head.group(1)], (line, name)
            cards, value = cards + n, value + n * PI_OF[name]
        assert cards == int(head.group(2)), line
        if head.group(1) == "피":
            assert value == int(head.group(3) or head.group(2)), line
        seats[seat][head.group(1)] = (cards, value)
    return seats


ROMANISED = re.compile(r"\b(gwang|bigwang|yeol|tti|pi|ssangpi|godori|hongdan|cheongdan|chodan|sseul|ppeok|jappeok|"
                       r"jjok|ttadak|pibak|gwangbak|gobak|meongbak|nagari|chongtong)\b")
CODE = re.compile(r"\b\d\d-[a-z]+(?:-[ab])?\b")


def _announced_once(out: str) -> None:
    """No "... seat N to move" line repeats while that seat is still on the same turn: between two
    announcements of one seat another seat moved, or the person's own table came."""
    last = ""
    for line in out.splitlines():
        if line.startswith("== ") or "round over" in line:
            last = ""
        elif line.startswith("... ") and line.endswith(" to move"):
            assert line != last, f"announced twice: {line!r}"
            last = line


def test_a_full_round_by_choosing_listed_numbers() -> None:
    deadline = time.monotonic() + 60
    term = Terminal("--preset", "standard", "--players", "2", "--bots", "greedy", "--seed", "7", "--rounds", "1")
    try:
        choices = 0
        while True:
            prompt = term.read_until(CHOICE, deadline)
            if prompt is None:
                break
            count = int(prompt.group(1))
            screen = term.text[term.text.rfind("== standard"):]
            assert "your hand" in screen and "floor:" in screen and "stock" in screen
            assert f"{count:>2}) " in screen  # every choice is listed with its number
            term.send(f"{choices % count + 1}\n")
            choices += 1
            term.read_until("\n", deadline)  # the echo of the answer
        assert term.wait(deadline) == 0
    finally:
        term.kill()
    out = term.text
    assert choices >= 5
    assert "round over" in out and "net points this round" in out and "match over" in out
    assert re.search(r"seat 1 \(greedy\) plays \d+월 ", out)  # the bot's moves, cards by name
    assert "seat 0 (you) plays" in out
    _lines_fit(out)
    _announced_once(out)
    assert not re.search(r"\bversion\b", out)  # internal jargon

    # item 11: every hand card's hint names the floor cards it would take, and some take something
    screens = _screens(out)
    assert sum(_check_hints(screen) for screen in screens) >= 3
    # item 12: Korean terms only (the cards' codes of the menu aside); everyday card names
    shown = CODE.sub("", "\n".join(line for line in out.splitlines() if not line.startswith("game ")))
    assert not ROMANISED.search(shown), ROMANISED.search(shown)
    assert "play 11-gwang 똥광" in out and "play 12-bigwang 비광" in out  # seed 7 deals both to the person
    assert re.search(r"^your hand \(10\): .*똥광  비광", out, re.M)
    assert re.search(r"score \d+ = (광|피) \d+", out)
    # items 13, 14: piles by name, grouped by kind with counts (checked by _piles); 피 value explained
    final = _piles(screens[-1])
    assert set(final) == {"seat 0 (you)", "seat 1 (greedy)"}
    assert re.search(r"^  피 \d+ cards = \d+ 피 \(쌍피 = 2", out, re.M)

    # item 15: one breakdown per payer, every multiplier and 박 with its reason
    settlement = out[out.index("round over"):]
    winner = re.search(r"^(you win|seat 1 \(greedy\) wins) by stopping \(스톱\) at (\d+):$", settlement, re.M)
    assert winner, settlement
    assert re.search(rf"^  score {winner.group(2)} = (광|열끗|고도리|띠|홍단|청단|초단|피) \d+", settlement, re.M)
    assert re.search(r"^  (no 고|\d+고: .* = \d+)$", settlement, re.M)
    for multiplier in ("흔들기/폭탄", "멍박"):
        assert re.search(rf"^  (no {multiplier}|×\d+ {multiplier}.*): .+$", settlement, re.M), multiplier
    payer = "you" if winner.group(1) == "seat 1 (greedy) wins" else "seat 1 (greedy)"
    loser = "seat 0 (you)" if payer == "you" else "seat 1 (greedy)"
    paid = re.search(rf"^{re.escape(payer)} pays? .* (\d+) points?:$", settlement, re.M)
    assert paid, settlement
    block = settlement[paid.end():].split("\nnet points")[0]
    for bak in ("피박", "광박", "고박"):
        assert len(re.findall(rf"^  (?:no {bak}|×2 {bak}): .+$", block, re.M)) == 1, (bak, block)
    pi = re.search(r"^  no 피박: (?:you have|seat 1 \(greedy\) has) (\d+) 피", block, re.M)
    if pi:  # the reason agrees with the loser's pile on the table
        assert int(pi.group(1)) == final[loser].get("피", (0, 0))[1]
    product = re.search(r"^  points: (\d+)((?: × \d+ \(\S+\))*)(?: = (\d+))?$", block, re.M)
    assert product, block
    total = int(product.group(1))
    for factor in re.findall(r"× (\d+)", product.group(2)):
        total *= int(factor)
    assert total == int(product.group(3) or product.group(1)) == int(paid.group(1))
    net = "you" if payer == "you" else "seat 1 (greedy)"
    assert re.search(rf"^net points this round: .*{re.escape(net)} -{total}\b", settlement, re.M)
    # one rendering of the settlement, not a second summary of the same (the old "settlement: ..." block)
    assert len(re.findall(r"^  points: ", settlement, re.M)) == 1 and "settlement:" not in settlement


def test_a_bot_turn_of_several_decisions_is_announced_once() -> None:
    """Regression: while a thinking bot made the second decision of its turn
    (국진, go/stop, a capture choice), the screen printed "... seat 1 (mcts) to move" again."""
    deadline = time.monotonic() + 120
    term = Terminal("--players", "2", "--bots", "mcts:iterations=200", "--seed", "7", "--rounds", "1")
    try:
        while term.read_until(CHOICE, deadline) is not None:
            term.send("1\n")
            term.read_until("\n", deadline)
        assert term.wait(deadline) == 0
    finally:
        term.kill()
    out = term.text
    assert "round over" in out
    # the bot did make turns of several decisions (its 국진 choice after its play, its 고 or stop)
    assert re.search(r"^seat 1 \(mcts:iterations=200\) (keeps 국진|counts 국진|goes|stops)", out, re.M)
    _announced_once(out)


def test_next_round_prompt_then_q_quits() -> None:
    deadline = time.monotonic() + 60
    term = Terminal("--players", "2", "--bots", "random", "--seed", "11", "--rounds", "2")
    try:
        while True:  # play round 1 by always taking the first choice
            prompt = term.read_until(re.compile(r"(choose 1-\d+|for the next round) \(q quits\): $"), deadline)
            assert prompt is not None, term.text[-2000:]
            if "next round" in prompt.group(0):
                break
            term.send("1\n")
            term.read_until("\n", deadline)
        assert "round over" in term.text
        term.send("\n")
        assert term.read_until(CHOICE, deadline) is not None
        assert "round 2 of 2" in term.text
        term.send("q\n")
        assert term.wait(deadline) == 0
    finally:
        term.kill()
    assert term.text.rstrip().endswith("bye")
    _lines_fit(term.text)


def test_end_of_input_quits() -> None:
    deadline = time.monotonic() + 60
    term = Terminal("--seed", "3")
    try:
        assert term.read_until(CHOICE, deadline) is not None
        term.send("x\n")  # not a number: asked again
        again = re.compile(r"x\ntype a number from 1 to \d+, or q to quit\nchoose 1-\d+ \(q quits\): $")
        assert term.read_until(again, deadline) is not None
        term.send("\x04")  # Ctrl-D at the start of a line: end of input
        assert term.wait(deadline) == 0
    finally:
        term.kill()
    assert "bye" in term.text


# ------------------------------------------------------------------ the go/stop prompt, on its own

GO_STOP_TABLES = [("standard", 2), ("standard", 3), ("classic", 3), ("house", 2), ("house", 3), ("arcade", 2)]


def _go_stop_views() -> Iterator[tuple[State, View]]:
    """States where a seat decides 고 or 스톱 (random play, some 고 on the way, some after a 나가리),
    with that seat's view as ``gostop play`` gets it: through the wire."""
    for preset, players in GO_STOP_TABLES:
        rules = Rules.preset(preset, players=players)
        for seed in range(12):
            rng = random.Random(seed)
            match, _ = new_match(rules, seed)
            state = match.round if seed % 3 else dataclasses.replace(match.round, carry=True)
            while state.phase is not Phase.OVER:
                actions = legal_actions(state)
                if state.phase is Phase.GO_STOP:
                    msg = convert.view_to_pb(view(state, state.to_move), match, "game", 1)
                    yield state, convert.view_from_pb(msg)
                    if rng.random() < 0.5:
                        break
                state, _ = apply(state, actions[rng.randrange(len(actions))])


def test_the_go_stop_prompt_shows_the_whole_bill_not_only_the_score_before_multipliers_regression() -> None:
    """Regression: at 고 or 스톱 the prompt said only "you win 3 before multipliers" where the web table
    shows the whole bill. Now it shows what the engine's own settlement of a stop gives, payer by
    payer: the points paid (and their money), the product with every factor named."""
    seen = 0
    factors: set[str] = set()
    for state, v in _go_stop_views():
        settled = apply(state, Stop())[0].settlement
        assert settled is not None
        text = prompt_text(v, {})
        _lines_fit(text)
        assert "before multipliers" not in text
        won = sum(b.pays for b in settled.bills)
        money = f" (money {won * settled.point_value})" if settled.point_value else ""
        assert f"if you stop (스톱) now, you win {won} point{'s' * (won != 1)}{money}:" in text, text
        assert re.search(rf"-> ends the round: you win {won} points? \(the bill above\)$", text, re.M), text
        for bill in settled.bills:
            head = re.search(rf"^  seat {bill.seat} (?:pays you {bill.pays} points?|owes you {bill.points} points?, "
                             rf"paid by seat \d \((?:고박|독박)\))(.*):$", text, re.M)
            assert head, (bill, text)
            if settled.point_value and bill.pays == bill.points:
                assert head.group(1) == f" (money {bill.pays * settled.point_value})"
            named = [*settled.winner_factors, *bill.factors]
            product = "".join(f" × {f.value} ({term(f.name)})" for f in named)
            points = f"points: {settled.go_score}{product} = {bill.points}" if named else f"points: {bill.points}"
            assert f"\n    {points}\n" in text, (points, text)
            factors.update(f.name for f in named)
        seen += 1
    assert seen >= 40
    assert {"shake_bomb", "pibak", "gwangbak", "nagari_carry"} <= factors  # the cases cover the factors
