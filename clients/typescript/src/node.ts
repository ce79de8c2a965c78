// The package's Node entry, `@gostop/client/node`: everything of `@gostop/client`, and a
// GostopClient that reaches the service by address over Node's own HTTP stacks
// (@connectrpc/connect-node) with the gRPC protocol over HTTP/2 (the default: the service's gRPC
// port), or the Connect protocol or gRPC-Web over HTTP/1.1 or HTTP/2 (its HTTP port). The client
// owns its connections: leaving a watch early cancels the stream, and close() ends everything,
// so a program exits by itself once it is done.

import * as http from "node:http";
import type * as http2 from "node:http2";
import * as https from "node:https";

import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";

import { CLIENT_CLOSED, GostopClient as TransportClient, type CommonClientOptions } from "./core.js";

export * from "./index.js";

/** The protocols of the Node client: "grpc" for the service's gRPC port, the others for its HTTP port. */
export type NodeProtocol = "grpc" | "connect" | "grpc-web";

export interface NodeClientOptions extends CommonClientOptions {
  /** "host:port" (plaintext), or a URL: "http://host:port", "https://host:port" (TLS). */
  address: string;
  /** "grpc" (the default; the gRPC port), "connect" or "grpc-web" (the HTTP port). */
  protocol?: NodeProtocol;
  /** HTTP version of the Connect and gRPC-Web protocols: "1.1" (the default, as browsers use) or "2"; gRPC is always "2". */
  httpVersion?: "1.1" | "2";
  /** Binary protobuf (the default) or, when false, JSON (Connect protocol only). */
  useBinaryFormat?: boolean;
}

/** Also the option type of the Node GostopClient under its earlier name. */
export type ClientOptions = NodeClientOptions;

function baseUrl(address: string): string {
  return /^[a-z]+:\/\//i.test(address) ? address : `http://${address}`;
}

/**
 * Connect's manager of the transport's HTTP/2 connection, made closable: once `close()` is
 * called it refuses every request, where the plain manager would open a new connection for it
 * (also for a request that was on its way when the connection was closed).
 */
class ClosableSessionManager extends Http2SessionManager {
  private isClosed = false;

  override async request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, "signal">,
  ): Promise<http2.ClientHttp2Stream> {
    if (this.isClosed) {
      throw new ConnectError(CLIENT_CLOSED, Code.Canceled);
    }
    const stream = await super.request(method, path, headers, options);
    if (this.isClosed) {
      // close() ran while this request was waiting for a connection: end the one it opened
      // (the stream, destroyed with it, has no other listener for its error).
      stream.on("error", () => undefined);
      this.abort(new ConnectError(CLIENT_CLOSED, Code.Canceled));
      throw new ConnectError(CLIENT_CLOSED, Code.Canceled);
    }
    return stream;
  }

  /** Closes the connection(s) and their streams for good. */
  close(): void {
    this.isClosed = true;
    this.abort(new ConnectError(CLIENT_CLOSED, Code.Canceled));
  }
}

/** A transport of Node's HTTP stacks and how to close its connections. */
export interface NodeConnection {
  transport: Transport;
  /** Closes its connections for good (HTTP/2 sessions, or the HTTP/1.1 agent's sockets). */
  close(): void;
}

/** The transport of `options` on connections of its own, which `close()` ends. */
export function createNodeConnection(options: Omit<NodeClientOptions, keyof CommonClientOptions>): NodeConnection {
  const url = baseUrl(options.address);
  const protocol = options.protocol ?? "grpc";
  const useBinaryFormat = options.useBinaryFormat ?? true;
  // Checked here too: the options may come from a command line or the environment.
  if (!["grpc", "connect", "grpc-web"].includes(protocol)) {
    throw new Error(`unknown protocol ${String(protocol)}: "grpc", "connect" or "grpc-web"`);
  }
  if (options.httpVersion !== undefined && !["1.1", "2"].includes(options.httpVersion)) {
    throw new Error(`unknown HTTP version ${String(options.httpVersion)}: "1.1" or "2"`);
  }
  if (protocol === "grpc" && options.httpVersion === "1.1") {
    throw new Error("gRPC needs HTTP/2: no httpVersion \"1.1\" with protocol \"grpc\"");
  }
  if (protocol === "grpc" || options.httpVersion === "2") {
    const sessions = new ClosableSessionManager(url);
    const common = { baseUrl: url, httpVersion: "2" as const, sessionManager: sessions };
    const transport =
      protocol === "grpc"
        ? createGrpcTransport(common)
        : protocol === "connect"
          ? createConnectTransport({ ...common, useBinaryFormat })
          : createGrpcWebTransport({ ...common, useBinaryFormat });
    return { transport, close: () => sessions.close() };
  }
  // HTTP/1.1: the client's own keep-alive agent, whose sockets close() destroys.
  const agent = url.startsWith("https:") ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  const common = { baseUrl: url, httpVersion: "1.1" as const, nodeOptions: { agent }, useBinaryFormat };
  const transport = protocol === "connect" ? createConnectTransport(common) : createGrpcWebTransport(common);
  return { transport, close: () => agent.destroy() };
}

/**
 * A gostop.v1.GameService client for Node, by address; one connection (HTTP/2) or a keep-alive
 * pool (HTTP/1.1) shared by every call. An idle connection does not keep Node running, an open
 * call or watch does: leave watches by `break` (or return, throw) and call `close()` when done.
 *
 *     const client = new GostopClient({ address: "127.0.0.1:50051" });                        // gRPC
 *     const web = new GostopClient({ address: "http://127.0.0.1:8080", protocol: "connect" }); // Connect
 */
export class GostopClient extends TransportClient {
  /** The client's connections, kept so that close() can end them. */
  private readonly connection: NodeConnection;

  constructor(options: NodeClientOptions) {
    const connection = createNodeConnection(options);
    super({
      transport: connection.transport,
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    this.connection = connection;
  }

  /**
   * Closes the client: aborts its open watches and calls and closes its connection(s), so
   * nothing of it keeps Node running. Every call afterwards, and every call or watch that was
   * open, fails with a GostopError CANCELLED whose message is CLIENT_CLOSED. Calling it again
   * does nothing.
   */
  override close(): void {
    if (this.closed) {
      return;
    }
    super.close();
    this.connection.close();
  }
}
