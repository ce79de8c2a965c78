// The table's turn clock on the page (docs/clock.md): the countdown of the decision in progress,
// the seat's time bank once its decision time is spent, the auto-play (자동치기) switch, the
// away / auto-play badges and whether a seat is connected.
import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";

import type { GameView, SeatView, TableClock } from "../api";
import { clockTime } from "../clock";
import { t } from "../i18n";

function seconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

/** Date.now(), again every `everyMs` while `on`. */
function useNow(on: boolean, everyMs = 250): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    if (!on) return undefined;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [on, everyMs]);
  return now;
}

/**
 * The countdown of `seat`'s decision, when the clock runs for it: seconds of decision time, then
 * the bank's seconds apart ("extra time"). `mine` is the viewer's own decision: larger, with a bar.
 */
export function Countdown({ clock, seat, mine, testid }: {
  clock: TableClock | undefined;
  seat: number;
  mine?: boolean;
  testid?: string;
}): JSX.Element | null {
  const running = clock !== undefined && clock.seat >= 0 && clock.seat === seat;
  const now = useNow(running);
  if (!running) return null;
  const left = clockTime(clock, now);
  const urgent = left.inBank || left.decisionMs <= 5000;
  return (
    <span
      class={`countdown ${mine ? "mine" : ""} ${left.inBank ? "in-bank" : ""} ${urgent ? "urgent" : ""}`}
      data-testid={testid ?? (mine ? "my-clock" : `clock-${seat}`)}
      data-seat={seat}
      data-left-ms={left.inBank ? left.bankMs : left.decisionMs}
      data-in-bank={left.inBank ? "1" : "0"}
      role="timer"
    >
      {left.inBank ? (
        <span class="countdown-bank">{t("bankLeft", t("clockSeconds", seconds(left.bankMs)))}</span>
      ) : (
        t("clockSeconds", seconds(left.decisionMs))
      )}
      {mine && <span class="countdown-bar" style={{ width: `${(left.fraction * 100).toFixed(1)}%` }} aria-hidden="true" />}
    </span>
  );
}

/** The seat's away and auto-play badges (a table with a clock). */
export function ClockBadges({ seat }: { seat: SeatView }): JSX.Element | null {
  if (!seat.away && !seat.autoPlay) return null;
  return (
    <>
      {seat.away && (
        <span class="badge away" data-testid={`away-${seat.seat}`}>
          {t("away")}
        </span>
      )}
      {seat.autoPlay && (
        <span class="badge auto" data-testid={`auto-${seat.seat}`}>
          {t("autoBadge")}
        </span>
      )}
    </>
  );
}

/**
 * Whether someone holds the seat's stream (a table with a clock; not a bot seat): a small dot
 * while connected, a badge once disconnected.
 */
export function Presence({ seat, view }: { seat: SeatView; view: GameView }): JSX.Element | null {
  if (view.clock === undefined || view.botSeats.some((b) => b.seat === seat.seat)) return null;
  const label = t(seat.connected ? "online" : "offline");
  const common = { "data-testid": `presence-${seat.seat}`, "data-connected": seat.connected ? "1" : "0", title: label };
  if (seat.connected) return <span class="presence" role="img" aria-label={label} {...common} />;
  return (
    <span class="badge offline" {...common}>
      {label}
    </span>
  );
}

/** The viewer's auto-play switch: on while its seat is on auto-play in the latest view. */
export function AutoPlaySwitch({ on, disabled, onToggle }: { on: boolean; disabled: boolean; onToggle: (on: boolean) => void }): JSX.Element {
  return (
    <button
      class={`switch ${on ? "on" : ""}`}
      role="switch"
      aria-checked={on}
      title={t("autoPlayHint")}
      disabled={disabled}
      data-testid="auto-play"
      data-on={on ? "1" : "0"}
      onClick={() => onToggle(!on)}
    >
      <span class="switch-knob" aria-hidden="true" />
      {t("autoPlay")}
    </button>
  );
}
