// The decision the round waits for, made easy: which hand cards capture and what each would take,
// the two-card choice, 흔들기 and 폭탄, 국진 with the score either way, and go/stop with the score
// a stop collects now, what a 고 would make of it and how close the opponents are. What a choice is
// worth is the API's (../preview reads it from the view); every button is one of the view's legal
// actions (nothing else can be clicked), each with a number key.
import type { JSX } from "preact";

import { Phase, type GameView, type Score, type SeatView } from "../api";
import { cardName, GUKJIN, monthOf, SELLABLE } from "../cards";
import { lang, t, term, termKo } from "../i18n";
import { captureOf, gukjinScores, previewGo, previewStop } from "../preview";
import { seatNamer } from "../events";
import { Card } from "./Card";

export interface Choice {
  /** The key that makes this choice ("1", "2", …). */
  key: string;
  label: string;
  run: () => void;
  /** Enter makes this choice. */
  confirm?: boolean;
  disabled?: boolean;
  /** The legal action it submits (absent for a choice that only selects). */
  action?: number;
  cards?: number[];
  primary?: boolean;
}

export interface HandInfo {
  key: string;
  playable: boolean;
  captures: boolean;
  onClick: () => void;
  onHover?: (on: boolean) => void;
}

export interface DecisionModel {
  title: string;
  lines: string[];
  /** Extra content: the go/stop and 국진 arithmetic. */
  body?: JSX.Element | undefined;
  choices: Choice[];
  /** Choices that are hand-card selections are drawn on the hand, not as buttons. */
  buttons: Choice[];
  hand: Map<number, HandInfo>;
  highlight: Set<number>;
  cards?: number[];
}

/** A finger, not a mouse and keys: the prompts speak of taps. */
const TOUCH = typeof window !== "undefined" && (window.matchMedia?.("(pointer: coarse)").matches ?? false);

const SHAKE = 64;
const BOMB = 128;
const FLIP_ONLY = 150;
const CHOOSE = 160;
const KEEP_GUKJIN = 220;
const CONVERT_GUKJIN = 221;
const GO = 230;
const STOP = 231;

function keyOf(i: number): string {
  return i === 9 ? "0" : String(i + 1);
}

/** What playing `c` would take from the floor, in words, and the floor cards concerned: its legal
 * play's capture hint (the API's). */
export function takes(view: GameView, c: number): { text: string; cards: number[] } {
  const hint = captureOf(view, c, monthOf(c));
  if (hint === undefined) return { text: "", cards: [] };
  if (hint.chooseFrom.length > 0) {
    return { text: t("choosesOne", hint.chooseFrom.map(cardName).join(" / ")), cards: [...hint.chooseFrom] };
  }
  const taken = [...hint.takes];
  if (taken.length === 0) return { text: t("laysDown"), cards: [] };
  if (taken.length === 1) return { text: t("takes", cardName(taken[0] ?? -1)), cards: taken };
  return { text: t("takesStack", taken.length), cards: taken };
}

function parts(s: Score | undefined): string {
  if (s === undefined) return t("noCategories");
  const items = (["gwang", "yeol", "godori", "tti", "hongdan", "cheongdan", "chodan", "pi", "sseul"] as const)
    .filter((k) => s[k] > 0)
    .map((k) => `${term(k)} ${s[k]}`);
  return items.join(" + ") || t("noCategories");
}

function GoStopBody({ view, me }: { view: GameView; me: SeatView }): JSX.Element | null {
  const namer = seatNamer(view);
  const losers = view.seats.filter((s) => s.active && s.seat !== me.seat);
  const preview = previewStop(view);
  const go = previewGo(view);
  if (preview === undefined || go === undefined) return null;
  const base = me.score?.total ?? 0;
  const { nextGo, afterGo, multiplier } = go;
  const threshold = view.rules?.goThreshold ?? 7;
  const ko = lang() === "ko";
  return (
    <div class="gostop" data-testid="gostop-detail">
      <div class="gostop-col stop">
        <h4>{t("stopNow")}</h4>
        <p class="big" data-testid="stop-total">
          {preview.total}
          <small>{t("points")}</small>
        </p>
        <p>
          {t("base")} {base} ({parts(me.score)})
          {me.gos > 0 && <> → {me.gos}고 {preview.goPoints}</>}
          {preview.winnerFactors.map((f) => ` × ${f.value} ${term(f.name)}`).join("")}
        </p>
        <ul>
          {preview.bills.map((b) => (
            <li key={b.seat} title={b.factors.map((f) => term(f.name)).join(", ")}>
              {namer(b.seat)}: {preview.goPoints}
              {preview.winnerFactors.map((f) => ` × ${f.value}`).join("")}
              {b.factors.map((f) => ` × ${f.value} ${termKo(f.name)}`).join("")} = <strong>{b.points}</strong>
              {b.pays !== b.points && ` → ${b.pays}`}
            </li>
          ))}
        </ul>
      </div>
      <div class="gostop-col go">
        <h4>{t("goNext")}</h4>
        <p class="big">
          {nextGo}고<small> → {afterGo}+</small>
        </p>
        <p>{t("goAfter", nextGo, base, afterGo)}</p>
        {multiplier > 1 && <p>{ko ? `${nextGo}고부터는 ×${multiplier}` : `from ${nextGo}고 on: ×${multiplier}`}</p>}
        {go.gobak && <p class="warn">{losers.length >= 2 ? t("goRisk3") : t("goRisk")}</p>}
      </div>
      <div class="gostop-col threat">
        <h4>{t("threat")}</h4>
        <ul>
          {losers.map((o) => (
            <li key={o.seat} class={(o.score?.total ?? 0) >= threshold - 2 ? "warn" : ""}>
              {t("threatLine", namer(o.seat), o.score?.total ?? 0, threshold, o.handSize)}
              {o.gos > 0 && ` · ${o.gos}고`}
              {o.multiplier > 1 && ` · ×${o.multiplier}`}
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}

function GukjinBody({ view }: { view: GameView }): JSX.Element | null {
  const scores = gukjinScores(view);
  if (scores === undefined) return null;
  const { keep, convert } = scores;
  return (
    <div class="gukjin" data-testid="gukjin-detail">
      <p data-testid="gukjin-keep">
        <strong>{t("gukjinKeep")}</strong>: {t("scoreWould", keep.total)} — {t("yeolCount", keep.yeolCount)}, {t("piCount", keep.piValue)} ({parts(keep)})
      </p>
      <p data-testid="gukjin-convert">
        <strong>{t("gukjinConvert")}</strong>: {t("scoreWould", convert.total)} — {t("yeolCount", convert.yeolCount)}, {t("piCount", convert.piValue)} ({parts(convert)})
      </p>
    </div>
  );
}

/**
 * The decision model of the view for its viewer: what the hand cards do, which prompt to show and
 * its choices. `selected` is the hand card picked (shown with what it would take) before it is played.
 */
export function choicesFor(
  view: GameView,
  me: SeatView,
  selected: number | undefined,
  select: (c: number | undefined) => void,
  act: (id: number) => void,
  busy: boolean,
): DecisionModel | undefined {
  const legal = new Set(view.legalActions.map((a) => a.id));
  const hand = new Map<number, HandInfo>();
  const highlight = new Set<number>();
  const mine = view.toMove === me.seat && legal.size > 0;
  const ko = lang() === "ko";
  const phase = view.phase;

  // Hand cards: which capture (always shown), which are playable now.
  me.hand.forEach((c, i) => {
    const m = monthOf(c);
    const captures = m !== 0 && view.floor.some((f) => monthOf(f) === m);
    const playable = phase === Phase.PLAY && mine && (legal.has(c) || legal.has(SHAKE + c) || legal.has(BOMB + m));
    hand.set(c, {
      key: keyOf(i),
      playable,
      captures,
      onClick: () => {
        if (!playable || busy) return;
        if (selected === c && legal.has(c) && !legal.has(SHAKE + c) && !legal.has(BOMB + m)) act(c);
        else select(c);
      },
    });
  });
  if (!mine) return { title: "", lines: [], choices: [], buttons: [], hand, highlight };

  const choices: Choice[] = [];
  const buttons: Choice[] = [];
  const add = (c: Choice, asButton = true): void => {
    choices.push(c);
    if (asButton) buttons.push(c);
  };
  const lines: string[] = [];
  let title = "";
  let body: JSX.Element | undefined;
  let cards: number[] | undefined;

  if (phase === Phase.PLAY) {
    if (selected === undefined || !me.hand.includes(selected)) {
      title = t(TOUCH ? "selectCardTouch" : "selectCard");
      me.hand.forEach((c, i) => {
        const info = hand.get(c);
        if (info?.playable) add({ key: keyOf(i), label: cardName(c), run: () => select(c) }, false);
      });
      if (legal.has(FLIP_ONLY)) {
        add({ key: keyOf(me.hand.length), label: t("flipOnly"), run: () => act(FLIP_ONLY), action: FLIP_ONLY });
      }
    } else {
      const c = selected;
      const m = monthOf(c);
      const what = takes(view, c);
      for (const f of what.cards) highlight.add(f);
      title = `${cardName(c)}: ${what.text}`;
      cards = [c];
      if (legal.has(BOMB + m)) {
        lines.push(t("bombExplain", m));
        add({ key: "1", label: t("bombYes"), run: () => act(BOMB + m), action: BOMB + m, confirm: true, primary: true });
        if (legal.has(c)) add({ key: "2", label: t("bombNo"), run: () => act(c), action: c });
      } else if (legal.has(SHAKE + c)) {
        lines.push(t("shakeExplain", m));
        add({ key: "1", label: t("shakeYes"), run: () => act(SHAKE + c), action: SHAKE + c, confirm: true, primary: true });
        if (legal.has(c)) add({ key: "2", label: t("shakeNo"), run: () => act(c), action: c });
      } else {
        const key = hand.get(c)?.key ?? "1";
        add({ key, label: `${t("play")} ${cardName(c)}`, run: () => act(c), action: c, confirm: true, primary: true });
      }
      // Another hand card's number picks that card instead.
      me.hand.forEach((other, i) => {
        if (other !== c && hand.get(other)?.playable && !choices.some((x) => x.key === keyOf(i))) {
          add({ key: keyOf(i), label: cardName(other), run: () => select(other) }, false);
        }
      });
      buttons.push({ key: "Esc", label: t("cancel"), run: () => select(undefined) });
    }
  } else if (phase === Phase.CHOOSE_HAND || phase === Phase.CHOOSE_FLIP) {
    const options = (view.pending?.options ?? []).filter((c) => legal.has(CHOOSE + c));
    const source = phase === Phase.CHOOSE_HAND ? view.pending?.played : view.pending?.flipped;
    title = t("choosePrompt");
    if (source !== undefined && source >= 0) {
      lines.push(t(phase === Phase.CHOOSE_HAND ? "chooseHand" : "chooseFlip", cardName(source)));
      cards = [source];
    }
    options.forEach((c, i) => {
      highlight.add(c);
      add({ key: String(i + 1), label: cardName(c), cards: [c], run: () => act(CHOOSE + c), action: CHOOSE + c, confirm: i === 0 });
    });
  } else if (phase === Phase.GUKJIN) {
    title = t("gukjinPrompt");
    cards = [GUKJIN];
    body = <GukjinBody view={view} />;
    if (legal.has(KEEP_GUKJIN)) add({ key: "1", label: t("gukjinKeep"), run: () => act(KEEP_GUKJIN), action: KEEP_GUKJIN, confirm: true });
    if (legal.has(CONVERT_GUKJIN)) add({ key: "2", label: t("gukjinConvert"), run: () => act(CONVERT_GUKJIN), action: CONVERT_GUKJIN });
  } else if (phase === Phase.GO_STOP) {
    title = t("goStopPrompt");
    body = <GoStopBody view={view} me={me} />;
    if (legal.has(GO)) add({ key: "1", label: ko ? `고 (${me.gos + 1}고)` : `고 — go (${me.gos + 1}고)`, run: () => act(GO), action: GO, primary: true });
    if (legal.has(STOP)) add({ key: "2", label: ko ? "스톱" : "스톱 — stop", run: () => act(STOP), action: STOP, confirm: true });
  } else if (phase === Phase.SIT_OUT) {
    title = t("sitOutPrompt");
    if (legal.has(240)) add({ key: "1", label: t("joinRound"), run: () => act(240), action: 240, confirm: true });
    if (legal.has(241)) add({ key: "2", label: t("sitOut"), run: () => act(241), action: 241 });
  } else if (phase === Phase.GWANG_SALE) {
    title = t("gwangSalePrompt");
    cards = me.hand.filter((c) => SELLABLE.has(c));
    if (legal.has(251)) add({ key: "1", label: t("sellGwang"), run: () => act(251), action: 251, confirm: true });
    if (legal.has(250)) add({ key: "2", label: t("declineGwang"), run: () => act(250), action: 250 });
  }
  // Anything legal the prompts above do not offer (a future action kind) is still reachable.
  const offered = new Set(choices.flatMap((c) => (c.action !== undefined ? [c.action] : [])));
  const handled = phase === Phase.PLAY;
  if (!handled) {
    for (const a of view.legalActions) {
      if (!offered.has(a.id)) {
        add({ key: String(choices.length + 1), label: a.label, run: () => act(a.id), action: a.id });
      }
    }
  }
  for (const c of choices) c.disabled = busy;
  return { title, lines, body, choices, buttons, hand, highlight, ...(cards ? { cards } : {}) };
}

/** The prompt: title, explanation, the numbered choices. */
export function Decision({ decision }: { decision: DecisionModel }): JSX.Element | null {
  if (!decision.title && decision.buttons.length === 0) return null;
  if (decision.buttons.length === 0 && decision.body === undefined && decision.lines.length === 0) {
    // Nothing to press but the hand: a line, not a box.
    return (
      <div class="decision hint-only" data-testid="decision">
        {decision.title}
      </div>
    );
  }
  return (
    <div class="decision" data-testid="decision" role="group" aria-label={decision.title}>
      <div class="decision-head">
        {decision.cards?.map((c) => <Card key={c} id={c} class="small" />)}
        <strong>{decision.title}</strong>
      </div>
      <div class="decision-body">
        {decision.lines.map((l, i) => (
          <p key={i}>{l}</p>
        ))}
        {decision.body}
      </div>
      <div class="choices">
        {decision.buttons.map((c) => (
          <button
            key={`${c.key}-${c.label}`}
            class={`choice ${c.primary ? "primary" : ""}`}
            disabled={c.disabled}
            data-testid={c.action !== undefined ? "choice" : "choice-aux"}
            data-action={c.action}
            onClick={c.run}
          >
            <span class="key">{c.key}</span>
            {c.cards?.map((x) => <Card key={x} id={x} class="small" />)}
            {c.label}
          </button>
        ))}
      </div>
    </div>
  );
}
