// The package's main entry, `@gostop/client`: the browser-safe client (core.ts) and
// createBrowserClient(), which reaches the service's HTTP port with the Connect protocol or
// gRPC-Web through `fetch` (@connectrpc/connect-web). It runs in browsers, and also in Node ≥ 20
// and other runtimes that have `fetch`; Node programs that want gRPC over HTTP/2, or connections
// that close() ends, import `@gostop/client/node` instead.
//
// No Node module is reachable from here (tests/contract/test_ts_package.py bundles this entry for
// browsers and fails on any `node:` import).

import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";

import { GostopClient, type CommonClientOptions } from "./core.js";

export * from "./core.js";

/** The protocols a browser can speak to the service's HTTP port. */
export type WebProtocol = "connect" | "grpc-web";

export interface BrowserTransportOptions {
  /**
   * The service's HTTP address, e.g. "http://127.0.0.1:8080" (where `gostop serve --http-listen`
   * listens). Default: the page's own origin, for a page served by the service itself.
   */
  baseUrl?: string;
  /** "connect" (the default) or "grpc-web". */
  protocol?: WebProtocol;
  /** Binary protobuf (the default) or, when false, JSON (Connect protocol only: readable in devtools). */
  useBinaryFormat?: boolean;
  /** Connect GET for side-effect-free methods (Connect protocol only; default false). */
  useHttpGet?: boolean;
  /** A fetch of your own, e.g. one that sets `credentials` (default: globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
  /** Connect interceptors run on every call. */
  interceptors?: Interceptor[];
}

export interface BrowserClientOptions extends BrowserTransportOptions, CommonClientOptions {}

/** The page's origin, when there is a page. */
function pageOrigin(): string | undefined {
  const location = (globalThis as { location?: { origin?: unknown } }).location;
  return typeof location?.origin === "string" && location.origin !== "null" ? location.origin : undefined;
}

/** A fetch-based Connect transport to the service's HTTP port (Connect protocol or gRPC-Web). */
export function createBrowserTransport(options: BrowserTransportOptions = {}): Transport {
  const baseUrl = options.baseUrl ?? pageOrigin();
  if (baseUrl === undefined) {
    throw new Error("createBrowserClient: no baseUrl, and no page whose origin it could default to");
  }
  const common = {
    baseUrl,
    useBinaryFormat: options.useBinaryFormat ?? true,
    ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
    ...(options.interceptors !== undefined ? { interceptors: options.interceptors } : {}),
  };
  const protocol = options.protocol ?? "connect";
  switch (protocol) {
    case "connect":
      return createConnectTransport({ ...common, useHttpGet: options.useHttpGet ?? false });
    case "grpc-web":
      return createGrpcWebTransport(common);
    default:
      throw new Error(`unknown protocol ${String(protocol)}: "connect" or "grpc-web"`);
  }
}

/**
 * A client of the service's HTTP port for browsers (and any runtime with fetch):
 *
 *     const client = createBrowserClient({ baseUrl: "http://127.0.0.1:8080" });
 *     const { gameId, seats } = await client.createGame({ preset: "standard", players: 2 });
 *
 * `close()` aborts the client's open calls and watches and refuses later calls.
 */
export function createBrowserClient(options: BrowserClientOptions = {}): GostopClient {
  return new GostopClient({
    transport: createBrowserTransport(options),
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
}
