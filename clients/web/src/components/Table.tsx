// The table: the other seats (hands face down with their counts, captured piles by kind, base
// scores), the floor grouped by month, the stock, the viewer's piles and hand, the decision the
// round waits for, the last action and the log, and the settlement once the round is over; on a
// table with a turn clock, the countdown of the decision in progress, the away and auto-play
// badges, the viewer's auto-play switch and whether each other seat is connected.
import type { JSX } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

import { Phase, type GameView, type SeatView } from "../api";
import { cardName, MONTH_NAMES_KO, monthOf, pileKind, type Kind } from "../cards";
import { eventLine, flashText, isSpecial, reconnections, seatNamer, type SeatName } from "../events";
import { lang, setLang, t } from "../i18n";
import { navigate, spectatorLink } from "../session";
import { Table as TableModel, type LoggedEvent, type TableState } from "../table";
import { Card } from "./Card";
import { AutoPlaySwitch, ClockBadges, Countdown, Presence } from "./Clock";
import { Decision, choicesFor, type Choice } from "./Decision";
import { SettlementView } from "./Settlement";

function useTable(gameId: string): [TableModel, TableState] {
  const model = useMemo(() => new TableModel(gameId), [gameId]);
  const [state, setState] = useState(model.state);
  useEffect(() => {
    const off = model.subscribe(() => setState(model.state));
    void model.open();
    return () => {
      off();
      model.close();
    };
  }, [model]);
  return [model, state];
}

/** The other language, for the drawer (the page's header is folded away on a small screen). */
function switchLang(): void {
  setLang(lang() === "ko" ? "en" : "ko");
  window.dispatchEvent(new Event("gostop-lang"));
}

/** Wide enough for the log beside the table. */
const WIDE = "(min-width: 1000px) and (min-height: 600px)";

const KINDS: readonly Kind[] = ["gwang", "yeol", "tti", "pi"];
const KIND_LABEL: Record<Kind, string> = { gwang: "광", yeol: "열끗", tti: "띠", pi: "피" };

function Piles({ seat, converted, compact }: { seat: SeatView; converted: boolean; compact?: boolean }): JSX.Element {
  const groups = KINDS.map((kind) => ({
    kind,
    cards: seat.captured.filter((c) => pileKind(c, converted) === kind),
  }));
  const score = seat.score;
  const counts: Record<Kind, string> = {
    gwang: String(score?.gwangCount ?? 0),
    yeol: String(score?.yeolCount ?? 0),
    tti: String(score?.ttiCount ?? 0),
    pi: String(score?.piValue ?? 0),
  };
  return (
    <div class={`piles ${compact ? "compact" : ""}`} data-testid={`piles-${seat.seat}`}>
      {groups.map((g) => (
        <div class={`pile pile-${g.kind}`} key={g.kind} data-kind={g.kind} data-count={g.cards.length}>
          <div class="pile-head">
            <span class="pile-name">{KIND_LABEL[g.kind]}</span>
            <span class="pile-count">{counts[g.kind]}</span>
          </div>
          <div class="pile-cards">
            {g.cards.map((c) => (
              <Card key={c} id={c} class="small" converted={converted && c === 32} />
            ))}
          </div>
        </div>
      ))}
    </div>
  );
}

function ScoreBadge({ seat, view }: { seat: SeatView; view: GameView }): JSX.Element {
  const s = seat.score;
  const parts = s
    ? ([["gwang", s.gwang], ["yeol", s.yeol], ["godori", s.godori], ["tti", s.tti], ["hongdan", s.hongdan],
        ["cheongdan", s.cheongdan], ["chodan", s.chodan], ["pi", s.pi], ["sseul", s.sseul]] as const).filter(([, v]) => v > 0)
    : [];
  const threshold = view.rules?.goThreshold ?? 7;
  const total = s?.total ?? 0;
  return (
    <div class={`score ${total >= threshold ? "hot" : ""}`} data-testid={`score-${seat.seat}`} data-score={total}>
      <span class="score-total">
        {total}
        <small>{t("points")}</small>
      </span>
      <span class="score-parts">
        {parts.length ? parts.map(([k, v]) => `${TERM_KO[k]} ${v}`).join(" · ") : t("noCategories")}
      </span>
      {seat.gos > 0 && <span class="badge go">{t("gos", seat.gos)}</span>}
      {seat.multiplier > 1 && <span class="badge mult">{t("multiplierShort", seat.multiplier)}</span>}
      {seat.ppeok > 0 && <span class="badge ppeok">{t("ppeokCount", seat.ppeok)}</span>}
      {seat.spareFlips > 0 && <span class="badge">{t("spareFlips", seat.spareFlips)}</span>}
    </div>
  );
}

const TERM_KO: Record<string, string> = {
  gwang: "광", yeol: "열끗", godori: "고도리", tti: "띠", hongdan: "홍단", cheongdan: "청단", chodan: "초단", pi: "피",
  sseul: "쓸",
};

function Opponent({ seat, view, name, recent }: { seat: SeatView; view: GameView; name: string; recent: Set<number> }): JSX.Element {
  const hidden = Math.max(0, seat.handSize - seat.hand.length);
  const toMove = view.toMove === seat.seat && view.phase !== Phase.OVER;
  return (
    <section
      class={`seat opponent ${toMove ? "to-move" : ""} ${seat.active ? "" : "inactive"}`}
      data-testid={`seat-${seat.seat}`}
      data-hand-size={seat.handSize}
    >
      <header>
        <strong>{name}</strong>
        <Presence seat={seat} view={view} />
        {view.dealer === seat.seat && <span class="badge dealer">{t("dealer")}</span>}
        {!seat.active && <span class="badge">{t("sittingOut")}</span>}
        <ClockBadges seat={seat} />
        <Countdown clock={view.clock} seat={seat.seat} />
        <ScoreBadge seat={seat} view={view} />
        <div class="backs" aria-label={`${name}: ${seat.handSize} ${t("cards")}`}>
          {seat.hand.map((c) => (
            <Card key={c} id={c} class={`tiny revealed ${recent.has(c) ? "recent" : ""}`} />
          ))}
          {Array.from({ length: Math.min(hidden, 10) }, (_, i) => (
            <Card key={`b${i}`} id={-1} back class="tiny" />
          ))}
        </div>
        <span class="hand-count" data-testid={`hand-count-${seat.seat}`}>
          {t("hand")} {seat.handSize}
          {lang() === "ko" ? "장" : ""}
        </span>
      </header>
      <Piles seat={seat} converted={view.gukjin === "converted"} compact />
    </section>
  );
}

function Floor({ view, highlight, recent }: { view: GameView; highlight: Set<number>; recent: Set<number> }): JSX.Element {
  const byMonth = new Map<number, number[]>();
  for (const c of view.floor) {
    const m = monthOf(c);
    byMonth.set(m, [...(byMonth.get(m) ?? []), c]);
  }
  const stacks = new Map(view.stacks.map((s) => [s.month, s.maker]));
  const months = [...byMonth.keys()].sort((a, b) => a - b);
  const namer = seatNamer(view);
  return (
    <section class="floor" data-testid="floor" aria-label={t("floor")}>
      <div class="floor-months">
        {months.map((m) => {
          const maker = stacks.get(m);
          return (
            <div
              class={`month-group ${maker !== undefined ? "stack" : ""} ${(byMonth.get(m) ?? []).some((c) => highlight.has(c)) ? "target" : ""}`}
              key={m}
              data-month={m}
            >
              <div class="month-label">
                {m}월 {MONTH_NAMES_KO[m - 1]}
                {maker !== undefined && <span class="badge ppeok">{maker >= 0 ? `뻑 · ${namer(maker)}` : t("startTriple")}</span>}
              </div>
              <div class="month-cards">
                {(byMonth.get(m) ?? []).map((c) => (
                  <Card key={c} id={c} class={`${highlight.has(c) ? "highlight" : ""} ${recent.has(c) ? "recent" : ""}`} />
                ))}
              </div>
            </div>
          );
        })}
        {months.length === 0 && <div class="floor-empty">{t("floor")} —</div>}
      </div>
      <div class="stock" data-testid="stock" data-count={view.stockCount}>
        <div class="stock-pile">
          {view.stockCount > 0 && <Card id={-1} back />}
          {view.stockCount > 1 && <Card id={-1} back class="under" />}
        </div>
        <span>
          {t("stock")} <strong>{view.stockCount}</strong>
        </span>
      </div>
    </section>
  );
}

/** The log without the seats' comings and goings (no actions: the last-action panel and the glow skip them). */
function actions(log: LoggedEvent[]): LoggedEvent[] {
  return log.filter((e) => e.event.kind.case !== "seatPresence");
}

/** The cards the latest action played and flipped (glow on the table). */
function recentCards(log: LoggedEvent[]): Set<number> {
  const last = log[log.length - 1];
  const out = new Set<number>();
  if (last === undefined) return out;
  for (let i = log.length - 1; i >= 0; i--) {
    const e = log[i];
    if (e === undefined || e.version !== last.version) break;
    const k = e.event.kind;
    if (k.case === "cardPlayed" || k.case === "cardFlipped" || k.case === "cardLaid") out.add(k.value.card);
    if (k.case === "captured" || k.case === "bombed") for (const c of k.value.cards) out.add(c);
  }
  return out;
}

/** The latest two actions (usually one's own and the opponent's), their cards and their events. */
function LastAction({ log, namer }: { log: LoggedEvent[]; namer: SeatName }): JSX.Element | null {
  const last = log[log.length - 1];
  if (last === undefined) return null;
  // Oldest first: read top-down, the panel tells the two actions in the order they happened.
  const versions = [...new Set(log.map((e) => e.version))].slice(-2);
  return (
    <section class="last-action" data-testid="last-action" data-version={String(last.version)}>
      <h3>{t("lastAction")}</h3>
      {versions.map((v, i) => {
        const events = log.filter((e) => e.version === v);
        const shown = events.map((e) => ({ e, text: eventLine(e.event, namer) })).filter((x) => x.text);
        const played = events.flatMap((e) =>
          e.event.kind.case === "cardPlayed" || e.event.kind.case === "cardFlipped" ? [e.event.kind.value.card] : [],
        );
        return (
          <div class={`action-group ${i === 0 && versions.length > 1 ? "older" : ""}`} key={String(v)} data-version={String(v)}>
            {played.length > 0 && (
              <div class="last-cards">
                {played.map((c, k) => (
                  <Card key={`${c}-${k}`} id={c} class="small" />
                ))}
              </div>
            )}
            <ul>
              {shown.map(({ e, text }) => (
                <li key={e.n} class={isSpecial(e.event) ? "special" : ""}>
                  {text.trim()}
                </li>
              ))}
            </ul>
          </div>
        );
      })}
    </section>
  );
}

function Log({ log, namer, open }: { log: LoggedEvent[]; namer: SeatName; open: boolean }): JSX.Element {
  const ref = useRef<HTMLOListElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [log.length, open]);
  const back = useMemo(() => reconnections(log), [log]);
  return (
    <details class="log" open={open} data-testid="log" data-events={log.length}>
      <summary>
        {t("log")} ({log.length})
      </summary>
      <ol ref={ref}>
        {log.map((e) => {
          const text = eventLine(e.event, namer, back.has(e.n));
          if (!text) return null;
          return (
            <li key={e.n} class={`${isSpecial(e.event) ? "special" : ""} ${text.startsWith("  ") ? "sub" : ""}`} data-version={String(e.version)}>
              {text.trim()}
            </li>
          );
        })}
      </ol>
    </details>
  );
}

/** The special events of the latest version, flashed over the table as they arrive. */
function Flash({ log, namer }: { log: LoggedEvent[]; namer: SeatName }): JSX.Element | null {
  const last = log[log.length - 1];
  if (last === undefined || !last.live) return null;
  const pills = log
    .filter((e) => e.version === last.version && e.live)
    .flatMap((e) => {
      const f = flashText(e.event, namer);
      return f ? [{ n: e.n, ...f }] : [];
    });
  if (pills.length === 0) return null;
  return (
    <div class="flash" key={String(last.version)} data-testid="flash" aria-live="polite">
      {pills.map((p) => (
        <span class="flash-pill" key={p.n}>
          <strong>{p.word}</strong>
          {p.who && <small>{p.who}</small>}
        </span>
      ))}
    </div>
  );
}

/** Copies the spectator link (or shows it to copy by hand where the clipboard is not offered). */
function ShareButton({ link }: { link: string }): JSX.Element {
  const [copied, setCopied] = useState(false);
  return (
    <button
      class="link"
      title={link}
      onClick={() => {
        const fallback = (): void => void window.prompt(t("spectate"), link);
        if (navigator.clipboard === undefined) {
          fallback();
          return;
        }
        navigator.clipboard.writeText(link).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1500);
        }, fallback);
      }}
    >
      {copied ? t("copied") : t("share")}
    </button>
  );
}

export function TablePage({ gameId }: { gameId: string }): JSX.Element {
  const [model, state] = useTable(gameId);
  const { view } = state;
  const [selected, setSelected] = useState<number | undefined>();
  // Beside the table where there is room; elsewhere a drawer the bar's button (or L) opens.
  const [logOpen, setLogOpen] = useState(() => window.matchMedia?.(WIDE).matches ?? true);
  const [settlementOpen, setSettlementOpen] = useState(true);
  const choicesRef = useRef<Choice[]>([]);

  // A new decision clears the selection; a new round brings the settlement back next time.
  const decisionKey = view ? `${view.version}` : "";
  useEffect(() => setSelected(undefined), [decisionKey]);
  useEffect(() => {
    if (view?.phase === Phase.OVER) setSettlementOpen(true);
  }, [view?.phase, view?.match?.roundNo]);

  const namer = seatNamer(view);
  const acted = useMemo(() => actions(state.log), [state.log]);
  const recent = useMemo(() => recentCards(acted), [acted]);
  const me = view?.seats.find((s) => s.seat === view.viewer);
  const decision = view && me ? choicesFor(view, me, selected, setSelected, (id) => void model.act(id), state.busy) : undefined;
  const canDeal = view?.phase === Phase.OVER && view.viewer >= 0 && !view.match?.finished;
  choicesRef.current = canDeal
    ? [{ key: "1", label: t("nextRound"), confirm: true, run: () => void model.nextRound() }]
    : (decision?.choices ?? []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      const target = e.target as HTMLElement | null;
      if (target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA")) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "Escape") {
        setSelected(undefined);
        return;
      }
      if (e.key === "l" || e.key === "L") {
        setLogOpen((o) => !o);
        return;
      }
      const choices = choicesRef.current;
      if (e.key === "Enter") {
        const confirm = choices.find((c) => c.confirm);
        if (confirm && !confirm.disabled) {
          e.preventDefault();
          confirm.run();
        }
        return;
      }
      const choice = choices.find((c) => c.key === e.key);
      if (choice && !choice.disabled) {
        e.preventDefault();
        choice.run();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  if (state.notFound) {
    return (
      <main class="table-page">
        <section class="panel gone" data-testid="gone" role="alert">
          <h2>{t("notFound")}</h2>
          <p>{t("notFoundHint")}</p>
          <button class="primary" data-testid="to-lobby" onClick={() => navigate({ name: "lobby" })}>
            {t("leave")}
          </button>
        </section>
      </main>
    );
  }
  if (view === undefined) {
    return (
      <main class="table-page loading">
        <p>{state.error ?? t("connecting")}</p>
      </main>
    );
  }

  const others = view.seats.filter((s) => s.seat !== view.viewer);
  const over = view.phase === Phase.OVER;
  const match = view.match;
  const highlight = decision?.highlight ?? new Set<number>();
  // A prompt with buttons is open ("prompting": one that is not the play itself, the hand idle).
  const asking = (decision?.buttons.length ?? 0) > 0 || decision?.body !== undefined;
  const status = over
    ? t("settlement")
    : view.viewer >= 0 && view.toMove === view.viewer
      ? t("yourTurn")
      : t("waiting", namer(view.toMove));

  return (
    <main
      class={`table-page ${view.viewer < 0 ? "spectating" : ""}`}
      data-testid="table"
      data-phase={Phase[view.phase]}
      data-version={String(state.version)}
      data-viewer={view.viewer}
      data-to-move={view.toMove}
      data-connection={state.connection}
      data-reconnects={state.reconnects}
      data-busy={state.busy ? "1" : "0"}
    >
      <div class="table-bar">
        <span class="game-meta">
          {view.preset} ·{" "}
          {match && match.rounds > 0 ? t("roundOf", match.roundNo, match.rounds) : t("round", match?.roundNo ?? 1)}
          {view.carry && <span class="badge mult">나가리 ×2</span>}
        </span>
        <span class={`turn ${view.toMove === view.viewer && !over ? "mine" : ""}`} data-testid="status">
          {status}
        </span>
        {view.viewer >= 0 && <Countdown clock={view.clock} seat={view.viewer} mine />}
        <span class={`conn conn-${state.connection}`} data-testid="connection">
          {t(state.connection === "ended" ? "live" : state.connection)}
        </span>
        {over && view.settlement && !settlementOpen && (
          <button class="primary small" data-testid="show-settlement" onClick={() => setSettlementOpen(true)}>
            {t("showSettlement")}
          </button>
        )}
        <span class="bar-end">
          {view.clock && me && !match?.finished && (
            <AutoPlaySwitch on={me.autoPlay} disabled={state.busy} onToggle={(on) => void model.setAutoPlay(on)} />
          )}
          <ShareButton link={spectatorLink(gameId)} />
          <button class="link log-toggle" data-testid="log-toggle" aria-expanded={logOpen} onClick={() => setLogOpen((o) => !o)}>
            {t("log")}
          </button>
          <button class="link" data-testid="leave" onClick={() => navigate({ name: "lobby" })}>
            ← {t("leave")}
          </button>
        </span>
      </div>
      <div class={`table-grid ${asking ? "asking" : ""} ${asking && view.phase !== Phase.PLAY ? "prompting" : ""}`}>
        <div class="felt">
          <div class={`opponents n${others.length}`}>
            {others.map((s) => (
              <Opponent key={s.seat} seat={s} view={view} name={namer(s.seat)} recent={recent} />
            ))}
          </div>
          <Floor view={view} highlight={highlight} recent={recent} />
          {me && (
            <section class={`seat mine ${view.toMove === me.seat && !over ? "to-move" : ""}`} data-testid={`seat-${me.seat}`}>
              <div class="mine-info" data-testid="mine-info">
                <header>
                  <strong>{namer(me.seat)}</strong>
                  {view.dealer === me.seat && <span class="badge dealer">{t("dealer")}</span>}
                  <ClockBadges seat={me} />
                  <ScoreBadge seat={me} view={view} />
                </header>
                <Piles seat={me} converted={view.gukjin === "converted"} />
              </div>
              {decision && <Decision decision={decision} />}
              <div class="hand" data-testid="hand" aria-label={t("hand")}>
                {me.hand.map((c, i) => {
                  const info = decision?.hand.get(c);
                  return (
                    <button
                      key={c}
                      class={`hand-card ${info?.captures ? "captures" : ""} ${selected === c ? "selected" : ""} ${info?.playable ? "playable" : ""}`}
                      disabled={!info?.playable || state.busy}
                      data-testid="hand-card"
                      data-card={c}
                      aria-pressed={selected === c}
                      aria-label={`${i + 1}: ${cardName(c)}${info?.captures ? ` (${t("captures")})` : ""}`}
                      onClick={() => info?.onClick()}
                      onMouseEnter={() => info?.onHover?.(true)}
                      onMouseLeave={() => info?.onHover?.(false)}
                    >
                      <Card id={c} />
                      {info?.playable && <span class="key">{info.key}</span>}
                      {info?.captures && <span class="capture-mark" aria-hidden="true">▲</span>}
                    </button>
                  );
                })}
              </div>
            </section>
          )}
          {view.viewer < 0 && <p class="hint">{t("spectator")}</p>}
          <Flash log={acted} namer={namer} />
        </div>
        <aside class={`side ${logOpen ? "open" : ""}`} data-testid="side">
          <button class="link side-close" onClick={() => setLogOpen(false)} aria-label={t("close")}>
            ✕
          </button>
          <LastAction log={acted} namer={namer} />
          <Log log={state.log} namer={namer} open />
          <p class="hint keys" data-testid="keys">{t("keys")}</p>
          <button class="link side-lang" onClick={switchLang}>
            {t("langSwitch")}
          </button>
        </aside>
      </div>
      {state.notice && (
        <div class="toast" role="status" onClick={() => model.clearError()}>
          {t(state.notice)}
        </div>
      )}
      {state.error && (
        <div class="toast error" role="alert" onClick={() => model.clearError()}>
          {t("error")}: {state.error}
        </div>
      )}
      {over && view.settlement && settlementOpen && (
        <SettlementView view={view} namer={namer} busy={state.busy} onNext={() => void model.nextRound()} onClose={() => setSettlementOpen(false)} />
      )}
    </main>
  );
}

