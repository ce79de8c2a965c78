// What is left of the decision in progress, from the view's TableClock (docs/clock.md). The server
// enforces the clock; the page only shows it, reading the server's Unix milliseconds against this
// machine's clock.
import type { TableClock } from "./api";

/** What is left of a decision at `now`. */
export interface ClockTime {
  /** Milliseconds of decision time left (0 once the bank runs). */
  decisionMs: number;
  /** Milliseconds of bank left: all of it until the decision time is spent. */
  bankMs: number;
  /** The decision time is spent and the bank runs. */
  inBank: boolean;
  /** What is left of the part that runs now, from 1 to 0 (for the bar). */
  fraction: number;
}

/** The decision time and bank left of the clock's decision at `now` (Unix milliseconds). */
export function clockTime(clock: TableClock, now: number): ClockTime {
  const started = Number(clock.startedMs);
  const bankFrom = Number(clock.bankFromMs);
  const deadline = Number(clock.deadlineMs);
  // An away or auto-play seat's deadline comes before its decision time ends.
  const decisionEnd = Math.min(bankFrom, deadline);
  // A machine whose clock runs behind the server's would count from more than the whole
  // decision: never show more than that.
  const at = Math.max(now, started);
  const decisionMs = Math.max(0, decisionEnd - at);
  const inBank = at >= bankFrom && deadline > bankFrom;
  const bankMs = Math.max(0, deadline - Math.max(at, bankFrom));
  const span = inBank ? deadline - bankFrom : decisionEnd - started;
  const fraction = span > 0 ? (inBank ? bankMs : decisionMs) / span : 0;
  return { decisionMs, bankMs, inBank, fraction: Math.min(1, Math.max(0, fraction)) };
}
