// Events as people read them (engine/render.py event_line, with everyday card names and Korean
// terms), in the reader's language, and the short "flash" shown on the table as they happen.
import type { Action, Event, GameView } from "./api";
import { cardName, MONTH_NAMES_KO } from "./cards";
import { lang, t, term } from "./i18n";

export type SeatName = (seat: number) => string;

/** How a seat is called at this table: "나"/"You" for the viewer, "자리 1 · greedy" for a bot seat. */
export function seatNamer(view: GameView | undefined): SeatName {
  return (seat: number) => {
    if (view !== undefined && seat === view.viewer) return t("you");
    const base = `${t("seat")} ${seat}`;
    const bot = view?.botSeats.find((b) => b.seat === seat);
    return bot ? `${base} · ${bot.bot.split(":")[0] ?? bot.bot}` : base;
  };
}

function names(cards: readonly number[]): string {
  return cards.length ? cards.map(cardName).join(", ") : "-";
}

function month(m: number): string {
  return lang() === "ko" ? `${m}월 ${MONTH_NAMES_KO[m - 1] ?? ""}` : `month ${m} (${MONTH_NAMES_KO[m - 1] ?? ""})`;
}

const YOU_VERBS: Record<string, string> = {
  plays: "play", flips: "flip", captures: "capture", takes: "take", goes: "go", wins: "win", loses: "lose",
  sits: "sit", sells: "sell", uses: "use", keeps: "keep", makes: "make", pays: "pay", stacks: "stack", shakes: "shake",
  has: "have", holds: "hold", turns: "turn", is: "are",
};

/**
 * English agreement for the viewer, who is "You": "You plays" → "You play" (every verb of the
 * sentence whose subject is You), "You's" → "your", and "you" inside a sentence.
 */
export function agree(line: string): string {
  const lead = /^\s*/.exec(line)?.[0] ?? "";
  let body = line.slice(lead.length);
  if (body.startsWith("You ")) {
    // The subject is the viewer: its verbs, joined by "and", agree with it.
    body = body.replace(/^You (\w+)/, (all, verb: string) => (YOU_VERBS[verb] ? `You ${YOU_VERBS[verb]}` : all));
    body = body.replace(/\band (\w+)\b/g, (all, verb: string) => (YOU_VERBS[verb] ? `and ${YOU_VERBS[verb]}` : all));
    body = body.replace(/\bits own\b/g, "your own");
  }
  body = body
    .replace(/^You's\b/, "Your")
    .replace(/(.)\bYou's\b/g, "$1your")
    .replace(/(.)\bYou\b/g, "$1you");
  return lead + body;
}

/** "1 point", "2 points" (English); "1점" (Korean). */
export function points(n: number | bigint): string {
  if (lang() === "ko") return `${n}점`;
  return `${n} point${n === 1 || n === 1n ? "" : "s"}`;
}

/** A seat's name inside an English sentence: "you" for the viewer, else the name as it is. */
export function inSentence(name: string): string {
  return name === "You" ? "you" : name;
}

/** A seat's name with its possessive: "your" for the viewer, "Seat 1's" for another. */
export function possessive(name: string): string {
  return name === "You" ? "your" : `${name}'s`;
}

/** "has" or "have", as the seat's name asks. */
export function has(name: string): string {
  return name === "You" ? "have" : "has";
}

/**
 * One line of the log; "" for events that only matter to the machinery. `returning`: a seat
 * connecting again after it was disconnected (see `reconnections`).
 */
export function eventLine(event: Event, seat: SeatName, returning = false): string {
  const line = eventText(event, seat, returning);
  return lang() === "ko" ? line : agree(line);
}

/** The log's SeatPresence events (by position) of a seat connecting again after a disconnection. */
export function reconnections(log: readonly { n: number; event: Event }[]): Set<number> {
  const gone = new Set<number>();
  const out = new Set<number>();
  for (const { n, event } of log) {
    if (event.kind.case !== "seatPresence") continue;
    const { seat, connected } = event.kind.value;
    if (!connected) gone.add(seat);
    else if (gone.delete(seat)) out.add(n);
  }
  return out;
}

/** A seat's presence: "Seat 1 disconnected", "Seat 1 is back online" / "자리 1: 연결 끊김", "… 다시 연결됨". */
function presenceText(name: string, connected: boolean, returning: boolean): string {
  if (lang() === "ko") return `${name}: ${connected ? (returning ? "다시 연결됨" : "접속") : "연결 끊김"}`;
  return `${name} ${connected ? (returning ? "is back online" : "is online") : "disconnected"}`;
}

function eventText(event: Event, seat: SeatName, returning: boolean): string {
  const ko = lang() === "ko";
  const k = event.kind;
  switch (k.case) {
    case "dealt": {
      const e = k.value;
      return ko
        ? `패를 돌렸습니다 (선: ${seat(e.dealer)}${e.carry ? ", 나가리 ×2" : ""}), 바닥 ${e.floor.length}장, 더미 ${e.stockCount}장`
        : `Cards dealt (선: ${seat(e.dealer)}${e.carry ? ", ×2 after a 나가리" : ""}), ${e.floor.length} on the floor, ${e.stockCount} in the stock`;
    }
    case "redealt":
      return ko ? `다시 돌립니다: ${term(k.value.reason)} (${month(k.value.month)})` : `Redeal: ${term(k.value.reason)} (${month(k.value.month)})`;
    case "bonusCaptured": {
      const e = k.value;
      const src = ko ? { hand: "손패", floor: "바닥", flip: "뒤집은 패" }[e.source] ?? e.source : e.source;
      return ko
        ? `${seat(e.seat)}: ${cardName(e.card)} 획득 (${src})`
        : `${seat(e.seat)} takes ${cardName(e.card)} (from the ${src})`;
    }
    case "satOut":
      return ko ? `${seat(k.value.seat)}: 이번 판 쉼${k.value.forced ? " (자동)" : ""}` : `${seat(k.value.seat)} sits out${k.value.forced ? " (forced)" : ""}`;
    case "joinedRound":
      return ko ? `${seat(k.value.seat)}: 이번 판 참가` : `${seat(k.value.seat)} plays this round`;
    case "gwangSold":
      return ko
        ? `${seat(k.value.seat)}: 광팔기 ${names(k.value.cards)} (장당 ${k.value.price}점)`
        : `${seat(k.value.seat)} sells ${names(k.value.cards)} (광팔기, ${k.value.price} each)`;
    case "cardPlayed":
      return ko
        ? `${seat(k.value.seat)}: ${cardName(k.value.card)} 냄${k.value.shake ? " (흔들기)" : ""}`
        : `${seat(k.value.seat)} plays ${cardName(k.value.card)}${k.value.shake ? " and shakes (흔들기)" : ""}`;
    case "shaken":
      return ko
        ? `${seat(k.value.seat)}: 흔들기! ${names(k.value.cards)}`
        : `${seat(k.value.seat)}: 흔들기 (shake)! ${names(k.value.cards)}`;
    case "bombed":
      return ko
        ? `${seat(k.value.seat)}: 폭탄! ${names(k.value.cards)} (빈 내기 ${k.value.spareFlips})`
        : `${seat(k.value.seat)}: 폭탄 (bomb)! ${names(k.value.cards)} (${k.value.spareFlips} 빈 내기)`;
    case "flipOnlyUsed":
      return ko ? `${seat(k.value.seat)}: 빈 내기 (남은 ${k.value.spareFlips})` : `${seat(k.value.seat)} uses a 빈 내기 (${k.value.spareFlips} left)`;
    case "cardFlipped":
      return ko ? `${seat(k.value.seat)}: ${cardName(k.value.card)} 뒤집음` : `${seat(k.value.seat)} flips ${cardName(k.value.card)}`;
    case "cardLaid":
      return ko ? `  ${cardName(k.value.card)} 바닥에 깔림` : `  ${cardName(k.value.card)} lies on the floor`;
    case "captured":
      return ko ? `  ${seat(k.value.seat)}: ${names(k.value.cards)} 먹음` : `  ${seat(k.value.seat)} captures ${names(k.value.cards)}`;
    case "ppeokFormed":
      return ko
        ? `  뻑! ${seat(k.value.seat)}, ${month(k.value.month)} 세 장이 쌓임 (${k.value.count}번째)`
        : `  뻑! ${seat(k.value.seat)} stacks ${month(k.value.month)} (#${k.value.count})`;
    case "ppeokRecaptured":
      return ko
        ? `  ${seat(k.value.seat)}: ${k.value.own ? "자뻑" : "뻑"} 먹음 (${month(k.value.month)})`
        : `  ${seat(k.value.seat)} takes ${k.value.own ? "its own 뻑 (자뻑)" : `${seat(k.value.maker)}'s 뻑`} of ${month(k.value.month)}`;
    case "jjok":
      return ko ? `  쪽! (${month(k.value.month)})${k.value.steals ? "" : " 피 안 뺏음"}` : `  쪽! (${month(k.value.month)})${k.value.steals ? "" : ", no steal"}`;
    case "ttadak":
      return ko ? `  따닥! (${month(k.value.month)})${k.value.steals ? "" : " 피 안 뺏음"}` : `  따닥! (${month(k.value.month)})${k.value.steals ? "" : ", no steal"}`;
    case "sseul": {
      const extra = k.value.points ? ` +${points(k.value.points)}` : k.value.steals ? "" : ko ? " 피 안 뺏음" : ", no steal";
      return ko ? `  쓸! ${seat(k.value.seat)}${extra}` : `  쓸 (sweep)! ${seat(k.value.seat)}${extra}`;
    }
    case "piStolen": {
      const e = k.value;
      const why = e.reasons.map(term).join(", ");
      return ko
        ? `  ${seat(e.seat)}: ${seat(e.victim)}의 ${names(e.cards)} 뺏음 (${why})`
        : `  ${seat(e.seat)} takes ${names(e.cards)} from ${seat(e.victim)} (${why})`;
    }
    case "gukjinDecided":
      return ko
        ? `${seat(k.value.seat)}: 국진을 ${k.value.converted ? "쌍피로" : "열끗으로"}`
        : `${seat(k.value.seat)} ${k.value.converted ? "makes 국진 a 쌍피" : "keeps 국진 as a 열끗"}`;
    case "scoreChanged": {
      // Only a score that counts is worth a line (a pile growing below the first point is not).
      const e = k.value;
      if (e.total <= 0) return "";
      return `  ${seat(e.seat)}: ${points(e.total)}`;
    }
    case "wentGo":
      return ko ? `${seat(k.value.seat)}: ${k.value.count}고! (${k.value.base}점)` : `${seat(k.value.seat)}: ${k.value.count}고 (go) at ${k.value.base}!`;
    case "stopped":
      return ko
        ? `${seat(k.value.seat)}: 스톱! (${k.value.base}점${k.value.automatic ? ", 자동" : ""})`
        : `${seat(k.value.seat)}: 스톱 (stop) at ${k.value.base}${k.value.automatic ? " (automatic)" : ""}`;
    case "instantPaid": {
      const p = k.value.payment;
      if (p === undefined) return "";
      return ko
        ? `  ${seat(p.payer)} → ${seat(p.payee)} ${p.points}점 (${term(p.reason)})`
        : `  ${seat(p.payer)} pays ${seat(p.payee)} ${p.points} (${term(p.reason)})`;
    }
    case "instantWin":
      return ko
        ? `${seat(k.value.seat)}: ${term(k.value.reason)}로 즉시 승리 (${k.value.points}점)`
        : `${seat(k.value.seat)} wins at once: ${term(k.value.reason)} (${points(k.value.points)})`;
    case "instantLoss":
      return ko ? `${seat(k.value.seat)}: ${term(k.value.reason)}로 즉시 패배` : `${seat(k.value.seat)} loses at once: ${term(k.value.reason)}`;
    case "nagari":
      return ko ? `나가리 (${term(k.value.reason)})` : `나가리: a draw (${term(k.value.reason)})`;
    case "playedForSeat": {
      const e = k.value;
      const bot = e.policy || "greedy";
      const move = e.action ? actionText(e.action) : ko ? "다음 판을 돌림" : "deals the next round";
      if (ko) {
        const why = CAUSE_KO[e.cause] ?? e.cause;
        return `${seat(e.seat)}: ${why ? `${why}, ` : ""}자동치기 (${bot}): ${move}`;
      }
      const why = CAUSE_EN[e.cause] ?? e.cause;
      return `${seat(e.seat)} ${why}: the table's ${bot} bot ${move.replace(/^(\w+)/, (v) => BOT_VERBS[v] ?? v)}`;
    }
    case "seatAway":
      if (ko) return `${seat(k.value.seat)}: ${k.value.away ? "자리 비움 (테이블의 봇이 둡니다)" : "돌아옴"}`;
      return `${seat(k.value.seat)} is ${k.value.away ? "away (the table's bot plays)" : "back"}`;
    case "seatPresence":
      return presenceText(seat(k.value.seat), k.value.connected, returning);
    case "autoPlaySet":
      return ko
        ? `${seat(k.value.seat)}: 자동치기 ${k.value.on ? "켬" : "끔"}`
        : `${seat(k.value.seat)} turns auto-play (자동치기) ${k.value.on ? "on" : "off"}`;
    case "roundSettled": {
      const s = k.value.settlement;
      if (s === undefined) return "";
      if (s.winner < 0) return ko ? "판 끝: 나가리" : "Round over: 나가리";
      // What the winner collects: the bills as paid (multipliers and 박 included), not the go score.
      const paid = s.bills.reduce((sum, b) => sum + BigInt(b.pays), 0n);
      return ko ? `판 끝: ${seat(s.winner)} 승리, ${points(paid)}` : `Round over: ${seat(s.winner)} wins ${points(paid)}`;
    }
    default:
      return "";
  }
}

/** Why the table's bot made a seat's decision (PlayedForSeat.cause). */
const CAUSE_KO: Record<string, string> = { timeout: "시간 초과", away: "자리 비움", auto_play: "" };
const CAUSE_EN: Record<string, string> = { timeout: "timed out", away: "is away", auto_play: "is on auto-play" };
/** The bot's verb in the past: "plays 3월 광" → "played 3월 광". */
const BOT_VERBS: Record<string, string> = {
  plays: "played", bombs: "bombed", uses: "used", takes: "took", keeps: "kept", makes: "made", goes: "went",
  stops: "stopped", sits: "sat", sells: "sold", deals: "dealt",
};

/** A decision the table's bot made, as a verb phrase ("plays 3월 광" / "3월 광 냄"). */
export function actionText(action: Action): string {
  const ko = lang() === "ko";
  const k = action.kind;
  switch (k.case) {
    case "playCard":
      return ko
        ? `${cardName(k.value.card)} 냄${k.value.shake ? " (흔들기)" : ""}`
        : `plays ${cardName(k.value.card)}${k.value.shake ? " with a 흔들기" : ""}`;
    case "bomb":
      return ko ? `${month(k.value.month)} 폭탄` : `bombs ${month(k.value.month)} (폭탄)`;
    case "flipOnly":
      return ko ? "빈 내기" : "uses a 빈 내기";
    case "chooseCapture":
      return ko ? `${cardName(k.value.card)} 먹음` : `takes ${cardName(k.value.card)}`;
    case "keepGukjin":
      return ko ? "국진을 열끗으로" : "keeps 국진 as a 열끗";
    case "convertGukjin":
      return ko ? "국진을 쌍피로" : "makes 국진 a 쌍피";
    case "go":
      return ko ? "고" : "goes (고)";
    case "stop":
      return ko ? "스톱" : "stops (스톱)";
    case "joinRound":
      return ko ? "이번 판 참가" : "plays this round";
    case "sitOut":
      return ko ? "이번 판 쉼" : "sits out";
    case "sellGwang":
      return ko ? "광팔기" : "sells its 광 (광팔기)";
    case "declineGwangSale":
      return ko ? "광 안 팖" : "keeps its 광";
    default:
      return "";
  }
}

/** The word flashed on the table for a special event, and who it concerns ("" for none). */
export function flashText(event: Event, seat: SeatName): { word: string; who: string } | undefined {
  const ko = lang() === "ko";
  const k = event.kind;
  const at = (word: string, s: number): { word: string; who: string } => ({ word, who: seat(s) });
  switch (k.case) {
    case "ppeokFormed":
      return at("뻑!", k.value.seat);
    case "ppeokRecaptured":
      return at(k.value.own ? "자뻑!" : ko ? "뻑 먹음!" : "뻑 taken!", k.value.seat);
    case "jjok":
      return { word: "쪽!", who: "" };
    case "ttadak":
      return { word: "따닥!", who: "" };
    case "sseul":
      return at("쓸!", k.value.seat);
    case "piStolen":
      return {
        word: ko ? `피 +${k.value.cards.length}` : `피 +${k.value.cards.length}`,
        who: `${seat(k.value.victim)} → ${seat(k.value.seat)}`,
      };
    case "bonusCaptured":
      return at(`${cardName(k.value.card)}!`, k.value.seat);
    case "shaken":
      return at("흔들기!", k.value.seat);
    case "bombed":
      return at("폭탄!", k.value.seat);
    case "wentGo":
      return at(`${k.value.count}고!`, k.value.seat);
    case "stopped":
      return at("스톱!", k.value.seat);
    case "instantWin":
    case "instantLoss":
      return at(`${term(k.value.reason)}!`, k.value.seat);
    case "instantPaid":
      return k.value.payment
        ? { word: `${term(k.value.payment.reason)}!`, who: `${seat(k.value.payment.payer)} → ${seat(k.value.payment.payee)}` }
        : undefined;
    case "nagari":
      return { word: "나가리", who: "" };
    case "gukjinDecided":
      return k.value.converted ? at("국진 → 쌍피", k.value.seat) : undefined;
    case "redealt":
      return { word: ko ? "다시 돌림" : "Redeal", who: "" };
    case "playedForSeat":
      return k.value.cause === "timeout" ? at(ko ? "시간 초과!" : "Time's up!", k.value.seat) : undefined;
    case "seatAway":
      return k.value.away ? at(ko ? "자리 비움" : "Away", k.value.seat) : undefined;
    default:
      return undefined;
  }
}

/** Whether the event is one of the special ones the log shows in colour (a seat disconnecting is). */
export function isSpecial(event: Event): boolean {
  if (event.kind.case === "seatPresence") return !event.kind.value.connected;
  return ["ppeokFormed", "ppeokRecaptured", "jjok", "ttadak", "sseul", "piStolen", "bonusCaptured", "shaken", "bombed",
    "wentGo", "stopped", "instantWin", "instantLoss", "instantPaid", "nagari", "playedForSeat", "seatAway"].includes(event.kind.case ?? "");
}
