// Closes a client while one of its watches is open: close() aborts the watch (its `for await`
// throws a GostopError CANCELLED "client closed…"), fails the call in flight and closes the
// HTTP/2 connection; every later call fails with the same error. The program then exits by
// itself (no process.exit).
//
//   node dist/examples/close-watch.js [host:port]     (or GOSTOP_ADDRESS; GOSTOP_API_KEY if needed)
//   GOSTOP_PROTOCOL=connect node dist/examples/close-watch.js http://host:8080   (the HTTP port; or grpc-web)
//
// Prints one line per step; each failure as "<code> <message>".

import { ConnectError } from "@connectrpc/connect";

import { Code, GostopClient, GostopError, type NodeProtocol } from "../src/node.js";

/** "<code> <message>" of a failure (a GostopError, or a ConnectError of a raw call). */
function describe(error: unknown): string {
  const e = error instanceof GostopError ? error : ConnectError.from(error);
  return `${Code[e.code]} ${e.rawMessage}`;
}

/** How `run` failed, or "no error". */
async function failure(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "no error";
  } catch (error) {
    return describe(error);
  }
}

async function main(): Promise<void> {
  const address = process.argv[2] ?? process.env["GOSTOP_ADDRESS"] ?? "127.0.0.1:50051";
  const client = new GostopClient({
    address,
    apiKey: process.env["GOSTOP_API_KEY"],
    protocol: process.env["GOSTOP_PROTOCOL"] as NodeProtocol | undefined, // default: gRPC
  });
  const game = await client.createGame({ preset: "standard", players: 2 });
  console.log(`game ${game.gameId} created at version ${game.version}`);

  // A spectator follows the game in the background; nobody plays, so its stream stays open.
  let firstEvent: () => void = () => undefined;
  const watching = new Promise<void>((resolve) => (firstEvent = resolve));
  const watched = (async () => {
    let events = 0;
    try {
      for await (const _ of client.watch(game.gameId)) {
        events += 1;
        firstEvent();
      }
      return `the watch ended after ${events} events without an error`;
    } catch (error) {
      return `watch aborted after ${events} event(s): ${describe(error)}`;
    }
  })();
  await watching;

  const inFlight = failure(() => client.getGame(game.gameId));
  client.close();
  console.log(`closed: ${client.closed}`);
  console.log(await watched);
  console.log(`call in flight: ${await inFlight}`);
  console.log(`getGame after close: ${await failure(() => client.getGame(game.gameId))}`);
  console.log(`watch after close: ${await failure(async () => {
    for await (const _ of client.watch(game.gameId)) {
      break;
    }
  })}`);
  console.log(`raw call after close: ${await failure(() => client.raw.getGame({ gameId: game.gameId }))}`);
  client.close(); // a second close does nothing
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
