// The table's state and its conversation with the server, apart from how it is drawn.
//
// - The view: GetGame on opening; after each of our actions, the view SubmitAction returns; after
//   each event of someone else, GetGame again (one call at a time, the newest view wins).
// - The log: WatchGame from the version the tab last saw. Every event goes to the log, marked live
//   when it arrived after the page opened (the table flashes the special ones of the latest action:
//   뻑, 쪽, 따닥, 쓸, steals, bonus cards, 고, …). A broken stream is opened again after the last
//   version seen (the events of it already shown are skipped), so a lost connection or a reload
//   loses nothing and shows nothing twice; the log is kept in the tab's sessionStorage. (The
//   client receives each version whole and hands its events out one at a time; a server that
//   sends an event per message may break a stream mid-version, which the skipping covers.)
// - Actions: only ids of the view's legal actions, at the view's version, each with a request id
//   kept for its retries (a call the network dropped is sent again with it: applied once). On a
//   table with a turn clock a move can lose the race to its deadline (TURN_TIMED_OUT): the page
//   says so and takes the view the clock's move made; auto-play is turned on and off with
//   SetAutoPlay, and the views say which state the seat is in.
// - A seat token the server refuses leaves the table watching, as a spectator; a game the server
//   no longer has (a restart of a memory store) ends the table with a way back to the lobby.
// - A broken stream is retried with a growing pause; an answer that cannot change on a retry
//   (unknown game, refused credentials) stops the retries.
import { fromBinary, toBinary } from "@bufbuild/protobuf";

import {
  api,
  Code,
  describeError,
  newRequestId,
  Phase,
  WatchGameResponseSchema,
  type GameView,
  type GostopError,
  type WatchGameResponse,
} from "./api";
import { forgetToken, loadStream, saveStream, savedApiKey, savedToken } from "./session";

export type Connection = "connecting" | "live" | "reconnecting" | "ended";

export interface LoggedEvent {
  /** Position in the log (a stable key). */
  n: number;
  version: bigint;
  event: NonNullable<WatchGameResponse["event"]>;
  /** Delivered live (after the page opened), as opposed to replayed history. */
  live: boolean;
}

export interface TableState {
  gameId: string;
  token: string | undefined;
  view: GameView | undefined;
  version: bigint;
  log: LoggedEvent[];
  connection: Connection;
  /** How many times the event stream was opened again after it broke. */
  reconnects: number;
  busy: boolean;
  error: string | undefined;
  /** A message for the reader that is not an error (i18n key). */
  notice: "tokenRefused" | "timedOut" | undefined;
  notFound: boolean;
}

function b64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function unb64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}


function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A failure of the network rather than an answer of the service (no ErrorInfo reason): a dropped
 * connection, a refused one. The same call (with the same request id) may be tried again.
 */
function transient(error: unknown): boolean {
  const e = error as Partial<GostopError>;
  return (e.reason ?? "") === "" && (e.code === Code.Unknown || e.code === Code.Unavailable || e.code === Code.DeadlineExceeded);
}

/** An answer a retry cannot change: the game, the seat or the request is refused as such. */
function permanent(error: unknown): boolean {
  const e = error as Partial<GostopError>;
  return e.code === Code.NotFound || e.code === Code.Unauthenticated || e.code === Code.PermissionDenied ||
    e.code === Code.InvalidArgument;
}

/** The longest pause between two tries of a broken stream. */
const MAX_DELAY_MS = 15_000;
/** How long a passing notice stays up unless clicked away. */
const NOTICE_MS = 8_000;

/** Runs `call`, again after a pause while it fails for a transient reason (at most `tries` times in all). */
async function retrying<T>(call: () => Promise<T>, signal: AbortSignal, tries = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= tries || signal.aborted || !transient(error)) throw error;
      await sleep(250 * attempt);
    }
  }
}

export class Table {
  state: TableState;
  private readonly listeners = new Set<() => void>();
  private readonly abort = new AbortController();
  /** The viewer's seat (-1: a spectator), known once the first view arrives. */
  private seat = -1;
  private saved: string[] = [];
  /** Events of `lastVersion` delivered so far: a resumed stream skips that many of it. */
  private lastVersion = 0n;
  private lastCount = 0;
  private refreshing = false;
  private watching = false;
  private refreshAgain = false;
  private n = 0;
  private pendingRequest: { key: string; id: string } | undefined;
  private noticeTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(gameId: string) {
    const token = savedToken(gameId);
    this.state = {
      gameId, token, view: undefined, version: 0n, log: [], connection: "connecting", reconnects: 0, busy: false,
      error: undefined, notice: undefined, notFound: false,
    };
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A notice of something that passed (the log keeps it): shown for a while, or until clicked. */
  private tell(notice: "timedOut"): void {
    this.set({ notice });
    clearTimeout(this.noticeTimer);
    this.noticeTimer = setTimeout(() => {
      if (this.state.notice === notice) this.set({ notice: undefined });
    }, NOTICE_MS);
  }

  private set(patch: Partial<TableState>): void {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) l();
  }

  private auth(): { token?: string; signal: AbortSignal } {
    return { ...(this.state.token !== undefined ? { token: this.state.token } : {}), signal: this.abort.signal };
  }

  /** Opens the table: the view, then the event stream. */
  async open(): Promise<void> {
    let first;
    const used = this.state.token;
    try {
      first = await retrying(() => api(savedApiKey()).getGame(this.state.gameId, this.auth()), this.abort.signal);
    } catch (error) {
      if (permanent(error)) return this.refused(error, used);
      this.set({ error: describeError(error) });
      return;
    }
    const view = first.view;
    const viewer = view?.viewer ?? -1;
    this.seat = viewer;
    const saved = loadStream(this.state.gameId, viewer);
    const log: LoggedEvent[] = [];
    if (saved !== undefined) {
      for (const text of saved.events) {
        const message = fromBinary(WatchGameResponseSchema, unb64(text));
        if (message.event !== undefined) {
          log.push({ n: this.n++, version: message.version, event: message.event, live: false });
        }
      }
      this.saved = [...saved.events];
      this.lastVersion = BigInt(saved.lastVersion);
      this.lastCount = saved.lastCount;
    }
    this.set({ view, version: first.version, log });
    // A stream already running (the table reopened to watch) carries on, without the token.
    if (!this.watching) void this.watch(first.version);
  }

  /**
   * A refusal no retry mends. An unknown game ends the table; a seat token the server no longer
   * accepts (a new secret) is dropped and the game opened again to watch — where a restarted
   * server has lost the game too, that ends the table. `used` is the token the refused call
   * carried: a refusal of a token already dropped is old news.
   */
  private async refused(error: unknown, used: string | undefined): Promise<void> {
    if (this.abort.signal.aborted || used !== this.state.token) return;
    const e = error as GostopError;
    if (e.code === Code.Unauthenticated && this.state.token !== undefined) {
      forgetToken(this.state.gameId);
      this.set({ token: undefined, notice: "tokenRefused", error: undefined });
      return this.open();
    }
    if (e.code === Code.NotFound || e.code === Code.Unauthenticated) {
      forgetToken(this.state.gameId);
      this.set({ notFound: true, connection: "ended", notice: undefined, error: undefined });
      this.abort.abort();
      return;
    }
    this.set({ error: describeError(error), connection: "ended" });
    this.abort.abort();
  }

  close(): void {
    this.abort.abort();
    this.listeners.clear();
  }

  /** The stream: from the last version seen, again and again until the match is over or the page leaves. */
  private async watch(openedAt: bigint): Promise<void> {
    this.watching = true;
    try {
      await this.watchLoop(openedAt);
    } finally {
      this.watching = false;
    }
  }

  private async watchLoop(openedAt: bigint): Promise<void> {
    let delay = 250;
    while (!this.abort.signal.aborted) {
      const used = this.state.token;
      // Resume inside the last version (its remaining events may not have come yet), skipping
      // the ones already shown.
      const after = this.lastVersion > 0n ? this.lastVersion - 1n : 0n;
      let skip = this.lastVersion > 0n ? this.lastCount : 0;
      let skipVersion = this.lastVersion;
      try {
        this.set({ connection: this.state.connection === "reconnecting" ? "reconnecting" : "connecting" });
        // The view comes with the stream, after each version's events (includeViews): no GetGame
        // after every commit, and after a break the newest view follows what happened meanwhile.
        const stream = api(savedApiKey()).watch(this.state.gameId, {
          ...this.auth(), afterVersion: after, includeViews: true,
        });
        let announced = false;
        for await (const message of stream) {
          if (!announced) {
            this.set({ connection: "live" });
            announced = true;
          }
          if (message.view !== undefined) {
            if (message.version >= this.state.version) this.set({ view: message.view, version: message.version });
            continue;
          }
          delay = 250;
          if (message.version === skipVersion && skip > 0) {
            skip -= 1;
            continue;
          }
          skipVersion = -1n;
          this.receive(message, message.version > openedAt);
        }
        if (!announced) this.set({ connection: "live" });
        // The server ends the stream after the event that finishes the match.
        if (this.state.view?.match?.finished || this.matchOverInLog()) {
          this.set({ connection: "ended" });
          return;
        }
      } catch (error) {
        if (this.abort.signal.aborted) return;
        if (permanent(error)) {
          void this.refused(error, used);
          return;
        }
      }
      this.set({ connection: "reconnecting", reconnects: this.state.reconnects + 1 });
      await sleep(delay);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  }

  private matchOverInLog(): boolean {
    const last = this.state.log[this.state.log.length - 1];
    return last?.event.kind.case === "roundSettled" && this.state.view?.match?.finished === true;
  }

  private receive(message: WatchGameResponse, live: boolean): void {
    const event = message.event;
    if (event === undefined) return;
    if (message.version === this.lastVersion) {
      this.lastCount += 1;
    } else {
      this.lastVersion = message.version;
      this.lastCount = 1;
    }
    this.saved.push(b64(toBinary(WatchGameResponseSchema, message)));
    saveStream(this.state.gameId, this.seat, {
      events: this.saved, lastVersion: String(this.lastVersion), lastCount: this.lastCount,
    });
    const entry: LoggedEvent = { n: this.n++, version: message.version, event, live };
    this.set({ log: [...this.state.log, entry] });
  }

  /** GetGame again; one call at a time, and once more if something happened meanwhile. */
  async refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    const used = this.state.token;
    try {
      do {
        this.refreshAgain = false;
        const got = await retrying(() => api(savedApiKey()).getGame(this.state.gameId, this.auth()), this.abort.signal);
        if (got.version >= this.state.version) this.set({ view: got.view, version: got.version });
      } while (this.refreshAgain && !this.abort.signal.aborted);
    } catch (error) {
      if (this.abort.signal.aborted) return;
      if (permanent(error)) await this.refused(error, used);
      // A failure of the network: the stream's next try brings the view back.
      else if (!transient(error)) this.set({ error: describeError(error) });
    } finally {
      this.refreshing = false;
    }
  }

  /** Applies a legal action of the view (by id), at the view's version. */
  async act(actionId: number): Promise<void> {
    const { view, token, version } = this.state;
    if (view === undefined || token === undefined || this.state.busy) return;
    if (!view.legalActions.some((a) => a.id === actionId)) return;
    // A retry of the same action at the same version reuses its request id (idempotent).
    const key = `${version}:${actionId}`;
    if (this.pendingRequest?.key !== key) this.pendingRequest = { key, id: newRequestId("web") };
    this.set({ busy: true, error: undefined });
    try {
      const requestId = this.pendingRequest.id;
      // A retry after a lost answer reuses the request id: the server applies the action once.
      const result = await retrying(
        () => api(savedApiKey()).submitAction({
          gameId: this.state.gameId, token, expectedVersion: version, action: actionId, requestId,
          signal: this.abort.signal,
        }),
        this.abort.signal,
      );
      this.pendingRequest = undefined;
      if (result.version >= this.state.version) this.set({ view: result.view, version: result.version });
    } catch (error) {
      const e = error as GostopError;
      // The clock's move for this seat was committed first: say so (the log shows the move).
      if (e.reason === "TURN_TIMED_OUT") this.tell("timedOut");
      // Someone else moved first (or our earlier try did): take the current view.
      if (e.reason === "STALE_VERSION" || e.code === Code.Aborted) this.pendingRequest = undefined;
      else if (e.code === Code.NotFound || e.code === Code.Unauthenticated) return this.refused(error, token);
      else this.set({ error: describeError(error) });
      void this.refresh();
    } finally {
      this.set({ busy: false });
    }
  }

  /** Deals the next round of the match (any seated person may). */
  async nextRound(): Promise<void> {
    const { token, version, view } = this.state;
    if (token === undefined || view?.phase !== Phase.OVER || this.state.busy) return;
    const key = `${version}:next`;
    if (this.pendingRequest?.key !== key) this.pendingRequest = { key, id: newRequestId("web") };
    this.set({ busy: true, error: undefined });
    try {
      const requestId = this.pendingRequest.id;
      const result = await retrying(
        () => api(savedApiKey()).startNextRound({
          gameId: this.state.gameId, token, expectedVersion: version, requestId, signal: this.abort.signal,
        }),
        this.abort.signal,
      );
      this.pendingRequest = undefined;
      if (result.version >= this.state.version) this.set({ view: result.view, version: result.version });
    } catch (error) {
      const e = error as GostopError;
      if (e.reason !== "STALE_VERSION" && e.reason !== "ROUND_IN_PROGRESS") this.set({ error: describeError(error) });
      this.pendingRequest = undefined;
      void this.refresh();
    } finally {
      this.set({ busy: false });
    }
  }

  /**
   * Turns auto-play (자동치기) on or off for the viewer's seat; the switch follows the seat's
   * `autoPlay` in the views, so a move of the person's own (which turns it off on the server)
   * shows too. A retry after a lost answer reuses the request id.
   */
  async setAutoPlay(on: boolean): Promise<void> {
    const { token, view } = this.state;
    if (token === undefined || view?.clock === undefined || this.state.busy) return;
    const requestId = newRequestId("web");
    this.set({ busy: true, error: undefined });
    try {
      const result = await retrying(
        () => api(savedApiKey()).setAutoPlay(this.state.gameId, on, { token, requestId, signal: this.abort.signal }),
        this.abort.signal,
      );
      if (result.version >= this.state.version) this.set({ view: result.view, version: result.version });
    } catch (error) {
      const e = error as GostopError;
      if (e.code === Code.NotFound || e.code === Code.Unauthenticated) return this.refused(error, token);
      this.set({ error: describeError(error) });
      void this.refresh();
    } finally {
      this.set({ busy: false });
    }
  }

  clearError(): void {
    this.set({ error: undefined, notice: undefined });
  }
}
