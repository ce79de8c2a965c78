"""``gostop play`` in a pseudo-terminal (``pty.fork``): a person plays through the whole round by
choosing a listed number at every prompt until the settlement screen; the next-round prompt, ``q``
and end of input quit cleanly; every line fits 80 columns."""

from __future__ import annotations

import codecs
import os
import pty
import re
import select
import signal
import sys
import time
from pathlib import Path

from gostop.tools.play import _width

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
    assert "round over" in out and "net points" in out and "match over" in out
    assert re.search(r"seat 1 \(greedy\) plays \d\d-", out)  # the bot's moves are shown as they happen
    assert "seat 0 (you) plays" in out
    assert re.search(r"\d\d-\w+ \d+월", out)  # codes with Korean names
    _lines_fit(out)


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
