// A hwatu card drawn by the page (SVG, no artwork from anywhere): the month's number and plant, a
// simple motif of the plant, and the marks that decide scoring — the 광 circle (비광 its own), the
// 띠 ribbon in its colour with its name (홍단 red and written, 청단 blue, 초단 red and plain, 비띠),
// the 고도리 bird, the 국진 cup, the 쌍피/쓰리피 value, the bonus cards — and the name people use.
import type { JSX } from "preact";

import { card, MONTH_NAMES_KO, type CardInfo } from "../cards";
import { lang } from "../i18n";

const W = 60;
const H = 92;

/** Each month's colours: [motif, accent, panel tint]. */
const PALETTE: ReadonlyArray<readonly [string, string, string]> = [
  ["#1f6b3a", "#c62828", "#eef5e9"], // 1 송학: pine green, red sun
  ["#8d5a3b", "#e0587a", "#fbeef1"], // 2 매조: plum branch, pink blossoms
  ["#b0586e", "#f3a6b8", "#fdf0f3"], // 3 벚꽃: cherry
  ["#2b2b35", "#6d4c8f", "#f1eff4"], // 4 흑싸리: black bush clover
  ["#3d5a99", "#7b5ea7", "#eef1f8"], // 5 난초: iris
  ["#c2185b", "#f06292", "#fcedf3"], // 6 모란: peony
  ["#b23a2e", "#e57368", "#fbefed"], // 7 홍싸리: red bush clover
  ["#222222", "#c62828", "#f7ede6"], // 8 공산: hill and moon
  ["#c58a00", "#e6b422", "#fbf5e3"], // 9 국화: chrysanthemum
  ["#c43d14", "#ef6c00", "#fcefe8"], // 10 단풍: maple
  ["#3b3b3b", "#8e7cc3", "#f2f0f6"], // 11 오동: paulownia
  ["#37474f", "#5c6bc0", "#eceff4"], // 12 비: rain
];

function Motif({ month, id }: { month: number; id: number }): JSX.Element {
  const [ink, accent] = PALETTE[month - 1] ?? ["#555", "#999", "#eee"];
  switch (month) {
    case 1:
      return (
        <g>
          <circle cx="40" cy="32" r="8" fill={accent} opacity="0.85" />
          {id === 0 && (
            // the crane (학) of 송학
            <g>
              <path d="M8 40 Q16 30 26 36 Q20 38 16 44 Z" fill="#fafafa" stroke="#333" stroke-width="0.6" />
              <path d="M26 36 Q30 30 29 24" stroke="#333" stroke-width="1.2" fill="none" />
              <circle cx="29" cy="24" r="1.6" fill="#c62828" />
            </g>
          )}
          {[0, 1, 2].map((i) => (
            <path key={i} d={`M${30 - 13 + i * 2} ${46 + i * 7} L30 ${30 + i * 7} L${30 + 13 - i * 2} ${46 + i * 7} Z`} fill={ink} />
          ))}
          <rect x="28.5" y="58" width="3" height="7" fill="#6d4c41" />
        </g>
      );
    case 2:
      return (
        <g>
          <path d="M12 62 Q24 44 34 40 T50 26" stroke={ink} stroke-width="2.5" fill="none" />
          {[[22, 48], [34, 40], [44, 30], [16, 58]].map(([x, y], i) => (
            <Blossom key={i} x={x ?? 0} y={y ?? 0} r={4} fill={accent} />
          ))}
        </g>
      );
    case 3:
      return (
        <g>
          {id === 8 && (
            // the curtain (만막) of the cherry-blossom viewing
            <g>
              <path d="M6 50 Q30 44 54 50 L54 64 L6 64 Z" fill="#b71c1c" />
              {[12, 22, 32, 42].map((x) => (
                <rect key={x} x={x} y="50" width="4" height="14" fill="#fff3d6" opacity="0.85" />
              ))}
            </g>
          )}
          {[[18, 34], [30, 30], [42, 36], [24, 44], [38, 46], [30, 56], [16, 54], [44, 56]].map(([x, y], i) => (
            <Blossom key={i} x={x ?? 0} y={y ?? 0} r={4.5} fill={i % 2 ? accent : ink} />
          ))}
        </g>
      );
    case 4:
    case 7:
      return (
        <g>
          {[16, 26, 36, 46].map((x, i) => (
            <g key={i}>
              <path d={`M${x} 24 Q${x + 3} 40 ${x - 1} ${58 + (i % 2) * 4}`} stroke={ink} stroke-width="1.2" fill="none" />
              {[0, 1, 2, 3, 4].map((k) => (
                <ellipse key={k} cx={x + (k % 2 ? 2.5 : -1.5)} cy={28 + k * 7} rx="2.2" ry="1.6" fill={k % 2 ? accent : ink} />
              ))}
            </g>
          ))}
        </g>
      );
    case 5:
      return (
        <g>
          {[14, 22, 30, 38, 46].map((x, i) => (
            <path key={i} d={`M${x} 66 Q${x + 2} 44 ${x + 6 - i} 24`} stroke={ink} stroke-width="2" fill="none" />
          ))}
          <Blossom x={24} y={30} r={4.5} fill={accent} />
          <Blossom x={40} y={36} r={4} fill={accent} />
        </g>
      );
    case 6:
      return (
        <g>
          <circle cx="30" cy="42" r="13" fill={accent} />
          <circle cx="30" cy="42" r="8.5" fill={ink} />
          <circle cx="30" cy="42" r="3.5" fill="#ffd54f" />
          <path d="M14 62 Q22 54 30 56 Q38 54 46 62" stroke="#2e7d32" stroke-width="3" fill="none" />
        </g>
      );
    case 8:
      return (
        <g>
          <rect x="6" y="22" width="48" height="28" fill={accent} opacity="0.9" />
          {id === 28 && <circle cx="30" cy="34" r="10" fill="#fff3d6" stroke="#f2b632" stroke-width="1" />}
          <path d="M6 66 L6 48 Q30 30 54 48 L54 66 Z" fill={ink} />
          {[14, 20, 26, 34, 40, 46].map((x, i) => (
            <path key={i} d={`M${x} 50 L${x + 2} 40`} stroke="#9e9e9e" stroke-width="0.8" />
          ))}
        </g>
      );
    case 9:
      return (
        <g>
          {Array.from({ length: 12 }, (_, i) => (
            <ellipse key={i} cx="30" cy="34" rx="2.6" ry="9" fill={accent} transform={`rotate(${i * 30} 30 43)`} />
          ))}
          <circle cx="30" cy="43" r="4.5" fill={ink} />
        </g>
      );
    case 10:
      return (
        <g>
          {[[20, 34], [40, 38], [28, 54]].map(([x, y], i) => (
            <Maple key={i} x={x ?? 0} y={y ?? 0} fill={i === 1 ? accent : ink} />
          ))}
        </g>
      );
    case 11:
      return (
        <g>
          <path d="M30 26 C10 30 10 56 30 64 C50 56 50 30 30 26 Z" fill={ink} />
          <path d="M30 28 L30 62" stroke="#9e9e9e" stroke-width="0.8" />
          <Blossom x={30} y={26} r={4} fill={accent} />
        </g>
      );
    default:
      return (
        <g>
          {[10, 18, 26, 34, 42, 50].map((x, i) => (
            <path key={i} d={`M${x} 22 L${x - 6} 40`} stroke={accent} stroke-width="1" opacity="0.8" />
          ))}
          <path d="M44 22 Q40 44 46 66" stroke={ink} stroke-width="1.6" fill="none" />
          <path d="M50 22 Q46 42 52 62" stroke={ink} stroke-width="1.2" fill="none" />
          {id === 45 && (
            // the swallow (제비)
            <path d="M14 44 L24 40 L32 44 L24 46 L30 54 L22 48 L16 52 Z" fill="#263238" />
          )}
        </g>
      );
  }
}

function Blossom({ x, y, r, fill }: { x: number; y: number; r: number; fill: string }): JSX.Element {
  return (
    <g>
      {[0, 72, 144, 216, 288].map((a) => (
        <circle key={a} cx={x + Math.cos((a * Math.PI) / 180) * r * 0.6} cy={y + Math.sin((a * Math.PI) / 180) * r * 0.6} r={r * 0.5} fill={fill} />
      ))}
      <circle cx={x} cy={y} r={r * 0.3} fill="#ffe082" />
    </g>
  );
}

function Maple({ x, y, fill }: { x: number; y: number; fill: string }): JSX.Element {
  const points = Array.from({ length: 10 }, (_, i) => {
    const a = (i * Math.PI) / 5 - Math.PI / 2;
    const r = i % 2 ? 3.5 : 9;
    return `${(x + Math.cos(a) * r).toFixed(1)},${(y + Math.sin(a) * r).toFixed(1)}`;
  }).join(" ");
  return <polygon points={points} fill={fill} />;
}

function Ribbon({ info }: { info: CardInfo }): JSX.Element {
  const color = info.ribbon === "cheong" ? "#1e4fa8" : "#cc2a2a";
  const label = info.ribbon === "hong" ? "홍단" : info.ribbon === "cheong" ? "청단" : info.ribbon === "cho" ? "초단" : "비띠";
  return (
    <g class="mark-ribbon">
      <path d="M22 24 L38 24 L36 64 L24 64 Z" fill={color} stroke="#00000033" stroke-width="0.6" />
      {info.ribbon === "hong" && <path d="M26 60 L34 60" stroke="#1a1a1a" stroke-width="0.8" />}
      {info.ribbon === "bi" && <path d="M23 34 L37 30 M23 44 L37 40 M24 54 L36 50" stroke="#1a1a1a" stroke-width="1.4" />}
      <text
        x="30"
        y="44"
        font-size="7.2"
        font-weight="700"
        fill={info.ribbon === "hong" ? "#1a1a1a" : "#fff"}
        text-anchor="middle"
        writing-mode="vertical-rl"
        style="letter-spacing:1px"
      >
        {label}
      </text>
    </g>
  );
}

function Emblems({ info }: { info: CardInfo }): JSX.Element | null {
  if (info.kind === "gwang") {
    const bi = info.id === 44;
    return (
      <g class="mark-gwang">
        <circle cx="47" cy="13" r="9" fill={bi ? "#4a148c" : "#d32f2f"} stroke="#fff" stroke-width="1.2" />
        <text x="47" y="16.4" font-size="9" font-weight="700" fill="#fff" text-anchor="middle">
          광
        </text>
        {bi && (
          <g>
            <path d="M12 44 Q22 30 32 44 Z" fill="#4a148c" />
            <path d="M22 44 L22 58 Q22 61 19 60" stroke="#4a148c" stroke-width="1.6" fill="none" />
          </g>
        )}
      </g>
    );
  }
  if (info.kind === "yeol") {
    if (info.id === 32) {
      return (
        <g class="mark-gukjin">
          <path d="M20 48 L40 48 L36 60 L24 60 Z" fill="#b71c1c" stroke="#fff" stroke-width="0.8" />
          <text x="30" y="57" font-size="6.5" font-weight="700" fill="#fff" text-anchor="middle">
            국진
          </text>
          <YeolBadge />
        </g>
      );
    }
    if (info.bird) {
      return (
        <g class="mark-bird">
          <path d="M16 50 Q24 40 30 48 Q36 40 44 50 Q36 46 30 54 Q24 46 16 50 Z" fill="#263238" />
          <circle cx="30" cy="49" r="2" fill="#ffb300" />
          <text x="30" y="62" font-size="6" font-weight="700" fill="#263238" text-anchor="middle">
            고도리
          </text>
          <YeolBadge />
        </g>
      );
    }
    return (
      <g class="mark-yeol">
        <YeolBadge />
      </g>
    );
  }
  if (info.kind === "pi" && info.pi >= 2 && !info.bonus) {
    return <PiBadge value={info.pi} />;
  }
  return null;
}

function YeolBadge(): JSX.Element {
  return (
    <g>
      <rect x="39" y="5" width="16" height="15" rx="3" fill="#f9a825" stroke="#fff" stroke-width="1" />
      <text x="47" y="15.6" font-size="7.5" font-weight="700" fill="#3e2723" text-anchor="middle">
        열
      </text>
    </g>
  );
}

function PiBadge({ value }: { value: number }): JSX.Element {
  return (
    <g class="mark-ssangpi">
      <rect x="36" y="5" width="20" height="15" rx="3" fill="#212121" />
      <text x="46" y="15.5" font-size="7" font-weight="700" fill="#fff" text-anchor="middle">
        {value === 3 ? "쓰리피" : "쌍피"}
      </text>
    </g>
  );
}

function Face({ info }: { info: CardInfo }): JSX.Element {
  if (info.bonus) {
    return (
      <g>
        <rect x="2" y="2" width={W - 4} height={H - 4} rx="4" fill="#ffe9a8" stroke="#b8860b" stroke-width="1.5" />
        <text x="30" y="16" font-size="9" font-weight="700" fill="#7a5200" text-anchor="middle">
          보너스
        </text>
        <circle cx="30" cy="38" r="14" fill="#fff6d5" stroke="#b8860b" stroke-width="1.5" />
        <text x="30" y="45.5" font-size="21" font-weight="700" fill="#7a5200" text-anchor="middle">
          {info.pi}
        </text>
        <text x="30" y="65" font-size="8.5" font-weight="700" fill="#7a5200" text-anchor="middle">
          {info.pi === 3 ? "쓰리피" : "쌍피"}
        </text>
      </g>
    );
  }
  const [ink, , tint] = PALETTE[info.month - 1] ?? ["#555", "#999", "#eee"];
  return (
    <g>
      <rect x="2" y="2" width={W - 4} height={H - 4} rx="4" fill={tint} />
      <text x="6" y="14" font-size="11" font-weight="700" fill={ink}>
        {info.month}
        <tspan font-size="6.5">월</tspan>
      </text>
      <text x="6" y="21" font-size="5.6" fill={ink}>
        {MONTH_NAMES_KO[info.month - 1]}
      </text>
      <Motif month={info.month} id={info.id} />
      {info.kind === "tti" && <Ribbon info={info} />}
      <Emblems info={info} />
    </g>
  );
}

export interface CardProps {
  id: number;
  /** Face down (a hidden card, or a hand seen from another seat). */
  back?: boolean;
  class?: string;
  /** A 국진 counted as a 쌍피 (converted). */
  converted?: boolean;
  title?: string;
}

/** One card as an inline SVG; its accessible name is the card's everyday name. */
export function Card({ id, back, class: cls, converted, title }: CardProps): JSX.Element {
  const info = card(id);
  if (back || info === undefined) {
    return (
      <svg class={`card back ${cls ?? ""}`} viewBox={`0 0 ${W} ${H}`} role="img" aria-label={lang() === "ko" ? "뒷면" : "face down"}>
        <rect x="0.5" y="0.5" width={W - 1} height={H - 1} rx="5" fill="#a52a1f" stroke="#5d1710" />
        <rect x="5" y="5" width={W - 10} height={H - 10} rx="3" fill="none" stroke="#f3c7a6" stroke-width="1" />
        <path d="M30 16 L46 46 L30 76 L14 46 Z" fill="none" stroke="#f3c7a6" stroke-width="1.2" />
        <circle cx="30" cy="46" r="6" fill="#f3c7a6" />
      </svg>
    );
  }
  const name = info.name;
  const label = lang() === "ko" ? name : `${name} (${info.nameEn})`;
  return (
    <svg
      class={`card face kind-${info.kind} ${info.bonus ? "bonus" : ""} ${cls ?? ""}`}
      viewBox={`0 0 ${W} ${H}`}
      role="img"
      aria-label={label}
      data-card={id}
    >
      <title>{title ?? label}</title>
      <rect x="0.5" y="0.5" width={W - 1} height={H - 1} rx="5" fill="#fffdf6" stroke="#8d2f23" stroke-width="1" />
      <Face info={info} />
      {converted && id === 32 && <PiBadge value={2} />}
      <rect x="2" y={H - 19} width={W - 4} height="17" rx="3" fill="#ffffffd9" />
      <text x="30" y={H - 7.2} font-size={name.length > 5 ? 7.4 : 8.6} font-weight="700" fill="#2b2118" text-anchor="middle">
        {name}
      </text>
    </svg>
  );
}
