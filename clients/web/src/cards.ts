// The 51 canonical cards (docs/rules.md §2, engine/cards.py): id = (month - 1) * 4 + slot for the
// month cards, 48 and 49 the bonus 쌍피, 50 the bonus 쓰리피. Names are the ones people use, as
// engine/render.py's card_name gives them (똥광, 비광, 비띠, 똥쌍피, 비쌍피).

export type Kind = "gwang" | "yeol" | "tti" | "pi";
/** The colour of a 띠: 홍단 (red, written), 청단 (blue), 초단 (red, plain), 비띠 (red, in no 단). */
export type Ribbon = "hong" | "cheong" | "cho" | "bi";

export const HIDDEN = -1;
export const GUKJIN = 32;
export const BIGWANG = 44;
export const ALL_CARDS = 51;

export const MONTH_NAMES_KO = ["송학", "매조", "벚꽃", "흑싸리", "난초", "모란", "홍싸리", "공산", "국화", "단풍", "오동", "비"];
export const MONTH_NAMES_EN = [
  "Pine", "Plum", "Cherry", "Wisteria", "Iris", "Peony", "Bush clover", "Moon", "Chrysanthemum", "Maple",
  "Paulownia", "Rain",
];

const LAYOUT: ReadonlyArray<readonly [Kind, string, string]> = [
  ["gwang", "gwang", "1월 광"], ["tti", "tti", "1월 홍단"], ["pi", "pi-a", "1월 피"], ["pi", "pi-b", "1월 피"],
  ["yeol", "yeol", "2월 고도리"], ["tti", "tti", "2월 홍단"], ["pi", "pi-a", "2월 피"], ["pi", "pi-b", "2월 피"],
  ["gwang", "gwang", "3월 광"], ["tti", "tti", "3월 홍단"], ["pi", "pi-a", "3월 피"], ["pi", "pi-b", "3월 피"],
  ["yeol", "yeol", "4월 고도리"], ["tti", "tti", "4월 초단"], ["pi", "pi-a", "4월 피"], ["pi", "pi-b", "4월 피"],
  ["yeol", "yeol", "5월 열끗"], ["tti", "tti", "5월 초단"], ["pi", "pi-a", "5월 피"], ["pi", "pi-b", "5월 피"],
  ["yeol", "yeol", "6월 열끗"], ["tti", "tti", "6월 청단"], ["pi", "pi-a", "6월 피"], ["pi", "pi-b", "6월 피"],
  ["yeol", "yeol", "7월 열끗"], ["tti", "tti", "7월 초단"], ["pi", "pi-a", "7월 피"], ["pi", "pi-b", "7월 피"],
  ["gwang", "gwang", "8월 광"], ["yeol", "yeol", "8월 고도리"], ["pi", "pi-a", "8월 피"], ["pi", "pi-b", "8월 피"],
  ["yeol", "yeol", "9월 국진"], ["tti", "tti", "9월 청단"], ["pi", "pi-a", "9월 피"], ["pi", "pi-b", "9월 피"],
  ["yeol", "yeol", "10월 열끗"], ["tti", "tti", "10월 청단"], ["pi", "pi-a", "10월 피"], ["pi", "pi-b", "10월 피"],
  ["gwang", "gwang", "똥광"], ["pi", "pi-a", "똥피"], ["pi", "pi-b", "똥피"], ["pi", "ssangpi", "똥쌍피"],
  ["gwang", "bigwang", "비광"], ["yeol", "yeol", "12월 열끗"], ["tti", "tti", "비띠"], ["pi", "ssangpi", "비쌍피"],
];

export const GWANG_CARDS = new Set([0, 8, 28, 40, 44]);
/** What a forced-out fourth seat may sell (광팔기): the 광 (비광 too), the 쌍피 and the bonus 피. */
export const SELLABLE = new Set([...GWANG_CARDS, 43, 47, 48, 49, 50]);
export const GODORI = new Set([4, 12, 29]);
export const HONGDAN = new Set([1, 5, 9]);
export const CHEONGDAN = new Set([21, 33, 37]);
export const CHODAN = new Set([13, 17, 25]);

export interface CardInfo {
  id: number;
  /** 1-12; 0 for a bonus card (it matches nothing). */
  month: number;
  kind: Kind;
  /** engine/cards.py CODE: "11-gwang", "bonus-sseuripi". */
  code: string;
  /** The name people use: "똥광", "3월 광", "보너스 쓰리피". */
  name: string;
  /** An English name: "Paulownia bright". */
  nameEn: string;
  /** 피 value (쌍피 2, 쓰리피 3; 국진 0 unless converted). */
  pi: number;
  ribbon: Ribbon | null;
  bonus: boolean;
  bird: boolean;
}

const EN_KIND: Record<string, string> = {
  gwang: "bright", bigwang: "rain bright", yeol: "animal", tti: "ribbon", "pi-a": "junk", "pi-b": "junk",
  ssangpi: "double junk",
};

function ribbonOf(id: number): Ribbon | null {
  if (HONGDAN.has(id)) return "hong";
  if (CHEONGDAN.has(id)) return "cheong";
  if (CHODAN.has(id)) return "cho";
  return id === 46 ? "bi" : null;
}

function build(): CardInfo[] {
  const cards: CardInfo[] = LAYOUT.map(([kind, suffix, name], id) => {
    const month = Math.floor(id / 4) + 1;
    const ribbon = ribbonOf(id);
    let en = `${MONTH_NAMES_EN[month - 1]} ${EN_KIND[suffix] ?? suffix}`;
    if (GODORI.has(id)) en = `${MONTH_NAMES_EN[month - 1]} bird (godori)`;
    if (id === GUKJIN) en = "Chrysanthemum cup (gukjin)";
    if (ribbon === "hong") en = `${MONTH_NAMES_EN[month - 1]} red poem ribbon`;
    if (ribbon === "cheong") en = `${MONTH_NAMES_EN[month - 1]} blue ribbon`;
    if (ribbon === "cho") en = `${MONTH_NAMES_EN[month - 1]} red ribbon`;
    return {
      id,
      month,
      kind,
      code: `${String(month).padStart(2, "0")}-${suffix}`,
      name,
      nameEn: en,
      pi: kind === "pi" ? (suffix === "ssangpi" ? 2 : 1) : 0,
      ribbon,
      bonus: false,
      bird: GODORI.has(id),
    };
  });
  const bonus = (id: number, code: string, name: string, en: string, pi: number): CardInfo => ({
    id, month: 0, kind: "pi", code, name, nameEn: en, pi, ribbon: null, bonus: true, bird: false,
  });
  cards.push(bonus(48, "bonus-ssangpi-a", "보너스 쌍피", "bonus double junk", 2));
  cards.push(bonus(49, "bonus-ssangpi-b", "보너스 쌍피", "bonus double junk", 2));
  cards.push(bonus(50, "bonus-sseuripi", "보너스 쓰리피", "bonus triple junk", 3));
  return cards;
}

/** Every card, by id. */
export const CARDS: readonly CardInfo[] = build();

export function card(id: number): CardInfo | undefined {
  return id >= 0 && id < ALL_CARDS ? CARDS[id] : undefined;
}

export function monthOf(id: number): number {
  return card(id)?.month ?? 0;
}

/** The card's everyday Korean name ("??" for a hidden card). */
export function cardName(id: number): string {
  return card(id)?.name ?? "??";
}

/** Which pile group a captured card belongs to (국진 moves to 피 once converted). */
export function pileKind(id: number, gukjinConverted: boolean): Kind {
  if (id === GUKJIN && gukjinConverted) return "pi";
  return card(id)?.kind ?? "pi";
}
