// A bot that plays a whole standard 2-player round with random legal actions while a spectator
// watches (the watch Flow), then closes its client and exits by itself.
//
//   java -cp … gostop.examples.RandomBotKt [--server ADDRESS] [--protocol grpc|connect|grpc-web]
//        [--api-key KEY] [--seed N]
//
// Also from GOSTOP_ADDRESS, GOSTOP_PROTOCOL, GOSTOP_API_KEY and GOSTOP_SEED.
package gostop.examples

import gostop.client.GostopException
import gostop.client.Reason
import gostop.client.newRequestId
import gostop.client.seatToken
import gostop.v1.Game.CreateGameRequest
import gostop.v1.Game.Phase
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.fold
import kotlinx.coroutines.runBlocking
import kotlin.random.Random
import kotlin.system.exitProcess

fun main(args: Array<String>) {
    val options = Options(args)
    val client = clientOf(options, options["api-key"] ?: System.getenv("GOSTOP_API_KEY"))
    val failed = try {
        runBlocking { play(client, options) }
        false
    } catch (e: Exception) {
        System.err.println(e.message)
        true
    } finally {
        client.close()
    }
    if (failed) exitProcess(1)
}

private suspend fun play(client: gostop.client.GostopClient, options: Options) = kotlinx.coroutines.coroutineScope {
    val request = CreateGameRequest.newBuilder().setPreset("standard").setPlayers(2)
    (options["seed"] ?: System.getenv("GOSTOP_SEED"))?.let { request.setSeed(it.toLong()) }
    val game = client.createGame(request.build())
    val gameId = game.gameId
    println("game $gameId created at version ${game.version} (${game.seatsCount} seats)")

    // The spectator: every event up to the end of the match (the flow completes there).
    val watched = async { client.watch(gameId).fold(0 to 0L) { (events, _), item -> events + 1 to item.version } }

    var view = game.view
    var version = game.version
    var actions = 0
    while (view.phase != Phase.PHASE_OVER) {
        val seat = view.toMove
        val token = seatToken(game, seat)
        if (view.viewer != seat || view.legalActionsCount == 0) {
            val mine = client.getGame(gameId, gostop.client.CallAuth(token))
            view = mine.view
            version = mine.version
            continue
        }
        val choice = view.getLegalActions(Random.nextInt(view.legalActionsCount))
        val result = try {
            // The client retries UNAVAILABLE with this same request id: applied at most once.
            client.submitAction(gameId, token, version, choice.id, newRequestId("kt-bot-s$seat"))
        } catch (e: GostopException) {
            if (e.reason != Reason.STALE_VERSION) throw e
            // Someone moved first: read the game again and choose again.
            view = client.getGame(gameId, gostop.client.CallAuth(token)).view
            continue
        }
        actions += 1
        println("v${result.version} seat $seat: ${choice.label} (${result.eventsCount} events)")
        view = result.view
        version = result.version
        if (result.hasSettlement()) {
            val s = result.settlement
            println("round over: ${s.outcome} winner ${s.winner} points ${s.pointsList}")
        }
    }
    val (events, last) = watched.await()
    println("spectator saw $events events up to version $last")
    check(last == version) { "the watch ended at version $last, the game is at $version" }
    println("done: $actions actions, final version $version")
}
