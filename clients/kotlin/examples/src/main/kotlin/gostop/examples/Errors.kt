// The typed errors of the client, one line each: the status code, the ErrorInfo reason and its
// metadata (sorted), for a missing game, a wrong preset, a stale version, a seat that is not to
// move, a token of another game's seat, a token that is no token, and a watch of a missing game
// (the error of a stream).
//
//   java -cp … gostop.examples.ErrorsKt [--server ADDRESS] [--protocol grpc|connect|grpc-web] [--api-key KEY]
package gostop.examples

import gostop.client.CallAuth
import gostop.client.GostopClient
import gostop.client.GostopException
import gostop.client.seatToken
import gostop.v1.Game.CreateGameRequest
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking

private suspend fun failure(what: String, call: suspend () -> Any) {
    val line = try {
        call()
        "no error"
    } catch (e: GostopException) {
        val metadata = e.metadata.toSortedMap().entries.joinToString(" ") { "${it.key}=${it.value}" }
        listOf(e.code.name, e.reason, e.domain, metadata, "retryable=${e.retryable}").filter { it.isNotEmpty() }.joinToString(" ")
    }
    println("$what: $line")
}

fun main(args: Array<String>) {
    val options = Options(args)
    val client: GostopClient = clientOf(options, options["api-key"] ?: System.getenv("GOSTOP_API_KEY"))
    try {
        runBlocking {
            failure("missing game") { client.getGame("no-such-game") }
            failure("wrong preset") {
                client.createGame(CreateGameRequest.newBuilder().setPreset("no-such-preset").setPlayers(2).build())
            }
            val game = client.createGame(CreateGameRequest.newBuilder().setPreset("standard").setPlayers(2).setSeed(7).build())
            val other = client.createGame(CreateGameRequest.newBuilder().setPreset("standard").setPlayers(2).setSeed(8).build())
            val first = game.view.toMove
            val firstToken = seatToken(game, first)
            val mine = client.getGame(game.gameId, CallAuth(firstToken))
            val played = client.submitAction(game.gameId, firstToken, mine.version, mine.view.getLegalActions(0).id)
            // The seat to move now, at the version before that action: stale.
            val next = played.view.toMove
            val nextToken = seatToken(game, next)
            val nextView = client.getGame(game.gameId, CallAuth(nextToken)).view
            failure("stale version") {
                client.submitAction(game.gameId, nextToken, mine.version, nextView.getLegalActions(0).id)
            }
            val idle = seatToken(game, game.seatsList.first { it.seat != next }.seat)
            failure("not your turn") {
                client.submitAction(game.gameId, idle, played.version, nextView.getLegalActions(0).id)
            }
            failure("foreign seat token") {
                client.submitAction(game.gameId, seatToken(other, next), played.version, nextView.getLegalActions(0).id)
            }
            failure("bad token") { client.getGame(game.gameId, CallAuth("not-a-token")) }
            failure("watch of a missing game") { client.watch("no-such-game").first() }
        }
    } finally {
        client.close()
    }
}
