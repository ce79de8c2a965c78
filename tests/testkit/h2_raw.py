"""A raw HTTP/2 gRPC client for the hostile-input tests: it sends header bytes that no gRPC library
would send (non-ASCII values, oversized numbers) and requests that stop half-way through a message,
and reports what the server answered (status, message, ``ErrorInfo`` reason) or that it closed the
connection."""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from urllib.parse import unquote

import h2.config
import h2.connection
import h2.events
from google.rpc import error_details_pb2, status_pb2

from gostop.v1 import game_pb2 as pb


@dataclass
class RawReply:
    """What came back on one stream: the gRPC status and message, and the ``ErrorInfo`` reason."""

    status: int | None = None
    message: str = ""
    reason: str = ""
    headers: dict[bytes, bytes] = field(default_factory=dict)
    reset: bool = False


def frame(message: bytes) -> bytes:
    """A gRPC length-prefixed message (uncompressed)."""
    return struct.pack(">BI", 0, len(message)) + message


class RawConnection:
    """One HTTP/2 connection to a gRPC server on loopback."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        config = h2.config.H2Configuration(client_side=True, header_encoding=None,
                                           validate_outbound_headers=False, normalize_outbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        self._flush()
        self.closed = False

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def start(self, method: str, extra: list[tuple[bytes, bytes]], port: int) -> int:
        """Open a stream for ``method`` with the extra header bytes; its stream id."""
        stream = self.conn.get_next_available_stream_id()
        headers = [
            (b":method", b"POST"), (b":scheme", b"http"), (b":path", f"/gostop.v1.GameService/{method}".encode()),
            (b":authority", f"127.0.0.1:{port}".encode()), (b"content-type", b"application/grpc"),
            (b"te", b"trailers"), *extra,
        ]
        self.conn.send_headers(stream, headers)
        self._flush()
        return stream

    def send(self, stream: int, data: bytes, end: bool) -> None:
        self.conn.send_data(stream, data, end_stream=end)
        self._flush()

    def call(self, method: str, request: bytes, extra: list[tuple[bytes, bytes]], port: int) -> RawReply:
        """One unary call: the whole request, then the reply."""
        stream = self.start(method, extra, port)
        self.send(stream, frame(request), end=True)
        return self.reply(stream)

    def reply(self, stream: int) -> RawReply:
        out = RawReply()
        while True:
            data = self.sock.recv(65536)
            if not data:
                self.closed = True
                return out
            for event in self.conn.receive_data(data):
                if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)) \
                        and event.stream_id == stream:
                    out.headers.update(dict(event.headers))
                elif isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                    out.reset = True
                    return out
                if isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    self._flush()
                    return _status(out)
            self._flush()

    def wait_closed(self, timeout: float) -> bool:
        """Read until the server closes the connection (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return True
            if not data:
                return True
            try:
                self.conn.receive_data(data)
                self._flush()
            except Exception:  # a protocol error after GOAWAY also ends the connection
                return True
        return False

    def close(self) -> None:
        self.sock.close()


def _status(out: RawReply) -> RawReply:
    status = out.headers.get(b"grpc-status")
    out.status = int(status) if status is not None else None
    out.message = unquote(out.headers.get(b"grpc-message", b"").decode("utf-8", "replace"))
    details = out.headers.get(b"grpc-status-details-bin")
    if details:
        import base64

        st = status_pb2.Status.FromString(base64.b64decode(details + b"=" * (-len(details) % 4)))
        for detail in st.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                out.reason = info.reason
    return out


def raw_call(port: int, method: str, request: bytes, extra: list[tuple[bytes, bytes]]) -> RawReply:
    """One unary call on a fresh connection."""
    conn = RawConnection(port)
    try:
        return conn.call(method, request, extra, port)
    finally:
        conn.close()


def get_game(game_id: str) -> bytes:
    return pb.GetGameRequest(game_id=game_id).SerializeToString()
