// The settlement's sentences, apart from how they are drawn: why each multiplier and 박 applies
// (or does not), and how a category's count becomes its points — in either language, with the
// viewer as "You" agreeing in person ("you have", "your own").
import type { GameView, Settlement } from "./api";
import { MONTH_NAMES_KO } from "./cards";
import { has, inSentence, possessive, type SeatName } from "./events";
import { lang } from "./i18n";

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function months(ms: readonly number[]): string {
  return ms.map((m) => `${m}월 ${MONTH_NAMES_KO[m - 1] ?? ""}`).join(", ");
}

/** Why a factor applies, in words, from the settlement and the final view. */
export function reason(name: string, s: Settlement, view: GameView, seat: number, namer: SeatName): string {
  const ko = lang() === "ko";
  const winner = view.seats.find((x) => x.seat === s.winner);
  const loser = view.seats.find((x) => x.seat === seat);
  const r = view.rules;
  switch (name) {
    case "shake_bomb": {
      const shakes = winner?.shakes ?? [];
      const bombs = winner?.bombs ?? [];
      const what = [shakes.length ? `흔들기 ${months(shakes)}` : "", bombs.length ? `폭탄 ${months(bombs)}` : ""].filter(Boolean).join("; ");
      return `${namer(s.winner)}: ${what}`;
    }
    case "own_shake_bomb": {
      const what = [...(loser?.shakes ?? []), ...(loser?.bombs ?? [])];
      return ko ? `${namer(seat)}: 자기 흔들기/폭탄 (${months(what)})` : `${capital(possessive(namer(seat)))} own 흔들기/폭탄 (${months(what)})`;
    }
    case "meongbak":
      return ko
        ? `승자의 열끗 ${s.score?.yeolCount ?? 0}장 (${r?.meongbakMinYeol ?? 7}장 이상)`
        : `the winner holds ${s.score?.yeolCount ?? 0} 열끗 (${r?.meongbakMinYeol ?? 7} or more)`;
    case "nagari_carry":
      return ko ? "지난 판이 나가리" : "the round after a 나가리";
    case "pibak": {
      const v = loser?.score?.piValue ?? 0;
      return ko
        ? `${namer(seat)}: 피 ${v} (${r?.pibakMaxPi ?? 5} 이하)${r?.pibakRequiresWinnerPi ? `, 승자가 피로 ${s.score?.pi ?? 0}점` : ""}`
        : `${namer(seat)} ${has(namer(seat))} 피 worth ${v} (${r?.pibakMaxPi ?? 5} or less)${r?.pibakRequiresWinnerPi ? `, the winner scored ${s.score?.pi ?? 0} with 피` : ""}`;
    }
    case "gwangbak":
      return ko
        ? `승자가 광으로 ${s.score?.gwang ?? 0}점, ${namer(seat)}: 광 없음`
        : `the winner scored ${s.score?.gwang ?? 0} with 광 and ${inSentence(namer(seat))} ${has(namer(seat))} none`;
    case "gobak":
      return ko ? `${namer(seat)}: ${loser?.gos ?? 0}고 하고 짐` : `${namer(seat)} went ${loser?.gos ?? 0}고 and lost`;
    default:
      return "";
  }
}

/** The 박 the rules have that did not apply to `seat`'s bill, each with why not. */
export function notApplied(s: Settlement, view: GameView, seat: number, namer: SeatName): string[] {
  const ko = lang() === "ko";
  const r = view.rules;
  const bill = s.bills.find((b) => b.seat === seat);
  if (r === undefined || bill === undefined) return [];
  if (s.outcome === "instant_win") return [ko ? "정해진 점수: 박 없음" : "a fixed payment: no 박"];
  const applied = new Set(bill.factors.map((f) => f.name));
  const loser = view.seats.find((x) => x.seat === seat);
  const pi = loser?.score?.piValue ?? 0;
  const out: string[] = [];
  if (r.pibak && !applied.has("pibak")) {
    const why =
      r.pibakRequiresWinnerPi && (s.score?.pi ?? 0) === 0
        ? ko ? "승자가 피로 점수를 내지 않음" : "the winner scored nothing with 피"
        : pi === 0 && r.pibakZeroExempt
          ? ko ? "피가 하나도 없으면 면제" : "no 피 at all is exempt"
          : ko ? `피 ${pi} (${r.pibakMaxPi ?? 5}보다 많음)` : `피 worth ${pi}, more than ${r.pibakMaxPi ?? 5}`;
    out.push(`${ko ? "피박 아님" : "no 피박"}: ${why}`);
  }
  if (r.gwangbak && !applied.has("gwangbak")) {
    const why =
      (s.score?.gwang ?? 0) === 0
        ? ko ? "승자가 광으로 점수를 내지 않음" : "the winner scored nothing with 광"
        : ko ? `${namer(seat)}: 광 ${loser?.score?.gwangCount ?? 0}장` : `${namer(seat)} ${namer(seat) === "You" ? "hold" : "holds"} ${loser?.score?.gwangCount ?? 0} 광`;
    out.push(`${ko ? "광박 아님" : "no 광박"}: ${why}`);
  }
  if (r.gobak && !applied.has("gobak") && s.bills.length === 1) {
    out.push(ko ? `고박 아님: ${namer(seat)}: 고 안 함` : `no 고박: ${inSentence(namer(seat))} did not go`);
  }
  return out;
}

/**
 * How a category's count makes its points where the rule is "each one past a threshold": 피 16
 * → "16 − 9 = 7" (as the terminal shows it); "" where there is nothing to subtract.
 */
export function categoryDetail(count: number, value: number): string {
  const less = count - value;
  if (value <= 0 || less <= 0) return "";
  return `${count} − ${less} = ${value}`;
}
