// What the prompts promise, as the API gives it: at go/stop the settlement a stop would give now and
// what the next 고 adds (GameView.stopPreview), at 국진 the score either way (GameView.gukjinPreview),
// and what a play takes from the floor (LegalAction.capture). The engine computes them from the
// seat's view (docs/service.md, "What a decision is worth"); the page only reads them, and holds no
// scoring or settlement rules of its own. Pure functions of a GameView (no drawing), so that a test
// can run them on the API's views.
import type { CaptureHint, GameView, Score } from "./api";

export interface FactorLine {
  name: string;
  value: number;
}

export interface BillLine {
  seat: number;
  factors: FactorLine[];
  points: number;
  pays: number;
  covers: number[];
}

export interface StopLines {
  /** The go score of the stop now (before the factors). */
  goPoints: number;
  winnerFactors: FactorLine[];
  bills: BillLine[];
  /** What the stop collects: every payer's pays. */
  total: number;
}

export interface GoLines {
  /** The go count after one more 고. */
  nextGo: number;
  /** The go score of the current base after it. */
  afterGo: number;
  /** Its doubling (1 before the third 고). */
  multiplier: number;
  /** 고박 applies under these rules. */
  gobak: boolean;
}

const SHAKE = 64;
const BOMB = 128;

function factors(list: readonly { name: string; value: bigint }[]): FactorLine[] {
  return list.map((f) => ({ name: f.name, value: Number(f.value) }));
}

/** The settlement a stop would give now, as the API gives it to the seat deciding 고 or 스톱. */
export function previewStop(view: GameView): StopLines | undefined {
  const s = view.stopPreview?.settlement;
  if (s === undefined) return undefined;
  const bills = s.bills.map((b) => ({
    seat: b.seat,
    factors: factors(b.factors),
    points: Number(b.points),
    pays: Number(b.pays),
    covers: [...b.covers],
  }));
  return {
    goPoints: Number(s.goScore),
    winnerFactors: factors(s.winnerFactors),
    bills,
    total: bills.reduce((t, b) => t + b.pays, 0),
  };
}

/** What the next 고 makes of the current base, as the API gives it. */
export function previewGo(view: GameView): GoLines | undefined {
  const p = view.stopPreview;
  if (p?.nextGo === undefined) return undefined;
  return { nextGo: p.nextGo.gos, afterGo: Number(p.nextGo.goScore), multiplier: Number(p.nextGo.multiplier), gobak: p.gobak };
}

/** The deciding seat's score with 국진 kept and made a 쌍피, as the API gives it. */
export function gukjinScores(view: GameView): { keep: Score; convert: Score } | undefined {
  const p = view.gukjinPreview;
  if (p?.keep === undefined || p.convert === undefined) return undefined;
  return { keep: p.keep, convert: p.convert };
}

/**
 * What playing hand card `c` takes from the floor, from its legal play's capture hint (the plain
 * play, else its 흔들기, else the 폭탄 of its month); undefined when `c` is not playable now.
 */
export function captureOf(view: GameView, c: number, month: number): CaptureHint | undefined {
  const ids = [c, SHAKE + c, ...(month !== 0 ? [BOMB + month] : [])];
  for (const id of ids) {
    const hint = view.legalActions.find((a) => a.id === id)?.capture;
    if (hint !== undefined) return hint;
  }
  return undefined;
}
