// Korean and English labels. Game terms stay Korean in both (뻑, 쪽, 고, 피박…: the words people
// use at the table); English adds a gloss. The language is the reader's choice, kept per browser.

export type Lang = "ko" | "en";

const STRINGS = {
  title: { ko: "고스톱 테이블", en: "Go-Stop table" },
  lobby: { ko: "대기실", en: "Lobby" },
  newGame: { ko: "새 게임", en: "New game" },
  preset: { ko: "규칙", en: "Rules" },
  players: { ko: "인원", en: "Players" },
  rounds: { ko: "판 수", en: "Rounds" },
  openEnded: { ko: "계속", en: "open-ended" },
  seat: { ko: "자리", en: "Seat" },
  seats: { ko: "자리", en: "Seats" },
  you: { ko: "나", en: "You" },
  person: { ko: "사람", en: "Person" },
  create: { ko: "게임 만들기", en: "Create game" },
  creating: { ko: "만드는 중…", en: "Creating…" },
  join: { ko: "참가 / 관전", en: "Join or watch" },
  joinHint: {
    ko: "초대 링크나 게임 ID를 붙여 넣으세요 (토큰 없는 링크는 관전).",
    en: "Paste an invite link or a game id (a link without a token watches).",
  },
  go: { ko: "열기", en: "Open" },
  apiKey: { ko: "API 키 (서버가 요구할 때)", en: "API key (if the server asks for one)" },
  advanced: { ko: "고급", en: "Advanced" },
  created: { ko: "게임이 만들어졌습니다", en: "Game created" },
  sitDown: { ko: "내 자리에 앉기", en: "Take my seat" },
  invite: { ko: "초대 링크", en: "Invite links" },
  inviteSeat: { ko: "자리 {0} 초대", en: "Invite to seat {0}" },
  spectate: { ko: "관전 링크", en: "Spectator link" },
  copy: { ko: "복사", en: "Copy" },
  copied: { ko: "복사됨", en: "Copied" },
  stock: { ko: "더미", en: "Stock" },
  floor: { ko: "바닥", en: "Floor" },
  hand: { ko: "손패", en: "Hand" },
  cards: { ko: "장", en: "cards" },
  yourTurn: { ko: "내 차례", en: "Your turn" },
  waiting: { ko: "{0} 기다리는 중…", en: "Waiting for {0}…" },
  spectator: { ko: "관전 중", en: "Watching" },
  round: { ko: "{0}판", en: "Round {0}" },
  roundOf: { ko: "{0}/{1}판", en: "Round {0} of {1}" },
  points: { ko: "점", en: "pts" },
  base: { ko: "기본 점수", en: "Base score" },
  log: { ko: "기록", en: "Log" },
  lastAction: { ko: "마지막 수", en: "Last action" },
  connecting: { ko: "연결 중…", en: "Connecting…" },
  reconnecting: { ko: "다시 연결 중…", en: "Reconnecting…" },
  live: { ko: "연결됨", en: "Live" },
  leave: { ko: "대기실로", en: "Lobby" },
  share: { ko: "공유", en: "Share" },
  dealer: { ko: "선", en: "선 (leads)" },
  captures: { ko: "먹을 수 있음", en: "captures" },
  takes: { ko: "{0} 먹음", en: "takes {0}" },
  laysDown: { ko: "바닥에 깔림 (먹는 패 없음)", en: "lies on the floor (takes nothing)" },
  choosesOne: { ko: "두 장 중 하나를 고름: {0}", en: "choose one of two: {0}" },
  takesStack: { ko: "뻑 더미 {0}장을 모두 먹음", en: "takes the whole stack of {0}" },
  play: { ko: "내기", en: "Play" },
  cancel: { ko: "취소", en: "Cancel" },
  selectCard: {
    ko: "낼 패를 고르세요 (숫자 키, 다시 누르거나 Enter로 확정)",
    en: "Pick a card to play (number keys; again or Enter to play)",
  },
  flipOnly: { ko: "빈 내기 (뒤집기만)", en: "빈 내기 (flip only)" },
  shakeExplain: {
    ko: "{0}월 패 세 장을 보여 주고 내면 이길 때 ×2.",
    en: "Show your three {0}-month cards: ×2 if you win.",
  },
  shakeYes: { ko: "흔들고 내기 (×2)", en: "Shake and play (×2)" },
  shakeNo: { ko: "그냥 내기", en: "Just play it" },
  bombExplain: {
    ko: "{0}월 세 장을 한꺼번에 내고 바닥 패를 먹습니다: 피 1장씩 뺏고, 이기면 ×2, 빈 내기 2번.",
    en: "Play all three {0}-month cards on the floor card: steal a 피 from each, ×2 if you win, two 빈 내기 turns.",
  },
  bombYes: { ko: "폭탄 (세 장 모두)", en: "Bomb (all three)" },
  bombNo: { ko: "이 패만 내기", en: "Play this card only" },
  choosePrompt: { ko: "어느 패를 먹을까요?", en: "Which card do you take?" },
  chooseHand: { ko: "낸 패 {0}: 바닥의 두 장과 맞습니다.", en: "Your {0} matches two floor cards." },
  chooseFlip: { ko: "뒤집은 패 {0}: 바닥의 두 장과 맞습니다.", en: "The flipped {0} matches two floor cards." },
  gukjinPrompt: { ko: "국진: 열끗으로 둘까요, 쌍피로 쓸까요?", en: "국진: keep it as a 열끗 or use it as a 쌍피?" },
  gukjinKeep: { ko: "열끗으로 두기", en: "Keep as 열끗" },
  gukjinConvert: { ko: "쌍피로 바꾸기 (되돌릴 수 없음)", en: "Make it a 쌍피 (for good)" },
  scoreWould: { ko: "점수 {0}점", en: "score {0}" },
  goStopPrompt: { ko: "고? 스톱?", en: "고 (go) or 스톱 (stop)?" },
  stopNow: { ko: "스톱: 지금 받는 점수", en: "Stop now and collect" },
  goNext: { ko: "고: 계속하기", en: "Go on" },
  goAfter: {
    ko: "{0}고가 되면 기본 {1}점이 {2}점이 됩니다 (점수가 더 나야 다시 고/스톱).",
    en: "After {0}고 a base of {1} is worth {2} (you are asked again once your score rises).",
  },
  goRisk: {
    ko: "상대가 먼저 나면 고박: 내가 ×2로 냅니다.",
    en: "If an opponent wins after your 고, 고박: you pay ×2.",
  },
  goRisk3: {
    ko: "상대가 먼저 나면 고박: 마지막에 고한 사람이 두 사람 몫을 냅니다.",
    en: "If an opponent wins after your 고, 고박: the last to go pays for both losers.",
  },
  threat: { ko: "상대의 위협", en: "Opponents' threat" },
  threatLine: {
    ko: "{0}: {1}점 ({2}점이면 고/스톱), 남은 패 {3}장",
    en: "{0}: {1} points ({2} to go or stop), {3} cards left",
  },
  sitOutPrompt: { ko: "이번 판에 참가할까요?", en: "Play this round?" },
  joinRound: { ko: "참가", en: "Play" },
  sitOut: { ko: "쉬기", en: "Sit out" },
  gwangSalePrompt: { ko: "광을 팔까요? (광팔기)", en: "Sell your 광? (광팔기)" },
  sellGwang: { ko: "팔기", en: "Sell" },
  declineGwang: { ko: "팔지 않기", en: "Keep" },
  settlement: { ko: "정산", en: "Settlement" },
  winner: { ko: "승자", en: "Winner" },
  draw: { ko: "나가리 (무승부)", en: "나가리 (a draw)" },
  outcome: { ko: "결과", en: "Outcome" },
  goBonus: { ko: "고 보너스", en: "Go bonus" },
  goScore: { ko: "고 점수", en: "Go score" },
  winnerFactors: { ko: "승자 배수", en: "Winner's multipliers" },
  bills: { ko: "진 사람이 낼 점수", en: "What each loser owes" },
  paysFor: { ko: "{0}의 몫까지 냄 (고박)", en: "pays for {0} (고박)" },
  paysNothing: { ko: "고박으로 면제", en: "pays nothing (고박 moved it)" },
  instant: { ko: "즉시 지불", en: "Instant payments" },
  netPoints: { ko: "이번 판 점수", en: "Net points this round" },
  money: { ko: "돈", en: "Money" },
  matchTotal: { ko: "누적", en: "Match total" },
  record: { ko: "승/패/무", en: "W/L/D" },
  nextRound: { ko: "다음 판", en: "Next round" },
  matchOver: { ko: "게임 끝", en: "Match over" },
  newMatch: { ko: "새 게임", en: "New game" },
  close: { ko: "닫기", en: "Close" },
  showSettlement: { ko: "정산 보기", en: "Show settlement" },
  noCategories: { ko: "점수 없음", en: "no points" },
  gos: { ko: "{0}고", en: "{0}고" },
  multiplierShort: { ko: "×{0}", en: "×{0}" },
  ppeokCount: { ko: "뻑 {0}", en: "뻑 {0}" },
  spareFlips: { ko: "빈 내기 {0}", en: "빈 내기 {0}" },
  sittingOut: { ko: "쉬는 중", en: "sitting out" },
  error: { ko: "오류", en: "Error" },
  notFound: { ko: "이 게임은 더 이상 없습니다", en: "This game no longer exists" },
  notFoundHint: {
    ko: "서버가 다시 시작되었거나 게임이 지워졌습니다. 대기실에서 새 게임을 만드세요.",
    en: "The server restarted or the game was removed. Start a new one from the lobby.",
  },
  needsKey: {
    ko: "이 서버는 게임을 만들 때 API 키가 필요합니다: \"고급\"에 키를 넣으세요.",
    en: "This server needs an API key to create a game: enter it under \"Advanced\".",
  },
  keyRefused: {
    ko: "이 서버가 그 API 키를 받지 않습니다: \"고급\"의 키를 확인하세요.",
    en: "This server does not accept that API key: check it under \"Advanced\".",
  },
  inviteSecret: {
    ko: "초대 링크에는 그 자리의 비밀 토큰이 있습니다: 그 사람에게만 보내세요. 링크가 있으면 누구나 그 자리에서 둡니다.",
    en: "Each invite link holds that seat's secret token: send it to its player only. Anyone with the link plays that seat.",
  },

  keys: {
    ko: "키보드: 숫자 = 선택, Enter = 확정, Esc = 취소, L = 기록",
    en: "Keys: numbers choose, Enter confirms, Esc cancels, L log",
  },
  selectCardTouch: {
    ko: "낼 패를 누르세요 (한 번 더 누르면 냅니다)",
    en: "Tap a card to play (tap again to play it)",
  },
  langSwitch: { ko: "English", en: "한국어" },
  gwangCount: { ko: "광 {0}장", en: "{0} 광" },
  yeolCount: { ko: "열끗 {0}장", en: "{0} 열끗" },
  ttiCount: { ko: "띠 {0}장", en: "{0} 띠" },
  piCount: { ko: "피 {0}", en: "피 {0}" },
  total: { ko: "합계", en: "Total" },
  startTriple: { ko: "3장: 넷째 장이 모두 먹음", en: "3 cards: the 4th takes all" },
  cardsLink: { ko: "카드 보기", en: "The cards" },
  clock: { ko: "한 수 시간", en: "Time per move" },
  clockOff: { ko: "없음", en: "off" },
  clockSeconds: { ko: "{0}초", en: "{0} s" },
  clockHint: {
    ko: "시간이 다 되면 테이블의 봇이 대신 둡니다 (자동치기). 판마다 추가 시간 {0}초, 두 번 연속 넘기면 자리 비움.",
    en: "When time runs out the table's bot moves for the seat (자동치기). {0} s of extra time a round; away after two timeouts in a row.",
  },
  bankLeft: { ko: "추가 시간 {0}", en: "extra time {0}" },
  autoPlay: { ko: "자동치기", en: "Auto-play" },
  autoPlayHint: {
    ko: "켜면 테이블의 봇이 내 차례를 둡니다. 직접 두면 꺼집니다.",
    en: "On: the table's bot makes your moves (자동치기). Playing a move yourself turns it off.",
  },
  away: { ko: "자리 비움", en: "away" },
  autoBadge: { ko: "자동", en: "auto" },
  online: { ko: "연결됨", en: "connected" },
  offline: { ko: "연결 끊김", en: "disconnected" },
  timedOut: {
    ko: "시간이 다 되어 테이블의 봇이 대신 두었습니다.",
    en: "Time ran out: the table's bot moved for you.",
  },
  tokenRefused: {
    ko: "이 서버가 이 자리의 토큰을 받지 않습니다: 관전으로 봅니다.",
    en: "This server no longer accepts this seat's token: you are watching.",
  },
} as const;

export type Key = keyof typeof STRINGS;

let current: Lang = initialLang();

function initialLang(): Lang {
  try {
    const saved = localStorage.getItem("gostop.lang");
    if (saved === "ko" || saved === "en") return saved;
  } catch {
    // storage may be off: fall through to the browser's language
  }
  return typeof navigator !== "undefined" && navigator.language.toLowerCase().startsWith("ko") ? "ko" : "en";
}

export function lang(): Lang {
  return current;
}

export function setLang(next: Lang): void {
  current = next;
  try {
    localStorage.setItem("gostop.lang", next);
  } catch {
    // not kept: the choice still applies to this page
  }
  if (typeof document !== "undefined") document.documentElement.lang = next;
}

/** The label `key` in the current language, with {0}, {1}… replaced by `args`. */
export function t(key: Key, ...args: Array<string | number | bigint>): string {
  const text: string = STRINGS[key][current];
  return text.replace(/\{(\d)\}/g, (_, i: string) => String(args[Number(i)] ?? ""));
}

/** Korean terms of the engine's romanised names (engine/render.py TERMS), with an English gloss. */
const TERMS: Record<string, readonly [string, string]> = {
  gwang: ["광", "brights"], yeol: ["열끗", "animals"], godori: ["고도리", "the three birds"], tti: ["띠", "ribbons"],
  hongdan: ["홍단", "red poem ribbons"], cheongdan: ["청단", "blue ribbons"], chodan: ["초단", "plain red ribbons"],
  pi: ["피", "junk"], sseul: ["쓸", "sweeps"],
  shake_bomb: ["흔들기/폭탄", "shake/bomb"], own_shake_bomb: ["자기 흔들기/폭탄", "own shake/bomb"],
  meongbak: ["멍박", "7+ animals"], nagari_carry: ["나가리 ×2", "after a draw"], pibak: ["피박", "too little junk"],
  gwangbak: ["광박", "no bright"], gobak: ["고박", "went go and lost"],
  bomb: ["폭탄", "bomb"], jappeok: ["자뻑", "own stack"], ppeok: ["뻑", "stack"], jjok: ["쪽", "kiss"],
  ttadak: ["따닥", "double"], first_ppeok: ["첫뻑", "first-turn stack"], second_ppeok: ["연뻑", "second stack in a row"],
  third_ppeok: ["3연뻑", "third stack in a row"], first_ttadak: ["첫따닥", "first-turn double"],
  gwang_sale: ["광팔기", "selling brights"], chongtong: ["총통", "four of a month"], three_ppeok: ["3뻑", "three stacks"],
  heodang: ["허당", "dry turns"], stop: ["스톱", "stop"], nagari: ["나가리", "draw"], best_score: ["최고 점수", "best score"],
  instant_win: ["즉시 승리", "instant win"], instant_loss: ["즉시 패배", "instant loss"], exhausted: ["패 소진", "cards ran out"],
  floor_four: ["바닥 네 장", "four on the floor"], hand_four: ["손 네 장", "four in a hand"],
};

/** The Korean term of an engine name; in English with its gloss: "피박 (too little junk)". */
export function term(name: string): string {
  const entry = TERMS[name];
  if (entry === undefined) return name;
  return current === "ko" ? entry[0] : `${entry[0]} (${entry[1]})`;
}

/** The bare Korean term (for tight places such as card badges). */
export function termKo(name: string): string {
  return TERMS[name]?.[0] ?? name;
}
