// Runs the shared conformance scenarios (tests/conformance/scenarios/*.json) against a server.
//
//   node dist/src/conformance.js [--server ADDRESS] [--protocol grpc|connect|grpc-web]
//                                [--http-version 1.1|2] [--fetch] [--operator-key KEY]
//                                [--scenarios DIR] [--page-size N] [FILE…]
//
// The protocol is gRPC by default (the server's gRPC port, "host:port"); "connect" and
// "grpc-web" speak to its HTTP port (`--server http://host:port`, or host:port), over HTTP/1.1 by
// default or HTTP/2 with --http-version 2. With --fetch the calls go through the package's browser
// entry instead (createBrowserClient: @connectrpc/connect-web over fetch, as in a page; Connect or
// gRPC-Web). The server also comes from GOSTOP_ADDRESS, the key from GOSTOP_OPERATOR_KEY, the
// folder from GOSTOP_SCENARIOS (default: the repository's tests/conformance/scenarios). For each
// scenario it creates the game with the operator key, submits every step with its seat's token at
// the version it holds (with a request id; an auto-play step is a SetAutoPlay), makes the calls the
// server must refuse (each must fail with its code, reason and metadata), reads the whole log page
// by page (7 entries a page by default, so that paging is exercised) and checks the final version,
// every entry's version, seat, action id and action, every event, the last round's settlement and
// the named fields of the spectator's final view (the clock's times by how they relate to its
// settings and the seat's bank), parsing the expected JSON into the proto messages and comparing
// messages (not strings). Prints the transport, one line per scenario and `N passed, N failed`; exits 1
// when one failed, 2 when none was found (or on a bad option).

import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import {
  create,
  equals,
  fromJson,
  toJsonString,
  type DescMessage,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";

import {
  ActionSchema,
  CreateGameRequestSchema,
  EventSchema,
  GameViewSchema,
  GostopClient,
  GostopError,
  SettlementSchema,
  TableClockSchema,
  createBrowserClient,
  actionId,
  seatToken,
  type CreateGameResponse,
  type GameView,
  type NodeProtocol,
  type Settlement,
  type TurnResult,
} from "./node.js";
import type { GostopClient as AnyClient } from "./index.js";

interface Step {
  seat: number;
  action_id?: number;
  /** Not in the base format: a step that deals the next round of a match instead of acting. */
  start_next_round?: boolean;
  /** Not in the base format: SetAutoPlay as the seat (a step of the table alone). */
  set_auto_play?: boolean;
}

/** A call the server must refuse: a CreateGame (`create`) or a step of a seat. */
interface Refusal extends Partial<Step> {
  create?: JsonValue;
  error: { code: string; reason: string; metadata?: Record<string, string> };
}

interface ExpectedEntry {
  version: number | string;
  /** create, action, next_round or table (optional). */
  kind?: string;
  seat: number;
  actionId: number | null;
  /** The structured action (optional; null for a deal). */
  action?: JsonValue | null;
  events: JsonValue[];
}

/** The newest scenario format this runner understands. */
const FORMAT = 1;

interface Scenario {
  format?: number;
  name: string;
  description?: string;
  create: JsonValue;
  steps: Step[];
  refusals?: Refusal[];
  expect: {
    final_version: number | string;
    log: ExpectedEntry[];
    settlement?: JsonValue | null;
    final_view_spectator?: Record<string, JsonValue>;
  };
}

class Mismatch extends Error {}

function check(condition: boolean, message: () => string): asserts condition {
  if (!condition) {
    throw new Mismatch(message());
  }
}

function shorten(text: string, limit = 400): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}

function checkMessage<Desc extends DescMessage>(
  schema: Desc,
  expected: MessageShape<Desc>,
  actual: MessageShape<Desc>,
  where: string,
): void {
  // Compared as messages; the JSON renderings only explain a difference.
  check(equals(schema, expected, actual), () =>
    `${where}: expected ${shorten(toJsonString(schema, expected))}, got ${shorten(toJsonString(schema, actual))}`,
  );
}

/** The canonical gRPC names of the status codes (Connect shares their numbers). */
const CODE_NAMES = [
  "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
  "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
  "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
];

interface Answer {
  version: bigint;
  /** Set for a step of the game (not of the table alone). */
  result?: TurnResult;
}

/** One step's call at `version`: the version it answers and, for a step of the game, its result. */
async function call(client: AnyClient, gameId: string, token: string, version: bigint, step: Partial<Step>,
  requestId: string): Promise<Answer> {
  if (step.set_auto_play !== undefined) {
    const on = step.set_auto_play;
    const response = await client.setAutoPlay(gameId, on, { token, requestId });
    const seat = response.view?.seats.find((s) => s.seat === step.seat);
    check(seat?.autoPlay === on, () => `SetAutoPlay(${on}) answered seat ${step.seat}'s auto-play ${seat?.autoPlay}`);
    return { version: response.version };
  }
  if (step.action_id !== undefined) {
    const result = await client.submitAction({ gameId, token, expectedVersion: version, action: step.action_id, requestId });
    return { version: result.version, result };
  }
  if (step.start_next_round === true) {
    const result = await client.startNextRound({ gameId, token, expectedVersion: version, requestId });
    return { version: result.version, result };
  }
  throw new Mismatch("neither action_id, start_next_round nor set_auto_play");
}

/** Every call of the scenario's refusals fails with its code (canonical name), reason and metadata. */
async function checkRefusals(client: AnyClient, scenario: Scenario, game: CreateGameResponse, version: bigint
): Promise<void> {
  for (const [index, refusal] of (scenario.refusals ?? []).entries()) {
    const want = refusal.error;
    let error: GostopError | undefined;
    try {
      if (refusal.create !== undefined) {
        await client.createGame(fromJson(CreateGameRequestSchema, refusal.create));
      } else {
        await call(client, game.gameId, seatToken(game, refusal.seat ?? 0), version, refusal, `refusal-${index}`);
      }
    } catch (caught) {
      if (caught instanceof Mismatch) {
        throw caught;
      }
      error = GostopError.from(caught);
    }
    check(error !== undefined, () => `refusal ${index}: expected ${want.code} ${want.reason}, the call succeeded`);
    const name = CODE_NAMES[error.code] ?? String(error.code);
    check(name === want.code && error.reason === want.reason,
      () => `refusal ${index}: expected ${want.code} ${want.reason}, got ${name} ${error?.reason}`);
    for (const [key, value] of Object.entries(want.metadata ?? {})) {
      check(error.metadata[key] === value,
        () => `refusal ${index}: metadata ${key} = ${error?.metadata[key]}, expected ${value}`);
    }
  }
}

/**
 * Checks how the clock's server times relate to its settings and the seat's bank, then clears
 * them, so that the rest of the clock compares as a message.
 */
function checkClock(view: GameView): void {
  const clock = view.clock;
  if (clock === undefined) {
    return;
  }
  const { startedMs, bankFromMs, deadlineMs } = clock;
  if (clock.seat < 0) {
    check(startedMs === 0n && bankFromMs === 0n && deadlineMs === 0n, () => "a clock that runs for nobody has times");
  } else {
    const seat = view.seats.find((s) => s.seat === clock.seat);
    const settings = clock.settings;
    check(seat !== undefined && settings !== undefined && startedMs > 0n, () => `clock: no seat ${clock.seat} or no start`);
    const paused = seat.away || seat.autoPlay;
    const bankFrom = startedMs + BigInt(paused ? settings.autoPauseMs ?? 0 : settings.decisionMs);
    const deadline = paused ? bankFrom : bankFrom + BigInt(seat.bankMs);
    check(bankFromMs === bankFrom && deadlineMs === deadline,
      () => `clock times do not agree with the settings and the bank: ${toJsonString(TableClockSchema, clock)}`);
  }
  clock.startedMs = 0n;
  clock.bankFromMs = 0n;
  clock.deadlineMs = 0n;
}

async function runScenario(client: AnyClient, scenario: Scenario, pageSize: number): Promise<void> {
  check((scenario.format ?? FORMAT) <= FORMAT, () => `scenario format ${scenario.format}, this runner reads ${FORMAT}`);
  const game = await client.createGame(fromJson(CreateGameRequestSchema, scenario.create));
  const gameId = game.gameId;
  let version = game.version;
  let last: TurnResult | undefined;
  for (const [index, step] of scenario.steps.entries()) {
    let answer: Answer;
    try {
      answer = await call(client, gameId, seatToken(game, step.seat), version, step, `conformance-${index}`);
    } catch (error) {
      if (error instanceof Mismatch) {
        throw new Mismatch(`step ${index}: ${error.message}`);
      }
      throw new Mismatch(`step ${index} (${JSON.stringify(step)}): ${String(error)}`);
    }
    check(answer.version === version + 1n, () => `step ${index}: version ${answer.version} after ${version}`);
    version = answer.version;
    last = answer.result ?? last;
  }
  await checkRefusals(client, scenario, game, version);

  const expect = scenario.expect;
  const finalVersion = BigInt(expect.final_version);
  check(version === finalVersion, () => `final version ${version}, expected ${finalVersion}`);

  const log = await client.getLog(gameId, { pageSize });
  check(log.version === finalVersion, () => `log version ${log.version}, expected ${finalVersion}`);
  check(
    log.entries.length === expect.log.length,
    () => `log has ${log.entries.length} entries, expected ${expect.log.length}`,
  );
  for (const [i, want] of expect.log.entries()) {
    const got = log.entries[i];
    if (got === undefined) {
      throw new Mismatch(`log entry ${i} missing`);
    }
    const where = `log entry ${i} (version ${got.version})`;
    check(got.version === BigInt(want.version), () => `${where}: version ${got.version}, expected ${want.version}`);
    check(got.seat === want.seat, () => `${where}: seat ${got.seat}, expected ${want.seat}`);
    check(want.kind === undefined || got.kind === want.kind, () => `${where}: kind ${got.kind}, expected ${want.kind}`);
    const gotId = got.action === undefined ? null : actionId(got.action);
    check(gotId === want.actionId, () => `${where}: action id ${gotId}, expected ${want.actionId}`);
    if (want.action !== undefined && want.action !== null && got.action !== undefined) {
      checkMessage(ActionSchema, fromJson(ActionSchema, want.action), got.action, `${where} action`);
    }
    check(
      got.events.length === want.events.length,
      () => `${where}: ${got.events.length} events, expected ${want.events.length}`,
    );
    for (const [j, json] of want.events.entries()) {
      const gotEvent = got.events[j];
      if (gotEvent === undefined) {
        throw new Mismatch(`${where}: event ${j} missing`);
      }
      checkMessage(EventSchema, fromJson(EventSchema, json), gotEvent, `${where} event ${j}`);
    }
  }

  if (expect.settlement !== undefined) {
    // The last round's settlement: that of the last step's result (the deal's, without steps).
    const got: Settlement | undefined = last !== undefined ? last.settlement : game.view?.settlement;
    if (expect.settlement === null) {
      check(got === undefined, () => `settlement ${toJsonString(SettlementSchema, got as Settlement)}, expected none`);
    } else {
      check(got !== undefined, () => "no settlement in the last result");
      checkMessage(SettlementSchema, fromJson(SettlementSchema, expect.settlement), got, "settlement");
    }
  }

  if (expect.final_view_spectator !== undefined) {
    const spectator = await client.getGame(gameId);
    const actual = spectator.view;
    check(actual !== undefined, () => "no spectator view");
    checkClock(actual);
    const subset = expect.final_view_spectator;
    const expected = fromJson(GameViewSchema, subset);
    // Compare only the fields the subset names, as messages: copy those fields of the actual view.
    const projected = create(GameViewSchema);
    const record = projected as unknown as Record<string, unknown>;
    const source = actual as unknown as Record<string, unknown>;
    for (const key of Object.keys(subset)) {
      const field = GameViewSchema.fields.find((f) => f.jsonName === key || f.name === key);
      check(field !== undefined, () => `final_view_spectator: unknown field ${key}`);
      record[field.localName] = source[field.localName];
    }
    checkMessage(GameViewSchema, expected, projected, "final spectator view");
  }
}

interface Args {
  server: string;
  protocol: NodeProtocol;
  /** Unset: the client's default (HTTP/2 for gRPC, HTTP/1.1 for the others). */
  httpVersion: "1.1" | "2" | undefined;
  /** Through the browser entry (fetch) rather than Node's HTTP stacks. */
  fetch: boolean;
  key: string;
  dir: string;
  pageSize: number;
  files: string[];
}

function parseArgs(argv: string[]): Args {
  const here = dirname(fileURLToPath(import.meta.url));
  // dist/src/conformance.js → the repository root is four levels up.
  const repoRoot = resolve(here, "..", "..", "..", "..");
  let server = process.env["GOSTOP_ADDRESS"] ?? "127.0.0.1:50051";
  let key = process.env["GOSTOP_OPERATOR_KEY"] ?? "";
  let dir = process.env["GOSTOP_SCENARIOS"] ?? join(repoRoot, "tests", "conformance", "scenarios");
  let pageSize = 7;
  let protocol: NodeProtocol = "grpc";
  let httpVersion: "1.1" | "2" | undefined;
  let fetch = false;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined) {
        throw new Error(`${arg} needs a value`);
      }
      return next;
    };
    if (arg === "--server") {
      server = value();
    } else if (arg === "--protocol") {
      const name = value();
      if (name !== "grpc" && name !== "connect" && name !== "grpc-web") {
        throw new Error(`--protocol ${name}: grpc, connect or grpc-web`);
      }
      protocol = name;
    } else if (arg === "--http-version") {
      const version = value();
      if (version !== "1.1" && version !== "2") {
        throw new Error(`--http-version ${version}: 1.1 or 2`);
      }
      httpVersion = version;
    } else if (arg === "--fetch") {
      fetch = true;
    } else if (arg === "--operator-key") {
      key = value();
    } else if (arg === "--scenarios") {
      dir = value();
    } else if (arg === "--page-size") {
      pageSize = Number.parseInt(value(), 10);
    } else if (arg.startsWith("--")) {
      throw new Error(`unknown option ${arg}`);
    } else if (arg.endsWith(".json")) {
      files.push(arg);
    } else {
      server = arg;
    }
  }
  if (fetch && protocol === "grpc") {
    throw new Error("--fetch needs --protocol connect or grpc-web (browsers cannot speak gRPC)");
  }
  if (fetch && httpVersion !== undefined) {
    throw new Error("--fetch uses the HTTP version fetch negotiates: no --http-version");
  }
  return { server, protocol, httpVersion, fetch, key, dir, pageSize, files };
}

/** The client of `args`, and a line that says how it reaches the server. */
function makeClient(args: Args): { client: AnyClient; how: string } {
  const apiKey = args.key || undefined;
  if (args.fetch) {
    const baseUrl = /^[a-z]+:\/\//i.test(args.server) ? args.server : `http://${args.server}`;
    const client = createBrowserClient({ baseUrl, protocol: args.protocol === "grpc-web" ? "grpc-web" : "connect", apiKey });
    return { client, how: `${args.protocol} over fetch (the browser entry) to ${baseUrl}` };
  }
  const client = new GostopClient({ address: args.server, protocol: args.protocol, httpVersion: args.httpVersion, apiKey });
  const http = `HTTP/${args.httpVersion ?? (args.protocol === "grpc" ? "2" : "1.1")}`;
  return { client, how: `${args.protocol} over ${http} (Node) to ${args.server}` };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const { dir, pageSize, files } = args;
  let paths = files;
  if (paths.length === 0) {
    let names: string[] = [];
    try {
      names = statSync(dir).isDirectory() ? readdirSync(dir) : [];
    } catch {
      names = [];
    }
    paths = names.filter((n) => n.endsWith(".json")).sort().map((n) => join(dir, n));
  }
  const { client, how } = makeClient(args);
  console.log(`conformance: ${how}`);
  let passed = 0;
  let failed = 0;
  for (const path of paths) {
    let name = basename(path, ".json");
    const started = performance.now();
    try {
      const scenario = JSON.parse(readFileSync(path, "utf8")) as Scenario;
      name = scenario.name || name;
      await runScenario(client, scenario, pageSize);
      passed += 1;
      console.log(`PASS ${name} (${Math.round(performance.now() - started)} ms)`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (paths.length === 0) {
    console.log(`no scenarios found in ${dir}`);
  }
  console.log(`${passed} passed, ${failed} failed`);
  client.close();
  return failed > 0 ? 1 : paths.length === 0 ? 2 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);
