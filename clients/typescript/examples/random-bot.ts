// Plays a whole standard 2-player round against the gostop service: every seat picks uniformly
// among its legal actions until the round is over, while a spectator watches the event stream.
//
//   node dist/examples/random-bot.js [host:port]     (or GOSTOP_ADDRESS; GOSTOP_API_KEY if needed)
//   GOSTOP_PROTOCOL=connect node dist/examples/random-bot.js http://host:8080   (the HTTP port; or grpc-web)
//
// Prints one line per action, then the settlement, closes the client and exits 0 once the round
// is over (by itself: nothing is left open).

import { GostopClient, GostopError, Code, Phase, newRequestId, seatToken, type GameView, type NodeProtocol } from "../src/node.js";

async function main(): Promise<void> {
  const address = process.argv[2] ?? process.env["GOSTOP_ADDRESS"] ?? "127.0.0.1:50051";
  const seedArg = process.env["GOSTOP_SEED"];
  const client = new GostopClient({
    address,
    apiKey: process.env["GOSTOP_API_KEY"],
    protocol: process.env["GOSTOP_PROTOCOL"] as NodeProtocol | undefined, // default: gRPC
  });
  try {
    await play(client, seedArg);
  } finally {
    client.close(); // also ends the spectator's watch when the game failed half-way
  }
}

async function play(client: GostopClient, seedArg: string | undefined): Promise<void> {
  const game = await client.createGame({
    preset: "standard",
    players: 2,
    ...(seedArg !== undefined ? { seed: BigInt(seedArg) } : {}),
  });
  const gameId = game.gameId;
  console.log(`game ${gameId} created at version ${game.version} (${game.seats.length} seats)`);

  // A spectator follows the game from the start until the stream ends with the match.
  const watched = (async () => {
    let events = 0;
    let last = 0n;
    for await (const message of client.watch(gameId)) {
      events += 1;
      last = message.version;
    }
    return { events, last };
  })();
  // Awaited at the end; until then a failure of the watch must not count as unhandled.
  watched.catch(() => undefined);

  let view: GameView | undefined = game.view;
  let version = game.version;
  let actions = 0;
  while (view !== undefined && view.phase !== Phase.OVER) {
    const seat = view.toMove;
    const token = seatToken(game, seat);
    // The seat to move reads its own view (the spectator's has no legal actions).
    if (view.viewer !== seat || view.legalActions.length === 0) {
      const mine = await client.getGame(gameId, { token });
      view = mine.view;
      version = mine.version;
      continue;
    }
    const choice = view.legalActions[Math.floor(Math.random() * view.legalActions.length)];
    if (choice === undefined) {
      throw new Error("no legal action");
    }
    const requestId = newRequestId(`bot-s${seat}`);
    let result;
    try {
      result = await client.submitAction({ gameId, token, expectedVersion: version, action: choice.id, requestId });
    } catch (error) {
      const failure = GostopError.from(error);
      if (failure.code === Code.Unavailable) {
        // Safe to retry with the same request id: the first commit's response comes back.
        result = await client.submitAction({ gameId, token, expectedVersion: version, action: choice.id, requestId });
      } else {
        throw failure;
      }
    }
    actions += 1;
    console.log(`v${result.version} seat ${seat}: ${choice.label} (${result.events.length} events)`);
    view = result.view;
    version = result.version;
    if (result.settlement !== undefined) {
      const s = result.settlement;
      console.log(`round over: ${s.outcome} winner ${s.winner} points [${s.points.join(", ")}]`);
    }
  }

  const { events, last } = await watched;
  console.log(`spectator saw ${events} events up to version ${last}`);
  if (last !== version) {
    throw new Error(`the watch ended at version ${last}, the game is at ${version}`);
  }
  console.log(`done: ${actions} actions, final version ${version}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
