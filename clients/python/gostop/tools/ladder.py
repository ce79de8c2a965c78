"""``gostop ladder``: a ratings store that remembers every tournament.

Each ``gostop tournament`` run records its games in one *ladder* (a SQLite file by default, or a
Redis database: ``--ladder redis://...``), and ``gostop ladder`` rates every game ever recorded
there: an openskill leaderboard per preset and table size, with each entry's uncertainty, games
and win rate (Wilson 95 % CI), and a chart of the ratings over time (``--png``). ``--merge DIR...``
records the result folders of other runs — the shards of the Kubernetes tournament Job, runs of
other machines — and writes their merged report.

**Entries.** A ladder entry is a bot *as it was when it played*: its name, its options (those of
its spec, and ``--mcts-millis`` for ``mcts``) and its code version — for a built-in bot the
package version and a hash of the bot's source module and the modules of ``gostop.bots`` it uses;
for a plugin the version of the distribution that installs it (if any) and a hash of its module
files; nothing for a remote bot (``remote:NAME``), which is known by its name and options only.
A bot whose code or options change is a new entry, rated from scratch. The tournament works the
identities out when it starts and writes them to ``bots.json`` beside ``results.jsonl``; each
game's record names its seats' entries (``bot_ids``).

**Once per game.** A game is stored under its run id (``run_id`` in ``tournament.json``, kept
when the run is resumed) and its key (matchup, deal seed, rotation): recording a folder again,
resuming a run or merging the same shards twice adds nothing that is already there.

**Ratings.** The games of a table are rated in the order they ended, one openskill
Plackett-Luce update per game (seats ranked by their points, as in the tournament report), so
that the ladder is the same whichever store holds it and whichever order the folders were
recorded in.

>>> bot_identity("greedy").name, bot_identity("greedy") == bot_identity("greedy")
('greedy', True)
>>> bot_identity("mcts", {"cpu_millis": 50}).spec
'mcts:cpu_millis=50'
>>> bot_identity("mcts:cpu_millis=50").id == bot_identity("mcts", {"cpu_millis": 50}).id
True
>>> bot_identity("remote:ts:style=random").code
'remote'
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib
import json
import math
import os
import sqlite3
import sys
import time
import uuid
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from gostop.bots import make_bot, parse_spec
from gostop.bots.arena import wilson
from gostop.tools.tournament.plan import REPORT_PNG, RESULTS, SETTINGS_JSON, load_results, planned_keys
from gostop.tools.tournament.report import (
    HANGUL_FONTS,
    WIDTH,
    build_report,
    display_width,
    format_report,
    save_report,
    wrap,
)

ENV: Final = "GOSTOP_LADDER"
"""The ladder of ``gostop tournament`` and ``gostop ladder`` when ``--ladder`` is not given."""
OFF: Final = "off"
"""``--ladder off`` (or ``GOSTOP_LADDER=off``): record nothing."""
BOTS_JSON: Final = "bots.json"
"""The identities of a run's bots (entry id -> identity), beside its ``results.jsonl``."""
REDIS_SCHEMES: Final = ("redis", "rediss", "unix", "redis+sentinel", "redis+cluster")
REDIS_KEYS: Final = ("gostop:{ladder}:entries", "gostop:{ladder}:games")
"""The two hashes of a Redis ladder (one hash slot, so that a Cluster holds both on one node)."""
HISTORY_POINTS: Final = 400
"""Points per entry the chart of ratings over time draws at most (evenly spaced, the last kept)."""

# ----------------------------------------------------------------------------- entries


@dataclass(frozen=True, slots=True)
class Identity:
    """What a ladder entry is: a bot's name, options and code version."""

    name: str
    """The bot's spec without options: ``mcts``, ``my_bot:MyBot``, ``remote:ts``."""
    options: tuple[tuple[str, Any], ...] = ()
    """Its options, sorted by name."""
    version: str = ""
    """The distribution and its version that the code came from (``gostop 0.1.0``); "" when none."""
    source: str = ""
    """SHA-256 of the bot's source files; "" when unknown (remote bots, results recorded before)."""

    @property
    def id(self) -> str:
        """The entry's key in the ladder: a hash of everything above."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def spec(self) -> str:
        """The bot's spec as a command line gives it (options sorted)."""
        options = ",".join(f"{k}={_spec_value(v)}" for k, v in self.options)
        return f"{self.name}:{options}" if options else self.name

    @property
    def code(self) -> str:
        """The code version, short: ``0.1.0+3fa2c1d`` (the version, the first digits of the hash);
        ``remote`` for a remote bot, ``?`` when the run did not record it."""
        if self.name.startswith("remote:") and not self.source:
            return "remote"
        number = self.version.split()[-1][:12] if self.version else ""
        short = self.source[:7]
        return "+".join(p for p in (number, short) if p) or "?"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "options": dict(self.options), "version": self.version, "source": self.source}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Identity:
        return cls(str(data["name"]), tuple(sorted(dict(data.get("options") or {}).items())),
                   str(data.get("version", "")), str(data.get("source", "")))


def _spec_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _distribution(module: str) -> str:
    """``name version`` of the installed distribution that provides the top-level ``module``; ""."""
    top = module.split(".")[0]
    for name in metadata.packages_distributions().get(top, []):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:  # pragma: no cover - a stale record of a removed package
            continue
    return ""


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def source_hash(module: str, package: str) -> str:
    """SHA-256 of the source files of ``module`` and of every module of ``package`` it uses (what
    its namespace holds: modules, and classes and functions defined in them), transitively."""
    seen: dict[str, ModuleType] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        mod = sys.modules.get(name) or importlib.import_module(name)
        seen[name] = mod
        for value in vars(mod).values():
            ref = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
            if isinstance(ref, str) and _within(ref, package) and ref not in seen:
                todo.append(ref)
    digest = hashlib.sha256()
    for name in sorted(seen):
        path = getattr(seen[name], "__file__", None)
        if path and Path(path).is_file():
            digest.update(name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
    return digest.hexdigest()


def bot_identity(spec: str, extra: Mapping[str, Any] | None = None) -> Identity:
    """The ladder identity of the bot of ``spec`` played with ``extra`` options on top of its own
    (the tournament's ``--mcts-millis``). Builds the bot once (not a remote one) to find its code."""
    target, options = parse_spec(spec)
    options.update(extra or {})
    ordered = tuple(sorted(options.items()))
    if target.startswith("remote:"):
        return Identity(target, ordered)
    module = type(make_bot(spec, **(extra or {}))).__module__
    if _within(module, "gostop.bots"):
        return Identity(target, ordered, _distribution("gostop") or "gostop", source_hash(module, "gostop.bots"))
    return Identity(target, ordered, _distribution(module), source_hash(module, module.split(".")[0]))


def legacy_identity(spec: str, settings: Mapping[str, Any]) -> Identity:
    """The identity of a bot in results recorded before the tournament recorded identities: its
    name and options (``mcts`` with the run's ``mcts_millis``), code unknown."""
    target, options = parse_spec(spec)
    millis = settings.get("mcts_millis")
    if target == "mcts" and millis is not None:
        options.setdefault("cpu_millis", millis)
    return Identity(target, tuple(sorted(options.items())))


def read_identities(out: Path) -> dict[str, Identity]:
    """The identities a run's folder records (``bots.json``), by entry id."""
    path = out / BOTS_JSON
    if not path.exists():
        return {}
    return {key: Identity.from_json(value) for key, value in json.loads(path.read_text(encoding="utf-8")).items()}


def save_identities(out: Path, identities: Iterable[Identity]) -> None:
    """Add ``identities`` to the folder's ``bots.json`` (the entries of earlier runs in it stay:
    a resumed run may have played its first games with other code)."""
    known = read_identities(out)
    known.update((i.id, i) for i in identities)
    text = json.dumps({key: known[key].to_json() for key in sorted(known)}, indent=2, ensure_ascii=False)
    (out / BOTS_JSON).write_text(text + "\n", encoding="utf-8")


def run_id_of(out: Path) -> str:
    """The run id of the tournament in ``out``: when the folder holds results (a run resumed), the
    id they were recorded under (``folder_run_id``), else a new one."""
    results = load_results(out / RESULTS)
    if not results:
        return uuid.uuid4().hex
    settings = out / SETTINGS_JSON
    return folder_run_id(json.loads(settings.read_text()) if settings.exists() else {}, results)


def folder_run_id(settings: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> str:
    """The run id of a folder's results: the one its ``tournament.json`` holds, else, for results
    of before run ids, one derived from what the folder holds (its settings, or its first game), so
    that recording the folder again or resuming its run (here or on another machine) finds the same."""
    given = settings.get("run_id")
    if isinstance(given, str) and given:
        return given
    if settings:
        basis = json.dumps(settings, sort_keys=True)
    else:
        basis = str(results[0]["key"]) + str(results[0].get("game_id")) if results else ""
    return "legacy-" + hashlib.sha256(basis.encode()).hexdigest()[:16]


# -------------------------------------------------------------------------------- games


@dataclass(frozen=True, slots=True)
class Game:
    """One game as the ladder stores it."""

    run_id: str
    key: str
    preset: str
    players: int
    seats: tuple[str, ...]
    """The entry id of each seat."""
    points: tuple[int, ...]
    winner: int
    """The winning seat; -1 for a draw (나가리)."""
    ended_at: float
    """Unix time the game ended (the time its folder was recorded, for results that lack it)."""

    @property
    def uid(self) -> str:
        return f"{self.run_id}|{self.key}"

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "key": self.key, "preset": self.preset, "players": self.players,
                "seats": list(self.seats), "points": list(self.points), "winner": self.winner,
                "ended_at": self.ended_at}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Game:
        return cls(str(data["run_id"]), str(data["key"]), str(data["preset"]), int(data["players"]),
                   tuple(data["seats"]), tuple(int(p) for p in data["points"]), int(data["winner"]),
                   float(data["ended_at"]))

    def order(self) -> tuple[float, str, str]:
        """The order in which games are rated: when they ended, then run and key (ties)."""
        return (self.ended_at, self.run_id, self.key)


@dataclass
class Folder:
    """The results of one tournament folder, ready for the ladder: every record with its run id and
    the entry ids of its seats filled in (derived for results recorded before they were)."""

    path: Path
    settings: dict[str, Any]
    run_id: str
    records: list[dict[str, Any]]
    identities: dict[str, Identity]

    def games(self) -> list[Game]:
        return [Game(r["run_id"], r["key"], r["preset"], int(r["players"]), tuple(r["bot_ids"]),
                     tuple(int(p) for p in r["points"]), int(r["winner"]), float(r["ended_at"]))
                for r in self.records]


def read_folder(path: Path) -> Folder:
    """A tournament's results folder (``results.jsonl``, ``tournament.json``, ``bots.json``)."""
    if not (path / RESULTS).exists():
        raise FileNotFoundError(f"no {RESULTS} in {path}")
    settings_path = path / SETTINGS_JSON
    settings: dict[str, Any] = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    raw = load_results(path / RESULTS)
    fallback = folder_run_id(settings, raw)  # for records without their own (results of before run ids)
    identities = read_identities(path)
    mtime = (path / RESULTS).stat().st_mtime
    records = []
    for r in raw:
        record = dict(r)
        record.setdefault("run_id", fallback)
        record.setdefault("ended_at", round(mtime, 3))
        if "bot_ids" not in record or any(i not in identities for i in record["bot_ids"]):
            seat_ids = []
            for spec in record["seats"]:
                identity = legacy_identity(spec, settings)
                identities.setdefault(identity.id, identity)
                seat_ids.append(identity.id)
            record["bot_ids"] = seat_ids
        records.append(record)
    return Folder(path, settings, fallback, records, identities)


# -------------------------------------------------------------------------------- stores


class Store(Protocol):
    """Where a ladder lives: its entries and its games, each game once."""

    location: str
    """Where, as said to a person (a Redis URL without its password)."""

    def add(self, identities: Iterable[Identity], games: Iterable[Game]) -> int:
        """Store the entries and games not yet there; the number of new games."""
        ...

    def identities(self) -> dict[str, Identity]: ...

    def games(self) -> list[Game]: ...

    def close(self) -> None: ...


class SqliteStore:
    """A ladder in a SQLite file: tables ``entries`` (id, identity as JSON) and ``games`` (run id,
    key, the game as JSON; primary key run id and key, so that a game is inserted once)."""

    SCHEMA: Final = (
        "CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, identity TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS games (run_id TEXT NOT NULL, key TEXT NOT NULL, ended_at REAL NOT NULL, "
        "game TEXT NOT NULL, PRIMARY KEY (run_id, key))",
    )

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.location = str(path)
        # Writers of other processes (shards recording at once) wait for the lock instead of failing.
        self.db = sqlite3.connect(path, timeout=60)
        with self.db:
            for statement in self.SCHEMA:
                self.db.execute(statement)

    def add(self, identities: Iterable[Identity], games: Iterable[Game]) -> int:
        with self.db:  # one transaction
            self.db.executemany("INSERT OR IGNORE INTO entries VALUES (?, ?)",
                                [(i.id, json.dumps(i.to_json(), ensure_ascii=False)) for i in identities])
            before = self.db.total_changes
            self.db.executemany("INSERT OR IGNORE INTO games VALUES (?, ?, ?, ?)",
                                [(g.run_id, g.key, g.ended_at, json.dumps(g.to_json(), ensure_ascii=False))
                                 for g in games])
            return self.db.total_changes - before

    def identities(self) -> dict[str, Identity]:
        return {key: Identity.from_json(json.loads(text))
                for key, text in self.db.execute("SELECT id, identity FROM entries")}

    def games(self) -> list[Game]:
        return [Game.from_json(json.loads(text)) for (text,) in self.db.execute("SELECT game FROM games")]

    def close(self) -> None:
        self.db.close()


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


class RedisStore:
    """A ladder in Redis (the deployment's own, or any): two hashes, ``gostop:{ladder}:entries``
    (entry id -> identity as JSON) and ``gostop:{ladder}:games`` (``run_id|key`` -> the game as
    JSON), written with HSETNX so that a game is stored once. The keys have no expiry."""

    def __init__(self, url: str) -> None:
        self.location = _redacted(url)
        scheme = urlsplit(url).scheme.lower()
        self.client: Any
        self.sentinels: list[Any] = []
        if scheme == "redis+sentinel":
            # The server's form (a deployment's GOSTOP_REDIS_URL): the master of a Sentinel group,
            # redis+sentinel://[[user]:password@]host:port[,host:port...]/<master_name>[/db].
            from redis.sentinel import Sentinel

            parts = urlsplit(url)
            path = [unquote(p) for p in parts.path.split("/") if p]
            if not 1 <= len(path) <= 2:
                raise ValueError(f"a redis+sentinel URL needs /<master_name>[/db]: {self.location}")
            hosts = []
            for item in parts.netloc.rpartition("@")[2].split(","):
                host, _, port = item.rpartition(":")
                hosts.append((host.strip("[]") or item, int(port) if host else 26379))
            sentinel = Sentinel(hosts, socket_connect_timeout=5,
                                sentinel_kwargs={"socket_connect_timeout": 5, "socket_timeout": 30})
            self.sentinels = list(sentinel.sentinels)
            self.client = sentinel.master_for(path[0], username=unquote(parts.username or "") or None,
                                              password=unquote(parts.password or "") or None,
                                              db=int(path[1]) if len(path) == 2 else 0,
                                              socket_timeout=30)
        elif scheme == "redis+cluster":
            from redis.cluster import ClusterNode, RedisCluster

            parts = urlsplit(url)
            nodes = []
            for item in parts.netloc.rpartition("@")[2].split(","):
                host, _, port = item.rpartition(":")
                nodes.append(ClusterNode(host or item, int(port) if host else 6379))  # type: ignore[no-untyped-call]
            self.client = RedisCluster(startup_nodes=nodes, username=unquote(parts.username or "") or None,
                                       password=unquote(parts.password or "") or None, socket_connect_timeout=5)
        else:
            from redis import Redis

            self.client = Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)

    def add(self, identities: Iterable[Identity], games: Iterable[Game]) -> int:
        entries_key, games_key = REDIS_KEYS
        pipe = self.client.pipeline(transaction=False)
        for i in identities:
            pipe.hsetnx(entries_key, i.id, json.dumps(i.to_json(), ensure_ascii=False))
        pipe.execute()
        added = 0
        batch = list(games)
        for start in range(0, len(batch), 1000):
            pipe = self.client.pipeline(transaction=False)
            for g in batch[start:start + 1000]:
                pipe.hsetnx(games_key, g.uid, json.dumps(g.to_json(), ensure_ascii=False))
            added += sum(1 for created in pipe.execute() if created)
        return added

    def _scan(self, key: str) -> Iterator[tuple[str, str]]:
        # HSCAN, not HGETALL: a big ladder is read in pieces, never blocking a shared Redis for long.
        for field_name, value in self.client.hscan_iter(key, count=1000):
            yield _text(field_name), _text(value)

    def identities(self) -> dict[str, Identity]:
        return {key: Identity.from_json(json.loads(value)) for key, value in self._scan(REDIS_KEYS[0])}

    def games(self) -> list[Game]:
        return [Game.from_json(json.loads(value)) for _, value in self._scan(REDIS_KEYS[1])]

    def close(self) -> None:
        self.client.close()
        for sentinel in self.sentinels:
            sentinel.close()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def default_location() -> str:
    """``$GOSTOP_LADDER``, else ``ladder.sqlite3`` in the user's data folder
    (``$XDG_DATA_HOME/gostop``, ``~/.local/share/gostop``)."""
    configured = os.environ.get(ENV, "").strip()
    if configured:
        return configured
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "gostop" / "ladder.sqlite3")


def is_redis(location: str) -> bool:
    return urlsplit(location).scheme.lower() in REDIS_SCHEMES


def open_store(location: str) -> Store:
    """The ladder at ``location``: a Redis URL (``redis://``, ``rediss://``, ``unix://``,
    ``redis+sentinel://``, ``redis+cluster://``) or the path of a SQLite file (created with its
    folder if missing)."""
    if is_redis(location):
        return RedisStore(location)
    return SqliteStore(Path(location).expanduser())


def record(store: Store, folders: Iterable[Folder]) -> int:
    """Record the games of ``folders`` in ``store``; the number of games that were new to it."""
    added = 0
    for folder in folders:
        added += store.add(folder.identities.values(), folder.games())
    return added


# ---------------------------------------------------------------------------- leaderboard


@dataclass
class Standing:
    """One entry on one table's leaderboard."""

    entry: Identity
    games: int = 0
    """Seats it played (a bot holding two seats of a round counts two)."""
    wins: int = 0
    draws: int = 0
    losses: int = 0
    mu: float = 0.0
    sigma: float = 0.0
    last: float = 0.0
    """When its last game ended (Unix time)."""

    @property
    def ordinal(self) -> float:
        """mu − 3·sigma: the conservative skill estimate the board is ranked by."""
        return self.mu - 3 * self.sigma

    @property
    def win_rate(self) -> float | None:
        decided = self.wins + self.losses
        return self.wins / decided if decided else None

    @property
    def win_ci(self) -> tuple[float, float]:
        return wilson(self.wins, self.wins + self.losses)


@dataclass
class Board:
    """The leaderboard of one preset and table size, and its ratings over time."""

    preset: str
    players: int
    games: int
    runs: int
    standings: list[Standing]
    """Best ordinal first, then by spec and entry id."""
    history: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    """Entry id -> (time, mu, sigma) after each of its games, in order."""


def leaderboard(identities: Mapping[str, Identity], games: Iterable[Game]) -> list[Board]:
    """Every table's leaderboard: its games rated in order (``Game.order``), one Plackett-Luce
    update per game, the seats ranked by points (ties share a rank); an entry holding several
    seats of a game gets the mean of their updates (as the tournament report does)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    by_table: dict[tuple[str, int], list[Game]] = defaultdict(list)
    for g in games:
        by_table[g.preset, g.players].append(g)
    boards = []
    for (preset, players), rows in sorted(by_table.items()):
        rows.sort(key=Game.order)
        standings: dict[str, Standing] = {}
        history: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        for g in rows:
            for seat, entry in enumerate(g.seats):
                if entry not in standings:
                    rating = model.rating()
                    standings[entry] = Standing(identities.get(entry) or Identity(f"? {entry}"),
                                                mu=rating.mu, sigma=rating.sigma)
                s = standings[entry]
                s.games += 1
                s.last = max(s.last, g.ended_at)
                if g.winner < 0:
                    s.draws += 1
                elif g.winner == seat:
                    s.wins += 1
                else:
                    s.losses += 1
            teams = [[model.rating(mu=standings[e].mu, sigma=standings[e].sigma)] for e in g.seats]
            ranks = [float(1 + sum(1 for q in g.points if q > p)) for p in g.points]
            updated = model.rate(teams, ranks=ranks)
            updates: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for entry, team in zip(g.seats, updated, strict=True):
                updates[entry].append((team[0].mu, team[0].sigma))
            for entry, ups in updates.items():
                s = standings[entry]
                s.mu = math.fsum(u[0] for u in ups) / len(ups)
                s.sigma = math.fsum(u[1] for u in ups) / len(ups)
                history[entry].append((g.ended_at, s.mu, s.sigma))
        ranked = sorted(standings.items(), key=lambda item: (-item[1].ordinal, item[1].entry.spec, item[0]))
        boards.append(Board(preset, players, len(rows), len({g.run_id for g in rows}),
                            [s for _, s in ranked], {entry: history[entry] for entry, _ in ranked}))
    return boards


def load_boards(store: Store) -> list[Board]:
    return leaderboard(store.identities(), store.games())


# ----------------------------------------------------------------------------- the table


_COLUMNS: Final = (  # header, right-aligned
    ("code", False), ("mu", True), ("sigma", True), ("ordinal", True), ("games", True), ("win %", True),
    ("(95% CI)", False), ("last", False),
)


def _pad(text: str, width: int, right: bool = False) -> str:
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def _cells(s: Standing) -> list[str]:
    rate, (lo, hi) = s.win_rate, s.win_ci
    return [s.entry.code, f"{s.mu:.2f}", f"{s.sigma:.2f}", f"{s.ordinal:.2f}", f"{s.games:,}",
            "-" if rate is None else f"{100 * rate:.1f}",
            "-" if rate is None else f"({100 * lo:.1f}-{100 * hi:.1f})",
            datetime.datetime.fromtimestamp(s.last, datetime.UTC).strftime("%Y-%m-%d")]


def _runs(n: int) -> str:
    return f"{n:,} run" if n == 1 else f"{n:,} runs"


def format_ladder(boards: Sequence[Board], location: str, width: int = WIDTH) -> str:
    """The leaderboards for the terminal, in ``width`` columns (wide characters count two): per
    table, its entries best first with their code version, rating (mu, sigma, ordinal), seats
    played, win rate over decided games (Wilson 95 % CI) and the day of their last game (UTC). A
    spec too long for the name column gets a line of its own, its figures on the next."""
    if not boards:
        return "\n".join(wrap(f"the ladder {location} holds no games yet: gostop tournament records every run "
                              "in it, gostop ladder --merge DIR... records result folders", width))
    games = sum(b.games for b in boards)
    entries = len({s.entry.id for b in boards for s in b.standings})
    lines = wrap(f"ladder {location}: {games:,} games, {entries:,} entries", width)
    for board in boards:
        rows = [(f"{n:>3} ", s.entry.spec, _cells(s)) for n, s in enumerate(board.standings, 1)]
        widths = [max(display_width(h), *(display_width(cells[i]) for _, _, cells in rows))
                  for i, (h, _) in enumerate(_COLUMNS)]
        room = width - 2 - 4 - sum(w + 1 for w in widths)
        name_width = max(3, min(room, max(display_width(name) for _, name, _ in rows)))

        def line(rank: str, name: str, cells: Sequence[str], name_width: int = name_width,
                 widths: Sequence[int] = widths) -> str:
            out = "  " + rank + _pad(name, name_width)
            for (_, right), w, cell in zip(_COLUMNS, widths, cells, strict=False):
                out += " " + _pad(cell, w, right)
            return out.rstrip()

        header = line("  # ", "bot", [h for h, _ in _COLUMNS])
        lines += ["", *wrap(f"{board.preset}, {board.players} players: {board.games:,} games in {_runs(board.runs)}",
                            width),
                  header, "  " + "-" * (display_width(header) - 2)]
        for rank, name, cells in rows:
            if display_width(name) > name_width:
                lines += [("  " + rank + name).rstrip(), line("    ", "", cells)]
            else:
                lines.append(line(rank, name, cells))
    return "\n".join(lines)


def plot_ladder(boards: Sequence[Board], path: Path) -> list[str]:
    """The ratings over time, one panel per table: each entry's mu after each of its games (a line
    over the days and hours its games ended) with mu ± 1.96 sigma shaded. The legend's labels, as
    drawn (spec and code version), panel by panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    families = ["DejaVu Sans", *(name for name in HANGUL_FONTS if name in installed)]
    drawn: list[str] = []
    with plt.rc_context({"font.family": families}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        fig, axes = plt.subplots(len(boards), 1, figsize=(11, 4.2 * len(boards)), squeeze=False)
        palette = plt.get_cmap("tab10")
        for ax, board in zip(axes[:, 0], boards, strict=True):
            for n, standing in enumerate(board.standings):
                points = board.history[standing.entry.id]
                step = max(1, math.ceil(len(points) / HISTORY_POINTS))
                kept = points[::step] if points[-1] in points[::step] else [*points[::step], points[-1]]
                when = [datetime.datetime.fromtimestamp(t, datetime.UTC) for t, _, _ in kept]
                mu = [m for _, m, _ in kept]
                color = palette(n % 10)
                label = f"{standing.entry.spec} ({standing.entry.code})"
                ax.plot(when, mu, color=color, label=label, marker="." if len(kept) < 30 else None)
                ax.fill_between(when, [m - 1.96 * s for _, m, s in kept],
                                [m + 1.96 * s for _, m, s in kept], color=color, alpha=0.15, linewidth=0)
            ax.set_title(f"{board.preset}, {board.players} players: {board.games:,} games in {_runs(board.runs)}")
            ax.set_ylabel("openskill mu (shaded: ± 1.96 sigma)")
            locator = ax.xaxis.get_major_locator()
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", fontsize=8)
            drawn += [text.get_text() for text in ax.get_legend().get_texts()]
        fig.suptitle("gostop ladder: ratings over time (UTC)")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return drawn


# ------------------------------------------------------------------------------- merging


def merge(paths: Sequence[Path], out: Path) -> tuple[list[Folder], dict[str, Any]]:
    """Merge tournament result folders (the shards of a tournament Job) into ``out``: one
    ``results.jsonl`` (every record with its run id and entries), ``bots.json``, a
    ``tournament.json`` naming the folders, and one report (``report.json``, ``.csv``, ``.png``)
    whose ``planned`` and ``done`` add up the folders'. The folders and the report."""
    folders = [read_folder(p) for p in paths]
    out.mkdir(parents=True, exist_ok=True)
    records = [r for f in folders for r in f.records]
    with (out / RESULTS).open("w", encoding="utf-8") as file:
        for r in records:
            file.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    save_identities(out, [i for f in folders for i in f.identities.values()])
    settings = {"merged": [{"folder": str(f.path), "run_id": f.run_id, "settings": f.settings} for f in folders]}
    (out / SETTINGS_JSON).write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    report = build_report(records)
    plans = [planned_keys(f.settings) if f.settings else None for f in folders]
    if all(p is not None for p in plans):
        planned = {(f.run_id, key) for f, keys in zip(folders, plans, strict=True) for key in keys or ()}
        report["planned"] = len(planned)
        report["done"] = len(planned & {(r["run_id"], r["key"]) for r in records})
    save_report(report, out)
    return folders, report


# --------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``gostop ladder`` flags."""
    parser.add_argument("--ladder", default=None, metavar="PATH|URL",
                        help=f"the ladder: a SQLite file or a redis:// URL (default: ${ENV}, else "
                             "~/.local/share/gostop/ladder.sqlite3)")
    parser.add_argument("--merge", nargs="+", type=Path, default=[], metavar="DIR",
                        help="tournament result folders (e.g. the shards of the tournament Job) to record "
                             "in the ladder and merge into one report")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder of the merged report (default: 'merged' beside the first --merge DIR)")
    parser.add_argument("--png", type=Path, default=None, metavar="FILE",
                        help="write a chart of the ratings over time")
    parser.add_argument("--preset", default=None, help="show only this preset")
    parser.add_argument("--players", type=int, default=None, help="show only this table size")


def _say(message: str) -> None:
    print("\n".join(wrap(message, WIDTH)), file=sys.stderr, flush=True)


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``gostop ladder``; its exit status (2: a usage error or a ladder that cannot be opened)."""
    location: str = args.ladder or default_location()
    off = location.strip().lower() == OFF
    if off and not args.merge:
        _say("gostop ladder: the ladder is off (--ladder off or GOSTOP_LADDER=off): nothing to show")
        return 2
    if args.merge:
        out: Path = args.out or args.merge[0].resolve().parent / "merged"
        if any(p.resolve() == out.resolve() for p in args.merge):
            _say(f"gostop ladder: --out {out} is one of the folders to merge")
            return 2
        try:
            folders, report = merge(args.merge, out)
        except (FileNotFoundError, ValueError, KeyError) as error:
            _say(f"gostop ladder: --merge: {error}")
            return 2
        print(format_report(report))
        print()
        folders_merged = f"{len(folders)} folder{'s' if len(folders) != 1 else ''} merged"
        print("\n".join(wrap(f"{folders_merged} into {out} ({RESULTS}, report.json, report.csv, {REPORT_PNG})",
                             WIDTH)))
    if off:
        return 0
    if not is_redis(location) and not args.merge and not Path(location).expanduser().exists():
        print(format_ladder([], location))
        return 0
    try:
        store = open_store(location)
    except Exception as error:  # a folder that cannot be made, a Redis that cannot be reached, a bad URL
        _say(f"gostop ladder: cannot open the ladder {_redacted(location)}: {error}")
        return 2
    try:
        if args.merge:
            added = record(store, folders)
            print("\n".join(wrap(f"{added:,} new games recorded in the ladder", WIDTH)))
            print()
        boards = [b for b in load_boards(store)
                  if (args.preset is None or b.preset == args.preset)
                  and (args.players is None or b.players == args.players)]
    finally:
        store.close()
    print(format_ladder(boards, store.location))
    if args.png is not None and boards:
        args.png.parent.mkdir(parents=True, exist_ok=True)
        plot_ladder(boards, args.png)
        print("\n".join(wrap(f"ratings over time: {args.png}", WIDTH)))
    return 0


def record_tournament(out: Path, location: str | None) -> str:
    """Record the tournament folder ``out`` in the ladder at ``location`` (None: the default; "off":
    none), for ``gostop tournament``: what to tell the user, in one sentence."""
    location = location or default_location()
    if location.strip().lower() == OFF:
        return ""
    started = time.monotonic()
    try:
        store = open_store(location)
        try:
            added = record(store, [read_folder(out)])
        finally:
            store.close()
    except Exception as error:  # the tournament's results are safe in results.jsonl whatever happens here
        return (f"ladder: could not record the games in {_redacted(location)} ({type(error).__name__}: {error}); "
                f"they stay in {out / RESULTS}: gostop ladder --merge {out} --ladder ... records them later")
    return (f"ladder: {added:,} new games recorded in {store.location} in {time.monotonic() - started:.1f} s "
            "(gostop ladder shows the ratings)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gostop ladder", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
