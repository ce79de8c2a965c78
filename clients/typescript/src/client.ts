// A small typed wrapper over the generated gostop.v1.GameService client (protobuf-es + Connect,
// gRPC protocol over HTTP/2). It adds what every caller needs: credentials in metadata (the seat
// token as "authorization: Bearer <token>", API/operator keys as "x-api-key"), a deadline on
// every call, request ids for idempotent retries, the optimistic-concurrency version, paging of
// the game log and errors typed by their google.rpc.ErrorInfo reason. It also owns its HTTP/2
// connection: leaving a watch early cancels the stream, and close() ends everything, so a program
// exits by itself once it is done.

import { randomUUID } from "node:crypto";
import type * as http2 from "node:http2";

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import {
  ActionSchema,
  CreateGameRequestSchema,
  GameService,
  type Action,
  type CreateGameResponse,
  type Deal,
  type GetGameLogResponse,
  type GetGameResponse,
  type LogEntry,
  type RuleSet,
  type Rules,
  type TurnResult,
  type WatchGameResponse,
} from "./gen/gostop/v1/game_pb.js";

export * from "./gen/gostop/v1/game_pb.js";
export { Code } from "@connectrpc/connect";

/** The ErrorInfo domain of every error of the service. */
export const ERROR_DOMAIN = "gostop.v1";

/** The stable ErrorInfo reasons of the service (docs/service.md, "Errors"). */
export type Reason =
  | "MALFORMED_GAME_ID"
  | "MISSING_PRESET"
  | "UNKNOWN_PRESET"
  | "INVALID_RULES"
  | "INVALID_DEAL"
  | "BAD_ROUNDS"
  | "MISSING_ACTION"
  | "MALFORMED_ACTION"
  | "MALFORMED_REQUEST"
  | "REQUEST_ID_TOO_LONG"
  | "REQUEST_ID_REUSED"
  | "BAD_VERSION"
  | "BAD_CREDENTIALS"
  | "WRONG_GAME"
  | "OPERATOR_ONLY"
  | "LOG_NOT_AVAILABLE"
  | "GAME_NOT_FOUND"
  | "NOT_YOUR_TURN"
  | "ILLEGAL_ACTION"
  | "ROUND_OVER"
  | "ROUND_IN_PROGRESS"
  | "GAME_TOO_LONG"
  | "STALE_VERSION"
  | "STORE_UNAVAILABLE"
  | "STORE_TIMEOUT"
  | "SHUTTING_DOWN"
  | "VERSION_AHEAD"
  | "TOO_MANY_STREAMS"
  | "MATCH_TOTAL_LIMIT"
  | "SNAPSHOT_CORRUPT"
  | "INTERNAL"
  | "ID_EXHAUSTED";

/**
 * A failed call: the gRPC code, the message and the ErrorInfo of the status details. `reason` is
 * "" when the failure did not come from the service (a deadline, a refused connection…).
 */
export class GostopError extends Error {
  override readonly name = "GostopError";

  constructor(
    readonly code: Code,
    readonly rawMessage: string,
    readonly reason: Reason | "",
    readonly domain: string,
    readonly metadata: Readonly<Record<string, string>>,
    options?: { cause?: unknown },
  ) {
    super(`${Code[code] ?? code}${reason ? ` ${reason}` : ""}: ${rawMessage}`, options);
  }

  /** The error of a failed call; anything that is not a ConnectError is wrapped as UNKNOWN. */
  static from(error: unknown): GostopError {
    if (error instanceof GostopError) {
      return error;
    }
    const ce = ConnectError.from(error);
    const info = ce.findDetails(ErrorInfoSchema)[0];
    return new GostopError(
      ce.code,
      ce.rawMessage,
      (info?.reason ?? "") as Reason | "",
      info?.domain ?? "",
      { ...(info?.metadata ?? {}) },
      { cause: error },
    );
  }

  /** Whether a retry with the same request id may succeed (the store was unavailable). */
  get retryable(): boolean {
    return this.code === Code.Unavailable;
  }
}

/**
 * The message of the error of every call made through a closed client (code CANCELLED, no
 * reason): calls after `close()`, and calls and watches that were open when it was called.
 */
export const CLIENT_CLOSED = "client closed: GostopClient.close() was called";

function closedError(cause?: unknown): GostopError {
  return new GostopError(Code.Canceled, CLIENT_CLOSED, "", "", {}, cause === undefined ? undefined : { cause });
}

/** A new request id: safe to reuse for retries of the same call, unique otherwise. */
export function newRequestId(prefix = "ts"): string {
  return `${prefix}-${randomUUID()}`;
}

/**
 * The stable integer id of a structured action (the `id` of a LegalAction; the engine's table):
 * PlayCard c → c, with shake 64 + c; Bomb m → 128 + m; FlipOnly 150; ChooseCapture c → 160 + c;
 * KeepGukjin 220; ConvertGukjin 221; Go 230; Stop 231; JoinRound 240; SitOut 241;
 * DeclineGwangSale 250; SellGwang 251.
 */
export function actionId(action: Action): number {
  const kind = action.kind;
  switch (kind.case) {
    case "playCard":
      return kind.value.card + (kind.value.shake ? 64 : 0);
    case "bomb":
      return 128 + kind.value.month;
    case "flipOnly":
      return 150;
    case "chooseCapture":
      return 160 + kind.value.card;
    case "keepGukjin":
      return 220;
    case "convertGukjin":
      return 221;
    case "go":
      return 230;
    case "stop":
      return 231;
    case "joinRound":
      return 240;
    case "sitOut":
      return 241;
    case "declineGwangSale":
      return 250;
    case "sellGwang":
      return 251;
    case undefined:
      throw new Error("empty action");
  }
}

export interface ClientOptions {
  /** "host:port" (plaintext), or a URL: "http://host:port", "https://host:port" (TLS). */
  address: string;
  /** An API or operator key, sent as x-api-key on every call. */
  apiKey?: string;
  /** Deadline of each unary call in milliseconds (default 10 s); streams have none by default. */
  timeoutMs?: number;
}

/** Credentials and deadline of one call. */
export interface CallAuth {
  /** A seat token: the call acts as that seat. Without one it acts as a spectator/key holder. */
  token?: string;
  /** Overrides the client's deadline for this call (milliseconds). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface SubmitActionArgs extends CallAuth {
  gameId: string;
  token: string;
  /** The version the action was chosen at (the version of the view holding the legal action). */
  expectedVersion: bigint | number;
  /** A LegalAction id, or a structured action. */
  action: number | Action | MessageInitShape<typeof ActionSchema>;
  /** Idempotency key; a fresh one is drawn when absent. Reuse it to retry the same call. */
  requestId?: string;
}

export interface StartNextRoundArgs extends CallAuth {
  gameId: string;
  token: string;
  expectedVersion: bigint | number;
  requestId?: string;
}

/** The whole log of a game, read page by page. */
export interface GameLog {
  entries: LogEntry[];
  rules: Rules | undefined;
  seed: bigint;
  rounds: number;
  deal: Deal | undefined;
  version: bigint;
}

const DEFAULT_TIMEOUT_MS = 10_000;

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

/**
 * A gostop.v1.GameService client; one HTTP/2 connection shared by every call. An idle connection
 * does not keep Node running, an open call or watch does: leave watches by `break` (or return,
 * throw) and call `close()` when done.
 */
export class GostopClient {
  /** The generated Connect client, for anything the wrapper does not cover (also closed by close()). */
  readonly raw: Client<typeof GameService>;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  /** The transport's HTTP/2 connection(s), kept so that close() can end them. */
  private readonly sessions: ClosableSessionManager;
  /** One controller per open watch: close() aborts them. */
  private readonly watches = new Set<AbortController>();
  private isClosed = false;

  constructor(options: ClientOptions) {
    const url = baseUrl(options.address);
    this.sessions = new ClosableSessionManager(url);
    const transport = createGrpcTransport({ baseUrl: url, sessionManager: this.sessions });
    this.raw = createClient(GameService, transport);
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Closes the client: aborts its open watches and unary calls and closes its HTTP/2
   * connection(s), so nothing of it keeps Node running. Every call afterwards, and every call
   * or watch that was open, fails with a GostopError CANCELLED whose message is CLIENT_CLOSED.
   * Calling it again does nothing.
   */
  close(): void {
    if (this.isClosed) {
      return;
    }
    this.isClosed = true;
    for (const watch of this.watches) {
      watch.abort(closedError());
    }
    this.watches.clear();
    this.sessions.close();
  }

  private ensureOpen(): void {
    if (this.isClosed) {
      throw closedError();
    }
  }

  /** The error of a failed call: the closed-client error once close() was called, since that is why it failed. */
  private failure(error: unknown): GostopError {
    return this.isClosed ? closedError(error) : GostopError.from(error);
  }

  private options(auth: CallAuth | undefined, stream = false): CallOptions {
    const headers: Record<string, string> = {};
    if (auth?.token) {
      headers["authorization"] = `Bearer ${auth.token}`;
    }
    if (this.apiKey) {
      headers["x-api-key"] = this.apiKey;
    }
    const timeoutMs = auth?.timeoutMs ?? (stream ? undefined : this.timeoutMs);
    return {
      headers,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(auth?.signal !== undefined ? { signal: auth.signal } : {}),
    };
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    this.ensureOpen();
    try {
      return await run();
    } catch (error) {
      throw this.failure(error);
    }
  }

  /** Every preset at every player count it supports. */
  async listRuleSets(auth?: CallAuth): Promise<RuleSet[]> {
    const response = await this.call(() => this.raw.listRuleSets({}, this.options(auth)));
    return response.ruleSets;
  }

  /** Deals the first round of a new match: its id, one token per seat, version 1. */
  async createGame(
    request: MessageInitShape<typeof CreateGameRequestSchema>,
    auth?: CallAuth,
  ): Promise<CreateGameResponse> {
    return this.call(() => this.raw.createGame(create(CreateGameRequestSchema, request), this.options(auth)));
  }

  /** The caller's view (with its legal actions when it is to move) and the current version. */
  async getGame(gameId: string, auth?: CallAuth): Promise<GetGameResponse> {
    return this.call(() => this.raw.getGame({ gameId }, this.options(auth)));
  }

  /** Applies one action of the token's seat at `expectedVersion`, at most once per request id. */
  async submitAction(args: SubmitActionArgs): Promise<TurnResult> {
    const action =
      typeof args.action === "number"
        ? { case: "actionId" as const, value: args.action }
        : { case: "structured" as const, value: create(ActionSchema, args.action) };
    const response = await this.call(() =>
      this.raw.submitAction(
        {
          gameId: args.gameId,
          expectedVersion: BigInt(args.expectedVersion),
          requestId: args.requestId ?? newRequestId(),
          action,
        },
        this.options(args),
      ),
    );
    if (response.result === undefined) {
      throw new Error("SubmitAction returned no result");
    }
    return response.result;
  }

  /** Deals the next round of a match once the current round is over. */
  async startNextRound(args: StartNextRoundArgs): Promise<TurnResult> {
    const response = await this.call(() =>
      this.raw.startNextRound(
        {
          gameId: args.gameId,
          expectedVersion: BigInt(args.expectedVersion),
          requestId: args.requestId ?? newRequestId(),
        },
        this.options(args),
      ),
    );
    if (response.result === undefined) {
      throw new Error("StartNextRound returned no result");
    }
    return response.result;
  }

  /**
   * The caller's redacted events of every version after `afterVersion` (0: the whole game), as
   * they are committed; the stream ends after the event that finishes the match. To resume after
   * a broken stream, call again with the last version received.
   *
   * The stream opens at the first `next()` (the first turn of a `for await`). Leaving the loop
   * early — `break`, `return` or a throw in its body, or `return()` on the iterator — cancels
   * it on the server and releases the connection, so Node can exit. `auth.signal` and
   * `close()` abort it too: the loop then throws a GostopError CANCELLED.
   */
  async *watch(
    gameId: string,
    auth?: CallAuth & { afterVersion?: bigint | number },
  ): AsyncGenerator<WatchGameResponse, void, undefined> {
    this.ensureOpen();
    // Connect's stream iterable has no return(): leaving a for-await over it early would leave
    // the HTTP/2 stream open (and Node running) until the match ends. The stream gets a signal
    // of its own instead, aborted in `finally` whichever way this generator ends.
    const controller = new AbortController();
    const outer = auth?.signal;
    const forward = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) {
      forward();
    } else {
      outer?.addEventListener("abort", forward, { once: true });
    }
    this.watches.add(controller);
    try {
      const stream = this.raw.watchGame(
        { gameId, afterVersion: BigInt(auth?.afterVersion ?? 0) },
        { ...this.options(auth, true), signal: controller.signal },
      );
      for await (const message of stream) {
        yield message;
      }
    } catch (error) {
      throw this.failure(error);
    } finally {
      outer?.removeEventListener("abort", forward);
      this.watches.delete(controller);
      // Cancels the stream when the consumer left early; a no-op once it has ended.
      controller.abort();
    }
  }

  /** One page of the unredacted log (operators, or seats once the match is over). */
  async getLogPage(
    gameId: string,
    afterVersion: bigint | number = 0n,
    pageSize = 0,
    auth?: CallAuth,
  ): Promise<GetGameLogResponse> {
    return this.call(() =>
      this.raw.getGameLog({ gameId, afterVersion: BigInt(afterVersion), pageSize }, this.options(auth)),
    );
  }

  /** The whole log, following next_after_version until the page that reaches the current version. */
  async getLog(gameId: string, options?: CallAuth & { pageSize?: number }): Promise<GameLog> {
    const entries: LogEntry[] = [];
    let after = 0n;
    for (;;) {
      const page = await this.getLogPage(gameId, after, options?.pageSize ?? 0, options);
      entries.push(...page.entries);
      if (page.nextAfterVersion === 0n) {
        return { entries, rules: page.rules, seed: page.seed, rounds: page.rounds, deal: page.deal, version: page.version };
      }
      if (page.nextAfterVersion <= after) {
        throw new Error(`GetGameLog paging does not advance (${after} -> ${page.nextAfterVersion})`);
      }
      after = page.nextAfterVersion;
    }
  }
}

/** The token of `seat` in a CreateGame response. */
export function seatToken(game: CreateGameResponse, seat: number): string {
  const found = game.seats.find((s) => s.seat === seat);
  if (found === undefined) {
    throw new Error(`no token for seat ${seat}`);
  }
  return found.token;
}
