"""The grpcurl examples of ``docs/grpcurl.md`` (and of ``docs/bot-seats.md``), run against a real server process.

The examples are parsed from the page itself, so the documentation cannot rot: every ```` ```sh ````
block is run in order with bash (``set -euo pipefail``) against ``python -m gostop serve`` on a free
port, started with the keys of the page's own ``console`` block (the server it tells a reader to
start), with ``ADDR`` in the environment (``API_KEY`` and ``OPERATOR_KEY`` take the page's defaults)
and ``.tools/bin`` (where ``make test`` installs grpcurl) on ``PATH``. Rules of the page:

- A block's exit status must be 0, or the number of a ``# exit status: N`` line in the block.
- The variable assignments of earlier blocks (lines ``NAME=…``) are replayed before each block, and
  all blocks share one working directory, so later examples can use ``$GAME_ID`` and ``$TOKEN1``.
- A ```` ```text ```` block right after a command block is its expected output (stdout, then
  stderr): each of its lines, stripped, must match a stripped output line, in order (other output
  lines may come between); ``…`` matches any text, and a line of only ``…`` is just a visual gap.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from testkit.servers import start_process

# Not in make check: grpcurl, a Go tool.
pytestmark = pytest.mark.slow

ROOT: Final = Path(__file__).resolve().parents[2]
DOC: Final = ROOT / "docs" / "grpcurl.md"
BOT_SEATS_DOC: Final = ROOT / "docs" / "bot-seats.md"
TOOLS: Final = ROOT / ".tools" / "bin"
FENCE: Final = re.compile(r"^```(\S*)\s*$")
STATUS: Final = re.compile(r"^#\s*exit status:\s*(\d+)\s*$", re.MULTILINE)
ASSIGNMENT: Final = re.compile(r"^[A-Z][A-Z0-9_]*=")
RPCS: Final = (" list", " describe ", "grpc.health.v1.Health/Check", "GameService/ListRuleSets",
               "GameService/CreateGame", "GameService/GetGame", "GameService/SubmitAction")


@dataclass(frozen=True)
class Block:
    info: str
    line: int
    body: str


@dataclass(frozen=True)
class Example:
    line: int
    script: str
    expected: tuple[str, ...] | None
    status: int


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with the line number of their opening fence."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"unclosed code block at line {start + 1}"
        out.append(Block(m.group(1), start + 1, "\n".join(body) + "\n"))
        i += 1
    return out


def examples(text: str) -> list[Example]:
    found = blocks(text)
    out: list[Example] = []
    for n, block in enumerate(found):
        if block.info != "sh":
            continue
        after = found[n + 1] if n + 1 < len(found) else None
        expected = tuple(after.body.splitlines()) if after is not None and after.info == "text" else None
        status = STATUS.search(block.body)
        out.append(Example(block.line, block.body, expected, int(status.group(1)) if status else 0))
    return out


def pattern(line: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in line.strip().split("…")))


def unmatched(expected: tuple[str, ...], output: str) -> str | None:
    """The first expected line with no matching output line after the previous match, if any."""
    lines = [line.strip() for line in output.splitlines()]
    i = 0
    for want in expected:
        if want.strip() in ("", "…"):
            continue
        p = pattern(want)
        while i < len(lines) and not p.fullmatch(lines[i]):
            i += 1
        if i == len(lines):
            return want.strip()
        i += 1
    return None


def test_the_page_parses_into_examples() -> None:
    found = examples(DOC.read_text(encoding="utf-8"))
    assert len(found) >= 10
    commands = "".join(e.script for e in found)
    for rpc in RPCS:
        assert rpc in commands, f"docs/grpcurl.md has no example of {rpc.strip()}"
    assert all(e.expected is not None for e in found if "grpcurl" in e.script), "every call shows its output"
    assert unmatched(("a…c", "…", "e"), "x\nabc\nd\ne\n") is None
    assert unmatched(("e", "abc"), "abc\ne\n") == "abc"


def documented_server_keys(text: str) -> tuple[str, str]:
    """The API and operator keys of the server the page tells you to start (its ``console`` block),
    which must be the defaults of its API_KEY and OPERATOR_KEY variables."""
    [start] = [b.body for b in blocks(text) if b.info == "console"]
    m = re.fullmatch(r"GOSTOP_API_KEYS=(\S+) GOSTOP_OPERATOR_KEYS=(\S+) make run\n", start)
    assert m, start
    assert f"API_KEY=${{API_KEY:-{m.group(1)}}}" in text and f"OPERATOR_KEY=${{OPERATOR_KEY:-{m.group(2)}}}" in text
    return m.group(1), m.group(2)


def check_tools() -> None:
    grpcurl = TOOLS / "grpcurl"
    if not grpcurl.exists() and shutil.which("grpcurl") is None:
        pytest.fail("grpcurl is not installed: `make test` installs it into .tools/bin (the $(GRPCURL) rule)",
                    pytrace=False)
    if shutil.which("jq") is None:
        pytest.fail("jq is not installed (Debian: apt-get install -y jq); the documented examples use it",
                    pytrace=False)


def run_examples(doc: Path, port: int, tmp_path: Path, assignments: list[str]) -> list[str]:
    """Run the ``sh`` examples of ``doc`` in order against the server on ``port``, after
    ``assignments``; the assignments with those of ``doc`` added."""
    # The page's own defaults of API_KEY and OPERATOR_KEY apply: the keys of the server it starts.
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("API_KEY", "OPERATOR_KEY")},
        "PATH": f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}",
        "ADDR": f"127.0.0.1:{port}",
    }
    assignments = list(assignments)
    found = examples(doc.read_text(encoding="utf-8"))
    assert found, f"{doc.name} has no sh example"
    for example in found:
        script = "\n".join(["set -euo pipefail", *assignments, example.script])
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=60, check=False)
        output = done.stdout + done.stderr
        where = f"docs/{doc.name} line {example.line}"
        assert done.returncode == example.status, (
            f"{where}: exit status {done.returncode}, expected {example.status}\n{output}")
        if example.expected is not None:
            missing = unmatched(example.expected, output)
            assert missing is None, f"{where}: no output line matches {missing!r}\n{output}"
        assignments += [line for line in example.script.splitlines() if ASSIGNMENT.match(line)]
    return assignments


async def test_documented_examples_run(tmp_path: Path) -> None:
    check_tools()
    api_key, operator_key = documented_server_keys(DOC.read_text(encoding="utf-8"))
    server = await start_process("", GOSTOP_API_KEYS=api_key, GOSTOP_OPERATOR_KEYS=operator_key)
    try:
        run_examples(DOC, server.port, tmp_path, [])
    finally:
        server.stop()


async def test_the_bot_seats_grpcurl_example_sends_the_api_key_regression(tmp_path: Path) -> None:
    """Regression: docs/bot-seats.md's grpcurl example sent no API key, so the server of
    docs/grpcurl.md's conventions (one with keys) refused its CreateGame, and the page did not say
    to add one. Its examples run after the conventions block of docs/grpcurl.md (ADDR, API_KEY),
    against that server, playing bot seats itself as ``make run`` does (the memory store)."""
    check_tools()
    text = DOC.read_text(encoding="utf-8")
    api_key, operator_key = documented_server_keys(text)
    assert "grpcurl.md#conventions" in BOT_SEATS_DOC.read_text(encoding="utf-8")
    conventions = [line for line in examples(text)[0].script.splitlines() if ASSIGNMENT.match(line)]
    assert [line.split("=", 1)[0] for line in conventions] == ["ADDR", "API_KEY", "OPERATOR_KEY"]
    server = await start_process("", GOSTOP_API_KEYS=api_key, GOSTOP_OPERATOR_KEYS=operator_key)
    try:
        run_examples(BOT_SEATS_DOC, server.port, tmp_path, conventions)
    finally:
        server.stop()
