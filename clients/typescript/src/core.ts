// The browser-safe core of the gostop client: a small typed wrapper over the generated
// gostop.v1.GameService client (protobuf-es + Connect) that runs over any Connect `Transport` —
// the Connect protocol or gRPC-Web through `fetch` in a browser (index.ts), gRPC or Connect over
// HTTP/2 or HTTP/1.1 in Node (node.ts). It adds what every caller needs: credentials in headers
// (the seat token as "authorization: Bearer <token>", API/operator keys as "x-api-key"), a
// deadline on every call, request ids for idempotent retries, the optimistic-concurrency version,
// paging of the game log and errors typed by their google.rpc.ErrorInfo reason. Leaving a watch
// early cancels its stream, and close() aborts everything that is open and refuses later calls.
//
// Nothing here imports a Node module or uses a Node global: the browser entry is built from this
// file (tests/contract/test_ts_package.py bundles it for browsers and fails on any `node:` import).

import { create, type DescMessage, type DescMethodStreaming, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  type CallOptions,
  type Client,
  type ContextValues,
  type StreamResponse,
  type Transport,
  type UnaryResponse,
} from "@connectrpc/connect";

import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import {
  ActionSchema,
  CreateGameRequestSchema,
  GameService,
  WatchGameResponseSchema,
  type Action,
  type CreateGameResponse,
  type Deal,
  type GetGameLogResponse,
  type GetGameResponse,
  type LogEntry,
  type RuleSet,
  type Rules,
  type SetAutoPlayResponse,
  type TurnResult,
  type WatchGameResponse,
} from "./gen/gostop/v1/game_pb.js";

export * from "./gen/gostop/v1/game_pb.js";
export { Code, ConnectError, type Transport } from "@connectrpc/connect";

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
  | "ID_EXHAUSTED"
  | "BAD_CLOCK"
  | "NO_CLOCK"
  | "TURN_TIMED_OUT";

/**
 * A failed call: the status code (gRPC and Connect share them), the message and the ErrorInfo of the status details. `reason` is
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

/**
 * A random (version 4) UUID from the Web Crypto API, which browsers and Node ≥ 20 both have as
 * `globalThis.crypto`. Browsers offer `crypto.randomUUID()` only to secure contexts (HTTPS or
 * localhost); a page served over plain HTTP from another host still has `getRandomValues()`,
 * from which the same kind of UUID is built.
 */
function randomUuid(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto.randomUUID === "function") {
    return crypto.randomUUID();
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40; // version 4
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80; // the RFC 4122 variant
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A new request id: safe to reuse for retries of the same call, unique otherwise. */
export function newRequestId(prefix = "ts"): string {
  return `${prefix}-${randomUuid()}`;
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

/** What every client takes, whichever way it reaches the service. */
export interface CommonClientOptions {
  /** An API or operator key, sent as x-api-key on every call. */
  apiKey?: string;
  /** Deadline of each unary call in milliseconds (default 10 s); streams have none by default. */
  timeoutMs?: number;
}

/** A client over a Connect transport made by the caller (createBrowserClient and the Node client make theirs). */
export interface GostopClientOptions extends CommonClientOptions {
  /** How calls reach the service: any Connect transport (Connect, gRPC-Web or gRPC protocol). */
  transport: Transport;
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

/** Credentials and request id of `setAutoPlay`. */
export interface SetAutoPlayArgs extends CallAuth {
  /** The seat's token: auto-play is turned on or off for that seat. */
  token: string;
  /** Idempotency key; a fresh one is drawn when absent. Reuse it to retry the same call. */
  requestId?: string;
}

/** What `watch` takes besides the credentials. */
export interface WatchOptions {
  /** Events of the versions after this one are sent (0, the default: the whole game). */
  afterVersion?: bigint | number;
  /** Also the caller's view after each version's events (a message with `view` and no `event`). */
  includeViews?: boolean;
  /**
   * Ask the server for a version per stream message (default true). The messages handed out are
   * the same either way: this only makes fewer of them travel, and no version half-received.
   */
  wholeVersions?: boolean;
}

/**
 * A stream message as a server without whole versions sends it: a version's message (its
 * `events`, and its view) becomes one message per event, then the view; any other message is
 * returned as it is.
 */
export function unpackVersion(message: WatchGameResponse): WatchGameResponse[] {
  if (message.events.length === 0) {
    return [message];
  }
  const version = message.version;
  const items = message.events.map((event) => create(WatchGameResponseSchema, { version, event }));
  if (message.view !== undefined) {
    items.push(create(WatchGameResponseSchema, { version, view: message.view }));
  }
  return items;
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

/**
 * The calls a client has open, each with an abort controller of its own (linked to the caller's
 * signal), so that close() can abort them all; once closed it refuses new ones.
 */
class OpenCalls {
  private readonly controllers = new Set<AbortController>();
  private isClosed = false;

  get closed(): boolean {
    return this.isClosed;
  }

  /** A signal for a new call (aborted by `signal` or by close()), and `done` to call when it ends. */
  start(signal: AbortSignal | undefined): { signal: AbortSignal; done: (cancel?: boolean) => void } {
    if (this.isClosed) {
      throw new ConnectError(CLIENT_CLOSED, Code.Canceled);
    }
    const controller = new AbortController();
    const forward = (): void => controller.abort(signal?.reason);
    if (signal?.aborted) {
      forward();
    } else {
      signal?.addEventListener("abort", forward, { once: true });
    }
    this.controllers.add(controller);
    const done = (cancel = false): void => {
      signal?.removeEventListener("abort", forward);
      this.controllers.delete(controller);
      if (cancel) {
        controller.abort(new ConnectError("the caller left the stream", Code.Canceled));
      }
    };
    return { signal: controller.signal, done };
  }

  /** Aborts every open call and refuses new ones. */
  close(): void {
    this.isClosed = true;
    for (const controller of this.controllers) {
      controller.abort(new ConnectError(CLIENT_CLOSED, Code.Canceled));
    }
    this.controllers.clear();
  }
}

/**
 * The messages of a server stream, handing the call back to `done` when they end: with
 * `cancel` when the consumer left before the end (which aborts the HTTP request; Connect's own
 * iterable has no return(), so leaving a for-await over it would leave the stream open).
 */
async function* followed<T>(messages: AsyncIterable<T>, done: (cancel?: boolean) => void): AsyncGenerator<T, void, undefined> {
  let finished = false;
  try {
    for await (const message of messages) {
      yield message;
    }
    finished = true;
  } finally {
    done(!finished);
  }
}

/** The headers a Transport takes (the fetch API's HeadersInit, which Node's types lack without the DOM library). */
type TransportHeaders = Parameters<Transport["unary"]>[3];

/** `inner` with every call registered in `calls`: aborted by close(), refused once closed. */
function closableTransport(inner: Transport, calls: OpenCalls): Transport {
  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: TransportHeaders,
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const call = calls.start(signal);
      try {
        return await inner.unary(method, call.signal, timeoutMs, header, input, contextValues);
      } finally {
        call.done();
      }
    },
    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: TransportHeaders,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      const call = calls.start(signal);
      let response: StreamResponse<I, O>;
      try {
        response = await inner.stream(method, call.signal, timeoutMs, header, input, contextValues);
      } catch (error) {
        call.done();
        throw error;
      }
      return { ...response, message: followed(response.message, call.done) };
    },
  };
}

/**
 * A gostop.v1.GameService client over a Connect transport. In a browser make one with
 * `createBrowserClient()` (the Connect protocol or gRPC-Web over fetch); in Node with
 * `new GostopClient({ address })` of `@gostop/client/node` (gRPC over HTTP/2, or Connect).
 * An open call or watch keeps Node running: leave watches by `break` (or return, throw) and call
 * `close()` when done.
 */
export class GostopClient {
  /** The generated Connect client, for anything the wrapper does not cover (also closed by close()). */
  readonly raw: Client<typeof GameService>;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  /** Every call in flight (also through `raw`), so that close() can abort them. */
  private readonly calls = new OpenCalls();

  constructor(options: GostopClientOptions) {
    this.raw = createClient(GameService, closableTransport(options.transport, this.calls));
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.calls.closed;
  }

  /**
   * Closes the client: aborts its open watches and calls. Every call afterwards (also through
   * `raw`), and every call or watch that was open, fails with a GostopError CANCELLED whose
   * message is CLIENT_CLOSED. Calling it again does nothing. (The Node client also closes its
   * connections, so that nothing of it keeps Node running.)
   */
  close(): void {
    this.calls.close();
  }

  private ensureOpen(): void {
    if (this.closed) {
      throw closedError();
    }
  }

  /** The error of a failed call: the closed-client error once close() was called, since that is why it failed. */
  private failure(error: unknown): GostopError {
    return this.closed ? closedError(error) : GostopError.from(error);
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
   * Turns auto-play (자동치기) on or off for the token's seat, in a game with a turn clock: while
   * on, the table's bot makes the seat's decisions after the clock's pause; any action of the
   * seat's own turns it off. At most once per request id; asking for the state the seat is
   * already in changes nothing. Fails with FAILED_PRECONDITION, reason NO_CLOCK, in a game
   * without a clock.
   */
  async setAutoPlay(gameId: string, on: boolean, args: SetAutoPlayArgs): Promise<SetAutoPlayResponse> {
    return this.call(() =>
      this.raw.setAutoPlay({ gameId, on, requestId: args.requestId ?? newRequestId() }, this.options(args)),
    );
  }

  /**
   * The caller's redacted events of every version after `afterVersion` (0: the whole game), as
   * they are committed; the stream ends after the event that finishes the match. To resume after
   * a broken stream, call again with the last version received.
   *
   * The stream opens at the first `next()` (the first turn of a `for await`). Leaving the loop
   * early — `break`, `return` or a throw in its body, or `return()` on the iterator — cancels
   * it on the server and releases the connection (so Node can exit). `auth.signal` and
   * `close()` abort it too: the loop then throws a GostopError CANCELLED.
   *
   * `includeViews`: also the caller's view after the events of each version (a message with
   * `view` set and no `event`), so that a seat learns its legal actions without `getGame`.
   *
   * Each message handed out holds one event (or one view), whichever form the server sends: the
   * client asks for whole versions (a version per stream message, `wholeVersions`) and hands out
   * their events one at a time; a server without them sends a message per event. A whole version
   * arrives all or not at all, so a broken stream never leaves one half-delivered: resume after
   * the last version whose events were all taken. A server without whole versions can break a
   * stream mid-version: to resume exactly there, count the events taken of the last version,
   * resume after the version before it and skip that many.
   */
  async *watch(gameId: string, auth?: CallAuth & WatchOptions): AsyncGenerator<WatchGameResponse, void, undefined> {
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
    try {
      const stream = this.raw.watchGame(
        {
          gameId,
          afterVersion: BigInt(auth?.afterVersion ?? 0),
          includeViews: auth?.includeViews ?? false,
          wholeVersions: auth?.wholeVersions ?? true,
        },
        { ...this.options(auth, true), signal: controller.signal },
      );
      for await (const message of stream) {
        // The next message is read only once every item of this one was taken: a stream that
        // breaks after a version's message has still handed out all of its events.
        yield* unpackVersion(message);
      }
    } catch (error) {
      throw this.failure(error);
    } finally {
      outer?.removeEventListener("abort", forward);
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
