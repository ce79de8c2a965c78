"""What a transport sends for a service error: the one mapping of ``errors.Code`` to gRPC's and
Connect's codes, each error carrying a ``google.rpc.ErrorInfo`` (reason, domain ``gostop.v1``,
metadata) in its details."""

from __future__ import annotations

import grpc
from connectrpc.code import Code as ConnectCode
from connectrpc.errors import ConnectError, ErrorDetail
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from protobuf.wkt import Any as ConnectAny

from .errors import DOMAIN, Code, ServiceError

_GRPC = {code: grpc.StatusCode[code.name] for code in Code}
_CONNECT = {code.name: code for code in ConnectCode}
_CONNECT["CANCELLED"] = ConnectCode.CANCELED


def grpc_code(code: Code) -> grpc.StatusCode:
    return _GRPC[code]


def connect_code(code: Code) -> ConnectCode:
    return _CONNECT.get(code.name, ConnectCode.UNKNOWN)


def error_info(err: ServiceError) -> error_details_pb2.ErrorInfo:
    return error_details_pb2.ErrorInfo(reason=err.reason, domain=DOMAIN, metadata=err.metadata)


def grpc_status(err: ServiceError) -> grpc.Status:
    """The gRPC status (with ``google.rpc.Status`` details) of a service error."""
    detail = any_pb2.Any()
    detail.Pack(error_info(err))
    status = status_pb2.Status(code=err.code.value, message=err.message, details=[detail])
    return rpc_status.to_status(status)


def connect_error(err: ServiceError) -> ConnectError:
    """The Connect error of a service error: its code, its message, and its ``ErrorInfo``."""
    info = error_info(err)
    detail = ConnectAny(type_url="type.googleapis.com/google.rpc.ErrorInfo", value=info.SerializeToString())
    return ConnectError(connect_code(err.code), err.message, [ErrorDetail(detail)])
