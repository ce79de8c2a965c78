// The end of a round, every factor explained: the winner's base score by category, the go bonus,
// each multiplier and each 박 with its reason, what every loser owes and pays (고박 moving a
// bill), the instant payments, the net points (and money), the match so far; then the next round.
import type { JSX } from "preact";

import { GoScoring, type GameView, type Settlement } from "../api";
import type { SeatName } from "../events";
import { lang, t, term } from "../i18n";
import { categoryDetail, notApplied, reason } from "../settlement-text";
import { Countdown } from "./Clock";

const CATS = ["gwang", "yeol", "godori", "tti", "hongdan", "cheongdan", "chodan", "pi", "sseul"] as const;

function withCount(detail: string): string {
  return detail ? `: ${detail}` : "";
}

function goFormula(s: Settlement, additive: boolean): string {
  if (s.gos <= 0) return `${s.base}`;
  if (s.gos <= 2) return `${s.base} + ${s.gos} = ${s.goScore}`;
  const add = additive ? s.gos : 2;
  return `(${s.base} + ${add}) × ${2 ** (s.gos - 2)} = ${s.goScore}`;
}

export function SettlementView({
  view,
  namer,
  busy,
  onNext,
  onClose,
}: {
  view: GameView;
  namer: SeatName;
  busy: boolean;
  onNext: () => void;
  onClose: () => void;
}): JSX.Element | null {
  const s = view.settlement;
  if (s === undefined) return null;
  const match = view.match;
  const finished = match?.finished ?? false;
  const additive = view.rules?.goScoring === GoScoring.ADDITIVE;
  const score = s.score;
  const winnerMult = s.winnerFactors.reduce((m, f) => m * Number(f.value), 1);
  const canDeal = view.viewer >= 0 && !finished;
  const money = s.pointValue > 0n;
  return (
    <div class="modal-back" role="dialog" aria-modal="true" aria-label={t("settlement")}>
      <section
        class="settlement panel"
        data-testid="settlement"
        data-outcome={s.outcome}
        data-winner={s.winner}
        data-go-score={String(s.goScore)}
        data-points={s.points.map(String).join(",")}
      >
        <header>
          <h2>{t("settlement")}</h2>
          <button class="link" onClick={onClose} aria-label={t("close")}>
            ✕
          </button>
        </header>
        <p class="outcome" data-testid="outcome">
          {s.winner >= 0 ? (
            <>
              <strong>
                {t("winner")}: {namer(s.winner)}
              </strong>{" "}
              — {term(s.outcome)}
              {s.reason && s.reason !== s.outcome ? ` (${term(s.reason)})` : ""}
            </>
          ) : (
            <strong>
              {t("draw")}
              {s.reason ? ` (${term(s.reason)})` : ""}
            </strong>
          )}
        </p>
        {s.winner >= 0 && score && (
          <>
            <h3>{t("base")}</h3>
            <table class="categories" data-testid="categories">
              <tbody>
                {CATS.filter((c) => score[c] > 0).map((c) => (
                  <tr key={c} data-category={c} data-value={score[c]}>
                    <th>{term(c)}</th>
                    <td class="detail">
                      {c === "gwang" && t("gwangCount", score.gwangCount) + (score.hasBigwang ? " (비광)" : "")}
                      {c === "yeol" && t("yeolCount", score.yeolCount)}
                      {c === "tti" && t("ttiCount", score.ttiCount)}
                      {c === "pi" && t("piCount", score.piValue)}
                      {c === "yeol" && withCount(categoryDetail(score.yeolCount, score.yeol))}
                      {c === "tti" && withCount(categoryDetail(score.ttiCount, score.tti))}
                      {c === "pi" && withCount(categoryDetail(score.piValue, score.pi))}
                    </td>
                    <td class="num">{score[c]}</td>
                  </tr>
                ))}
                <tr class="sum">
                  <th>{t("total")}</th>
                  <td />
                  <td class="num" data-testid="base">{s.base}</td>
                </tr>
              </tbody>
            </table>
            <p data-testid="go-bonus">
              {t("goBonus")}: {s.gos > 0 ? `${s.gos}고 → ${goFormula(s, additive)}` : lang() === "ko" ? "없음" : "none"} ·{" "}
              {t("goScore")} <strong>{String(s.goScore)}</strong>
            </p>
            {s.winnerFactors.length > 0 && (
              <>
                <h3>{t("winnerFactors")}</h3>
                <ul class="factors" data-testid="winner-factors">
                  {s.winnerFactors.map((f) => (
                    <li key={f.name} data-name={f.name} data-value={String(f.value)}>
                      <strong>
                        ×{String(f.value)} {term(f.name)}
                      </strong>{" "}
                      — {reason(f.name, s, view, s.winner, namer)}
                    </li>
                  ))}
                </ul>
              </>
            )}
            <h3>{t("bills")}</h3>
            <ul class="bills" data-testid="bills">
              {s.bills.map((b) => (
                <li key={b.seat} data-seat={b.seat} data-points={String(b.points)} data-pays={String(b.pays)}>
                  <div>
                    <strong>
                      {namer(b.seat)} → {namer(s.winner)}
                    </strong>
                    : {String(s.goScore)}
                    {winnerMult > 1 ? ` × ${winnerMult}` : ""}
                    {b.factors.map((f) => ` × ${String(f.value)}`).join("")} = <strong>{String(b.points)}</strong>
                  </div>
                  {b.factors.length > 0 && (
                    <ul class="factors">
                      {b.factors.map((f) => (
                        <li key={f.name} data-name={f.name} data-value={String(f.value)}>
                          ×{String(f.value)} {term(f.name)} — {reason(f.name, s, view, b.seat, namer)}
                        </li>
                      ))}
                    </ul>
                  )}
                  {notApplied(s, view, b.seat, namer).map((line) => (
                    <div class="not-applied" key={line}>
                      {line}
                    </div>
                  ))}
                  {b.pays !== b.points && (
                    <div class="moved">
                      {b.pays > 0n
                        ? `${t("paysFor", b.covers.filter((c) => c !== b.seat).map(namer).join(", "))}: ${String(b.pays)}`
                        : t("paysNothing")}
                    </div>
                  )}
                </li>
              ))}
            </ul>
          </>
        )}
        {s.payments.length > 0 && (
          <>
            <h3>{t("instant")}</h3>
            <ul class="payments" data-testid="payments">
              {s.payments.map((p, i) => (
                <li key={i} data-payer={p.payer} data-payee={p.payee} data-points={String(p.points)} data-reason={p.reason}>
                  {namer(p.payer)} → {namer(p.payee)}: {String(p.points)} ({term(p.reason)})
                </li>
              ))}
            </ul>
          </>
        )}
        <h3>{t("netPoints")}</h3>
        <table class="net" data-testid="net">
          <thead>
            <tr>
              <th />
              <th>{t("points")}</th>
              {money && <th>{t("money")}</th>}
              {match && <th>{t("matchTotal")}</th>}
              {match && <th>{t("record")}</th>}
            </tr>
          </thead>
          <tbody>
            {s.points.map((p, seat) => (
              <tr key={seat} data-seat={seat} data-points={String(p)}>
                <th>{namer(seat)}</th>
                <td class={`num ${p > 0n ? "plus" : p < 0n ? "minus" : ""}`}>{p > 0n ? `+${p}` : String(p)}</td>
                {money && <td class="num">{String(s.money[seat] ?? 0n)}</td>}
                {match && <td class="num">{String(match.points[seat] ?? 0n)}</td>}
                {match && (
                  <td class="num">
                    {match.wins[seat] ?? 0}/{match.losses[seat] ?? 0}/{match.draws[seat] ?? 0}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
        {s.carryNext && <p class="hint">{lang() === "ko" ? "다음 판은 ×2 (나가리)" : "The next round counts ×2 (나가리)."}</p>}
        <div class="choices">
          {finished ? (
            <>
              <p>
                <strong>{t("matchOver")}</strong>
              </p>
              <a class="button primary" href="#/">
                {t("newMatch")}
              </a>
            </>
          ) : canDeal ? (
            <>
              <button class="choice primary" data-testid="next-round" disabled={busy} onClick={onNext}>
                <span class="key">1</span>
                {t("nextRound")}
              </button>
              <Countdown clock={view.clock} seat={view.viewer} mine testid="next-round-clock" />
            </>
          ) : null}
        </div>
      </section>
    </div>
  );
}
