"""The web table under a real browser: a ``gostop serve`` process with its HTTP port (the page and
the Connect API), Debian's chromium for Playwright (never a browser of Playwright's own), and
what the page received from the server, decoded, for the secrecy checks.

Used by tests/web and by bench/web.py (the page's first load).
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from gostop.v1 import game_pb2 as pb
from testkit.redis_server import free_port
from testkit.servers import OPERATOR_KEY, ROOT, SECRET

WEB_ROOT = ROOT / "clients" / "python" / "gostop" / "web"
"""Where ``make web`` writes the built page (the package data the server serves at "/")."""

MARKER = 'id="app"'
"""A line of the built page's index.html (the server's not-built page lacks it)."""


def chromium() -> str | None:
    """Debian's chromium (``make chromium`` installs it), if it is installed."""
    return shutil.which("chromium")


def page_built() -> bool:
    return (WEB_ROOT / "index.html").is_file()


@dataclass
class WebServer:
    """``python -m gostop serve`` with its HTTP port, as a separate process (memory store: it plays
    bot seats itself)."""

    process: subprocess.Popen[bytes]
    grpc_port: int
    http_port: int
    log_path: Path
    output: str = field(default="")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/"

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        if self.log_path.exists():
            self.output = self.log_path.read_text(errors="replace")
        return self.output

    def stop(self) -> None:
        """SIGTERM (a graceful stop), then SIGKILL if it takes too long."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.log()
        self.log_path.unlink(missing_ok=True)


def start_web_server(*, operator_key: bool = False, startup: float = 60.0, **env: str) -> WebServer:
    """A server on free loopback ports; waits until "/" serves the built page. With
    ``operator_key`` it accepts ``testkit.servers.OPERATOR_KEY`` (explicit deals, full logs); without
    it, creating a game needs no key (as with ``make run``)."""
    grpc_port, http_port = free_port(), free_port()
    handle, name = tempfile.mkstemp(prefix="gostop-web-", suffix=".log")
    os.close(handle)
    variables = {
        **os.environ,
        "GOSTOP_TOKEN_SECRET": SECRET,
        "GOSTOP_LOG_FORMAT": "json",
        "GOSTOP_REDIS_URL": "",
        "PYTHONPATH": str(ROOT),
        "GOSTOP_OPERATOR_KEYS": OPERATOR_KEY if operator_key else "",
        "GOSTOP_API_KEYS": "",
        **env,
    }
    with open(name, "wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "gostop", "serve", "--listen", f"127.0.0.1:{grpc_port}",
             "--http-listen", f"127.0.0.1:{http_port}", "--metrics-port", "0"],
            cwd=ROOT, env=variables, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
        )
    server = WebServer(process, grpc_port, http_port, Path(name))
    deadline = time.monotonic() + startup
    while True:
        if process.poll() is not None:
            server.stop()
            raise AssertionError(f"the server exited with {process.returncode}:\n{server.output}")
        try:
            with urllib.request.urlopen(server.url, timeout=2) as response:
                if MARKER in response.read().decode("utf-8", "replace"):
                    return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise AssertionError(f"the server did not serve the web table:\n{server.output}")
        time.sleep(0.1)


# ------------------------------------------------------------------ what the page received

CAPTURE_SCRIPT = """
(() => {
  // Every response of the game API the page receives, byte for byte (streams too), kept in
  // window.__gostopReceived as base64 chunks; the page gets the same bytes through a tee.
  const original = window.fetch.bind(window);
  const received = [];
  window.__gostopReceived = received;
  const b64 = (bytes) => {
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(s);
  };
  window.fetch = async (input, init) => {
    const response = await original(input, init);
    const url = typeof input === "string" ? input : (input instanceof URL ? input.href : input.url);
    if (!url.includes("/gostop.v1.GameService/") || response.body === null) return response;
    const entry = { url, status: response.status, type: response.headers.get("content-type") || "", chunks: [] };
    received.push(entry);
    const [mine, theirs] = response.body.tee();
    (async () => {
      const reader = theirs.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          entry.chunks.push(b64(value));
        }
      } catch (e) {
        entry.error = String(e);
      }
    })();
    return new Response(mine, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
})();
"""
"""An init script (Playwright ``add_init_script``) that records every API response the page gets."""

RESPONSES: dict[str, type[Message]] = {
    "ListRuleSets": pb.ListRuleSetsResponse,
    "CreateGame": pb.CreateGameResponse,
    "GetGame": pb.GetGameResponse,
    "SubmitAction": pb.SubmitActionResponse,
    "StartNextRound": pb.StartNextRoundResponse,
    "WatchGame": pb.WatchGameResponse,
    "GetGameLog": pb.GetGameLogResponse,
}


@dataclass
class Received:
    """One response message the page received."""

    method: str
    message: Message


def _envelopes(body: bytes) -> Iterator[tuple[int, bytes]]:
    """The (flags, payload) frames of a Connect or gRPC-Web stream body."""
    at = 0
    while at + 5 <= len(body):
        flags, size = body[at], int.from_bytes(body[at + 1:at + 5], "big")
        if at + 5 + size > len(body):
            return  # a stream cut mid-frame: the page never got this message
        yield flags, body[at + 5:at + 5 + size]
        at += 5 + size


def decode_received(entries: list[dict[str, Any]]) -> list[Received]:
    """The messages of the responses ``CAPTURE_SCRIPT`` recorded (errors and end-of-stream frames skipped)."""
    out: list[Received] = []
    for entry in entries:
        method = str(entry["url"]).split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        kind = RESPONSES.get(method)
        if kind is None or int(entry["status"]) != 200:
            continue
        body = b"".join(base64.b64decode(chunk) for chunk in entry["chunks"])
        content_type = str(entry["type"]).split(";")[0].strip()
        json_body = content_type.endswith("json")
        if content_type in ("application/proto", "application/json"):
            frames: list[bytes] = [body]
        else:  # application/connect+proto, application/grpc-web+proto (and +json): enveloped
            frames = [payload for flags, payload in _envelopes(body) if not flags & 0x82]
        for payload in frames:
            message = kind()
            if json_body:
                json_format.Parse(payload.decode(), message)
            else:
                message.ParseFromString(payload)
            out.append(Received(method, message))
    return out


CARD_FIELDS = frozenset({"card", "cards", "hand", "floor", "revealed", "captured", "options", "played", "flipped",
                         "held", "taken", "takes", "replacement", "stock"})
"""The fields of the API's messages that hold card ids."""

COUNTS: dict[str, frozenset[str]] = {"SetReach": frozenset({"captured", "open"})}
"""Fields named like card fields that hold counts, by message."""


def cards_in(message: Message) -> set[int]:
    """Every card id (≥ 0) anywhere in ``message``."""
    found: set[int] = set()
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None:
            items = value if descriptor.is_repeated else [value]
            for item in items:
                if isinstance(item, Message):
                    found |= cards_in(item)
        elif descriptor.name in CARD_FIELDS and descriptor.name not in COUNTS.get(message.DESCRIPTOR.name, ()):
            values = value if descriptor.is_repeated else [value]
            found |= {int(v) for v in values if int(v) >= 0}
    return found


# ------------------------------------------------------------------ a connection that can be lost


class DroppingProxy:
    """A loopback TCP proxy in front of the server's HTTP port whose open connections the test can
    cut (``drop``) while it goes on accepting new ones: the page loses its connection for real
    (its event stream breaks mid-response), as on a flaky network, and may reconnect at once."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        self.dropped = 0
        threading.Thread(target=self._accept, name="dropping-proxy", daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._open |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                self._forget(sock)

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    def drop(self) -> int:
        """Cut every open connection (both ends, at once); how many there were."""
        with self._lock:
            victims = list(self._open)
        for sock in victims:
            self._forget(sock)
        self.dropped += len(victims)
        return len(victims)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._listener.close()
        self.drop()
