// Waits for the first event of a game, then stops watching with `break`: leaving the `for await`
// early cancels the stream on the server and releases the connection, so the program exits by
// itself (no process.exit, no close()).
//
//   node dist/examples/first-event.js [host:port] [game-id]     (or GOSTOP_ADDRESS; GOSTOP_API_KEY if needed)
//   GOSTOP_PROTOCOL=connect node dist/examples/first-event.js http://host:8080   (the HTTP port; or grpc-web)
//
// Without a game id it creates a standard 2-player game and watches it from the start as a
// spectator (its first event is the deal). Prints the event, then "left the watch".

import { GostopClient, type NodeProtocol } from "../src/node.js";

async function main(): Promise<void> {
  const address = process.argv[2] ?? process.env["GOSTOP_ADDRESS"] ?? "127.0.0.1:50051";
  const client = new GostopClient({
    address,
    apiKey: process.env["GOSTOP_API_KEY"],
    protocol: process.env["GOSTOP_PROTOCOL"] as NodeProtocol | undefined, // default: gRPC
  });
  const gameId = process.argv[3] ?? (await client.createGame({ preset: "standard", players: 2 })).gameId;
  console.log(`watching game ${gameId}`);

  for await (const { version, event } of client.watch(gameId)) {
    console.log(`first event: version ${version} ${event?.kind.case ?? "(none)"}`);
    break; // cancels the stream: nothing is left open
  }
  console.log("left the watch");
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
