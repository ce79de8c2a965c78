// A remote bot: a gostop.v1.BotService gRPC server (Connect's Node adapter on a plaintext HTTP/2
// server) that a tournament, or a game server's bot workers, ask for one seat's decisions.
//
//   node dist/examples/botserver.js --listen 127.0.0.1:7001
//   gostop tournament --bots greedy,remote:ts --remote-bot ts=127.0.0.1:7001
//
// Every request carries the seat's view with its legal actions, so the bot needs no connection to
// the game service. It plays the hand card that takes the most floor cards of its month, else the
// first legal action; with the option style=random (remote:ts:style=random) a random legal action
// drawn from the request's seed. Prints "botserver listening on HOST:PORT" once it serves (port 0
// takes a free port), and stops on SIGINT or SIGTERM.

import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";

import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import { BotService, type DecideRequest } from "../src/gen/gostop/v1/bot_pb.js";
import type { Action, GameView } from "../src/gen/gostop/v1/game_pb.js";

/** Month cards are ids 0-47 (month = id / 4 + 1); 48-50 are bonus 피. */
const MONTH_CARDS = 48;

/** The request's options, "key=value,...", as a map. */
function parseOptions(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of text.split(",")) {
    const [key, value] = item.split("=", 2);
    if (key !== undefined && key.trim() !== "") out.set(key.trim(), (value ?? "").trim());
  }
  return out;
}

/** Floor cards a play would take (a bonus card takes none but is worth playing: 1). */
function taken(action: Action | undefined, view: GameView): number {
  if (action?.kind.case !== "playCard") return 0;
  const card = action.kind.value.card;
  if (card >= MONTH_CARDS) return 1;
  return view.floor.filter((f) => f >= 0 && f < MONTH_CARDS && Math.floor(f / 4) === Math.floor(card / 4)).length;
}

/** A small seeded generator (splitmix64), so that a tournament replays the same choices. */
function randomIndex(seed: bigint, version: bigint, n: number): number {
  let z = (seed ^ (version * 0x9e3779b97f4a7c15n)) & 0xffffffffffffffffn;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
  z ^= z >> 31n;
  return Number(z % BigInt(n));
}

function decide(request: DecideRequest): number {
  const view = request.view;
  const legal = view?.legalActions ?? [];
  const first = legal[0];
  if (view === undefined || first === undefined) {
    throw new ConnectError("the view lists no legal actions", Code.InvalidArgument);
  }
  if (parseOptions(request.options).get("style") === "random") {
    return legal[randomIndex(request.seed, view.version, legal.length)]?.id ?? first.id;
  }
  let best = first;
  for (const candidate of legal) {
    if (taken(candidate.action, view) > taken(best.action, view)) best = candidate;
  }
  return best.id;
}

function routes(router: ConnectRouter): void {
  router.service(BotService, {
    decide: (request) => ({ actionId: decide(request) }),
  });
}

function listenAddress(): { host: string; port: number } {
  const flag = process.argv.indexOf("--listen");
  const text = (flag >= 0 ? process.argv[flag + 1] : undefined) ?? "127.0.0.1:7001";
  const colon = text.lastIndexOf(":");
  const port = Number(text.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--listen: expected HOST:PORT, not ${text}`);
  }
  return { host: text.slice(0, colon).replace(/^\[(.*)\]$/, "$1"), port };
}

function main(): void {
  const { host, port } = listenAddress();
  const server = http2.createServer(connectNodeAdapter({ routes, grpc: true, connect: false, grpcWeb: false }));
  server.listen(port, host, () => {
    const address = server.address() as AddressInfo;
    const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
    console.log(`botserver listening on ${shown}:${address.port}`);
  });
  const stop = (): void => {
    server.close();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main();
