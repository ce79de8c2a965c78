// The deck, card by card (#/cards): each card as the table draws it, with its everyday name, its
// kind and what it scores, so a newcomer can learn the cards before sitting down.
import type { JSX } from "preact";

import { CARDS, MONTH_NAMES_EN, MONTH_NAMES_KO } from "../cards";
import { lang } from "../i18n";
import { Card } from "./Card";

const KIND_TEXT = {
  gwang: ["광", "bright"],
  yeol: ["열끗", "animal"],
  tti: ["띠", "ribbon"],
  pi: ["피", "junk"],
} as const;

export function Deck(): JSX.Element {
  const ko = lang() === "ko";
  const months = Array.from({ length: 12 }, (_, i) => i + 1);
  return (
    <main class="deck" data-testid="deck">
      <h2>{ko ? "화투 48장과 보너스 패" : "The 48 hwatu cards and the bonus cards"}</h2>
      <p class="hint">
        {ko
          ? "광 5장 (비광 포함), 열끗 9장 (고도리 새 3장, 국진), 띠 10장 (홍단·청단·초단 각 3장, 비띠), 피 24장 (쌍피 2장)."
          : "5 광 (비광 among them), 9 열끗 (the three 고도리 birds, 국진), 10 띠 (three each of 홍단, 청단, 초단, and 비띠), 24 피 (two 쌍피)."}
      </p>
      <div class="deck-grid">
        {months.map((m) => (
          <section class="deck-month" key={m}>
            <h3>
              {m}월 {MONTH_NAMES_KO[m - 1]}
              {!ko && <small> · {MONTH_NAMES_EN[m - 1]}</small>}
            </h3>
            <div class="deck-cards">
              {CARDS.filter((c) => c.month === m).map((c) => (
                <figure key={c.id} data-card={c.id} data-name={c.name}>
                  <Card id={c.id} />
                  <figcaption>
                    <strong>{c.name}</strong>
                    <span>{KIND_TEXT[c.kind][ko ? 0 : 1]}</span>
                  </figcaption>
                </figure>
              ))}
            </div>
          </section>
        ))}
        <section class="deck-month">
          <h3>{ko ? "보너스 패" : "Bonus cards"}</h3>
          <div class="deck-cards">
            {CARDS.filter((c) => c.bonus).map((c) => (
              <figure key={c.id} data-card={c.id} data-name={c.name}>
                <Card id={c.id} />
                <figcaption>
                  <strong>{c.name}</strong>
                  <span>피 {c.pi}</span>
                </figcaption>
              </figure>
            ))}
          </div>
        </section>
      </div>
    </main>
  );
}
