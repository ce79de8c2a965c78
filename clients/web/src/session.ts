// Where the page keeps what it must not lose on a reload: the seat token of each game (per tab:
// sessionStorage, so another tab can hold another seat), the events seen so far and the version
// the event stream resumes from. The API key and the language are kept per browser.
//
// Routes live in the hash, so the server serves one index.html:
//   #/                     the lobby
//   #/cards                the deck, card by card
//   #/g/<game id>          the table: the seat this tab holds, or a spectator's view
//   #/g/<game id>/<seat>?t=<token>   an invite link: the token is moved into this tab's storage
//                                    and dropped from the address bar at once.

export type Route = { name: "lobby" } | { name: "cards" } | { name: "table"; gameId: string };

const GAME_ID = /^[A-Za-z0-9_-]{1,64}$/;

function storage(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

export function tokenKey(gameId: string): string {
  return `gostop.token.${gameId}`;
}

export function savedToken(gameId: string): string | undefined {
  return storage()?.getItem(tokenKey(gameId)) ?? undefined;
}

export function saveToken(gameId: string, token: string): void {
  storage()?.setItem(tokenKey(gameId), token);
}

export function forgetToken(gameId: string): void {
  storage()?.removeItem(tokenKey(gameId));
}

/** The route of the address bar; an invite link's token is stored and removed from the address. */
export function currentRoute(): Route {
  const hash = window.location.hash.replace(/^#\/?/, "");
  const [path = "", query = ""] = hash.split("?");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "cards") return { name: "cards" };
  if (parts[0] === "g" && parts[1] !== undefined && GAME_ID.test(parts[1])) {
    const gameId = parts[1];
    const token = new URLSearchParams(query).get("t");
    if (token) {
      saveToken(gameId, token);
      history.replaceState(null, "", `#/g/${gameId}`);
    }
    return { name: "table", gameId };
  }
  return { name: "lobby" };
}

export function navigate(route: Route): void {
  window.location.hash = route.name === "table" ? `#/g/${route.gameId}` : route.name === "cards" ? "#/cards" : "#/";
}

/** The link that seats its opener at `seat` (the token is the seat's secret: share it with that person only). */
export function inviteLink(gameId: string, seat: number, token: string): string {
  return `${baseAddress()}#/g/${gameId}/${seat}?t=${encodeURIComponent(token)}`;
}

export function spectatorLink(gameId: string): string {
  return `${baseAddress()}#/g/${gameId}`;
}

function baseAddress(): string {
  return window.location.href.split("#")[0] ?? "";
}

/** What the table remembers for a tab: the events it has shown, as the stream gave them. */
export interface SavedStream {
  /** Base64 of each WatchGameResponse, oldest first. */
  events: string[];
  /** The highest version of which the stream delivered an event. */
  lastVersion: string;
  /** How many events of lastVersion were delivered (the rest come after a resume). */
  lastCount: number;
}

const MAX_SAVED_EVENTS = 1500;

function streamKey(gameId: string, seat: number): string {
  return `gostop.stream.${gameId}.${seat}`;
}

export function loadStream(gameId: string, seat: number): SavedStream | undefined {
  const raw = storage()?.getItem(streamKey(gameId, seat));
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as SavedStream;
    return Array.isArray(parsed.events) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export function saveStream(gameId: string, seat: number, saved: SavedStream): void {
  const events = saved.events.length > MAX_SAVED_EVENTS ? saved.events.slice(-MAX_SAVED_EVENTS) : saved.events;
  try {
    storage()?.setItem(streamKey(gameId, seat), JSON.stringify({ ...saved, events }));
  } catch {
    // storage full: the stream still resumes from the version kept in memory
  }
}

export function savedApiKey(): string {
  try {
    return localStorage.getItem("gostop.apiKey") ?? "";
  } catch {
    return "";
  }
}

export function saveApiKey(key: string): void {
  try {
    if (key) localStorage.setItem("gostop.apiKey", key);
    else localStorage.removeItem("gostop.apiKey");
  } catch {
    // not kept
  }
}
