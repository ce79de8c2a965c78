// The lobby: a new match (preset, players, who sits where — a person or a bot and its strength —,
// rounds, and for a table with people the time per move of the server's turn clock), the links that seat the other people or let anyone watch, and a box to open a
// link or a game id.
import type { JSX } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

import { api, Code, describeError, type CreateGameResponse, type GostopError, type RuleSet } from "../api";
import { lang, t } from "../i18n";
import { inviteLink, navigate, saveApiKey, savedApiKey, saveToken, spectatorLink } from "../session";

/** The opponents a seat can have, weakest first: a person, or a bot with a thinking budget. */
export const SEAT_CHOICES = [
  { id: "person", bot: "", budgetMs: 0, ko: "사람 (초대)", en: "a person (invite)" },
  { id: "random", bot: "random", budgetMs: 0, ko: "봇: 쉬움 (random)", en: "bot: easy (random)" },
  { id: "greedy", bot: "greedy", budgetMs: 0, ko: "봇: 보통 (greedy)", en: "bot: medium (greedy)" },
  { id: "mcts", bot: "mcts", budgetMs: 300, ko: "봇: 강함 (mcts, 0.3초)", en: "bot: strong (mcts, 0.3 s)" },
  { id: "mcts-slow", bot: "mcts", budgetMs: 1500, ko: "봇: 아주 강함 (mcts, 1.5초)", en: "bot: expert (mcts, 1.5 s)" },
] as const;

type SeatChoice = (typeof SEAT_CHOICES)[number]["id"];

/** Seconds per decision a table with people may have (0: no clock). */
export const CLOCK_CHOICES = [0, 10, 15, 30, 60] as const;
const DEFAULT_CLOCK_S = 15;
/** The time bank of each seat and round, spent when a decision runs over. */
const BANK_MS = 30_000;
/** Timeouts in a row after which a seat is away (its decisions made at once). */
const AWAY_AFTER = 2;

/** The clock of CreateGame for `seconds` per decision (none for 0). */
export function clockSettings(seconds: number): { decisionMs: number; bankMs: number; awayAfter: number } | undefined {
  return seconds > 0 ? { decisionMs: seconds * 1000, bankMs: BANK_MS, awayAfter: AWAY_AFTER } : undefined;
}

const PRESET_TEXT: Record<string, readonly [string, string]> = {
  standard: ["보너스 패, 흔들기/폭탄, 모든 박", "bonus cards, 흔들기/폭탄, every 박"],
  simple: ["쉬운 맞고: 박과 배수 없음", "beginners' 맞고: no 박, no multipliers"],
  classic: ["첫뻑/연뻑, 3뻑, 총통, 허당", "첫뻑/연뻑, 3뻑, 총통, 허당"],
  house: ["집에서 치는 판: 점당 100원", "a home game: 100 a point"],
  arcade: ["3점 맞고, 쓸 +1점", "3-point 맞고, 쓸 +1"],
};

export function Lobby(): JSX.Element {
  const [ruleSets, setRuleSets] = useState<RuleSet[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [preset, setPreset] = useState("standard");
  const [players, setPlayers] = useState(2);
  const [rounds, setRounds] = useState(1);
  const [clockSeconds, setClockSeconds] = useState<number>(DEFAULT_CLOCK_S);
  const [seats, setSeats] = useState<SeatChoice[]>(["greedy", "greedy", "greedy"]);
  const [apiKey, setApiKey] = useState(savedApiKey());
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreateGameResponse | undefined>();
  const [joinText, setJoinText] = useState("");
  const [advancedOpen, setAdvancedOpen] = useState(savedApiKey() !== "");
  const keyInput = useRef<HTMLInputElement>(null);

  useEffect(() => {
    api(savedApiKey())
      .listRuleSets()
      .then(setRuleSets)
      .catch((e: unknown) => setError(describeError(e)));
  }, []);

  const presets = useMemo(() => [...new Set((ruleSets ?? []).map((r) => r.preset))], [ruleSets]);
  const counts = useMemo(
    () => (ruleSets ?? []).filter((r) => r.preset === preset).map((r) => r.players).sort(),
    [ruleSets, preset],
  );
  useEffect(() => {
    if (counts.length && !counts.includes(players)) setPlayers(counts[0] ?? 2);
  }, [counts, players]);

  const withPeople = seats.slice(0, players - 1).some((choice) => choice === "person");

  const create = async (event: Event): Promise<void> => {
    event.preventDefault();
    setCreating(true);
    setError(undefined);
    saveApiKey(apiKey);
    try {
      const botSeats = seats
        .slice(0, players - 1)
        .map((choice, i) => ({ seat: i + 1, spec: SEAT_CHOICES.find((c) => c.id === choice) }))
        .filter((s) => s.spec !== undefined && s.spec.bot !== "")
        .map((s) => ({ seat: s.seat, bot: s.spec?.bot ?? "", budgetMs: s.spec?.budgetMs ?? 0 }));
      // Only people wait for each other: a table of you and bots has no clock.
      const clock = withPeople ? clockSettings(clockSeconds) : undefined;
      const game = await api(apiKey).createGame({ preset, players, rounds, botSeats, ...(clock ? { clock } : {}) });
      for (const s of game.seats) if (s.seat === 0) saveToken(game.gameId, s.token);
      if (game.seats.length <= 1) navigate({ name: "table", gameId: game.gameId });
      else setCreated(game);
    } catch (e) {
      const refused = e as Partial<GostopError>;
      if (refused.code === Code.Unauthenticated || refused.code === Code.PermissionDenied) {
        // The server wants a key (or another one): say so, and open the field where it goes.
        setError(t(apiKey.trim() === "" ? "needsKey" : "keyRefused"));
        setAdvancedOpen(true);
        setTimeout(() => keyInput.current?.focus(), 0);
      } else {
        setError(describeError(e));
      }
    } finally {
      setCreating(false);
    }
  };

  const open = (event: Event): void => {
    event.preventDefault();
    const text = joinText.trim();
    const hash = text.includes("#") ? text.slice(text.indexOf("#")) : `#/g/${text}`;
    window.location.hash = hash;
  };

  const ko = lang() === "ko";
  if (created !== undefined) {
    const others = created.seats.filter((s) => s.seat !== 0);
    return (
      <main class="lobby" data-testid="created">
        <section class="panel">
          <h2>{t("created")}</h2>
          <p class="game-id">ID: <code>{created.gameId}</code></p>
          <button class="primary" data-testid="sit-down" onClick={() => navigate({ name: "table", gameId: created.gameId })}>
            {t("sitDown")} ({t("seat")} 0)
          </button>
          <h3>{t("invite")}</h3>
          <p class="warn" data-testid="invite-secret">{t("inviteSecret")}</p>
          {others.map((s) => (
            <LinkRow key={s.seat} label={t("inviteSeat", s.seat)} link={inviteLink(created.gameId, s.seat, s.token)} />
          ))}
          <LinkRow label={t("spectate")} link={spectatorLink(created.gameId)} />
        </section>
      </main>
    );
  }
  return (
    <main class="lobby">
      <form class="panel" onSubmit={create} data-testid="new-game">
        <h2>{t("newGame")}</h2>
        <label>
          {t("preset")}
          <select value={preset} onChange={(e) => setPreset((e.target as HTMLSelectElement).value)} data-testid="preset">
            {(presets.length ? presets : ["standard"]).map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
          <span class="hint preset-text" data-testid="preset-text">{PRESET_TEXT[preset]?.[ko ? 0 : 1] ?? ""}</span>
        </label>
        <label>
          {t("players")}
          <select
            value={players}
            onChange={(e) => setPlayers(Number((e.target as HTMLSelectElement).value))}
            data-testid="players"
          >
            {(counts.length ? counts : [2]).map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <fieldset class="seats">
          <legend>{t("seats")}</legend>
          <div class="seat-row">
            <span>{t("seat")} 0</span>
            <strong>{t("you")}</strong>
          </div>
          {Array.from({ length: players - 1 }, (_, i) => (
            <label class="seat-row" key={i}>
              <span>
                {t("seat")} {i + 1}
              </span>
              <select
                value={seats[i]}
                data-testid={`seat-${i + 1}`}
                onChange={(e) => {
                  const next = [...seats];
                  next[i] = (e.target as HTMLSelectElement).value as SeatChoice;
                  setSeats(next);
                }}
              >
                {SEAT_CHOICES.map((c) => (
                  <option key={c.id} value={c.id}>
                    {ko ? c.ko : c.en}
                  </option>
                ))}
              </select>
            </label>
          ))}
        </fieldset>
        <label>
          {t("rounds")}
          <select value={rounds} onChange={(e) => setRounds(Number((e.target as HTMLSelectElement).value))} data-testid="rounds">
            {[1, 3, 5, 10, 0].map((n) => (
              <option key={n} value={n}>
                {n === 0 ? t("openEnded") : n}
              </option>
            ))}
          </select>
        </label>
        {withPeople && (
          <label>
            {t("clock")}
            <select
              value={clockSeconds}
              onChange={(e) => setClockSeconds(Number((e.target as HTMLSelectElement).value))}
              data-testid="clock"
            >
              {CLOCK_CHOICES.map((n) => (
                <option key={n} value={n}>
                  {n === 0 ? t("clockOff") : t("clockSeconds", n)}
                </option>
              ))}
            </select>
            <span class="hint preset-text" data-testid="clock-text">
              {clockSeconds > 0 ? t("clockHint", BANK_MS / 1000) : ""}
            </span>
          </label>
        )}
        <details open={advancedOpen} onToggle={(e) => setAdvancedOpen((e.target as HTMLDetailsElement).open)} data-testid="advanced">
          <summary>{t("advanced")}</summary>
          <label>
            {t("apiKey")}
            <input
              ref={keyInput}
              type="password"
              value={apiKey}
              autocomplete="off"
              data-testid="api-key"
              onInput={(e) => setApiKey((e.target as HTMLInputElement).value)}
            />
          </label>
        </details>
        <button class="primary" type="submit" disabled={creating || ruleSets === undefined} data-testid="create">
          {creating ? t("creating") : t("create")}
        </button>
        {error && <p class="error" role="alert" data-testid="lobby-error">{error}</p>}
      </form>
      <form class="panel" onSubmit={open}>
        <h2>{t("join")}</h2>
        <p class="hint">{t("joinHint")}</p>
        <div class="join-row">
          <input
            value={joinText}
            placeholder="https://…#/g/… or game id"
            onInput={(e) => setJoinText((e.target as HTMLInputElement).value)}
            data-testid="join-input"
          />
          <button type="submit" disabled={!joinText.trim()}>
            {t("go")}
          </button>
        </div>
      </form>
    </main>
  );
}

function LinkRow({ label, link }: { label: string; link: string }): JSX.Element {
  const [copied, setCopied] = useState(false);
  return (
    <div class="link-row">
      <span>{label}</span>
      <input readOnly value={link} onFocus={(e) => (e.target as HTMLInputElement).select()} />
      <button
        type="button"
        onClick={() => {
          // The clipboard is offered to secure pages only (HTTPS, localhost): elsewhere the
          // link is selected in its box, to copy by hand.
          if (navigator.clipboard === undefined) return;
          void navigator.clipboard.writeText(link).then(() => setCopied(true), () => undefined);
        }}
      >
        {copied ? t("copied") : t("copy")}
      </button>
    </div>
  );
}
