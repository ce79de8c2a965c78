// The watch Flow's ends and breaks, one line each; the program must exit by itself (nothing of the
// client may keep the JVM running):
// - leaving a watch early (first(), a throw in collect) ends its stream;
// - a watch through a TCP proxy that cuts every connection after every 7th event it delivers
//   reconnects and resumes from the last version seen: the events delivered are exactly the whole
//   game's, once each, in order, while a random bot plays the round;
// - close() ends an open watch and fails later calls with CANCELED, CLIENT_CLOSED.
//
//   java -cp … gostop.examples.WatchKt [--server ADDRESS] [--protocol grpc|connect|grpc-web] [--api-key KEY]
package gostop.examples

import gostop.client.CallAuth
import gostop.client.GostopClient
import gostop.client.GostopException
import gostop.client.WatchProgress
import gostop.client.seatToken
import gostop.v1.Game.CreateGameRequest
import gostop.v1.Game.CreateGameResponse
import gostop.v1.Game.Phase
import gostop.v1.Game.WatchGameResponse
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import java.net.InetSocketAddress

private fun key(e: WatchGameResponse) = "${e.version}:${e.event}"

/** A whole round with the lowest legal action of the seat to move. */
private suspend fun playRound(client: GostopClient, game: CreateGameResponse) {
    var view = game.view
    var version = game.version
    while (view.phase != Phase.PHASE_OVER) {
        val token = seatToken(game, view.toMove)
        if (view.viewer != view.toMove || view.legalActionsCount == 0) {
            val mine = client.getGame(game.gameId, CallAuth(token))
            view = mine.view
            version = mine.version
            continue
        }
        val result = client.submitAction(game.gameId, token, version, view.getLegalActions(0).id)
        view = result.view
        version = result.version
    }
}

fun main(args: Array<String>) {
    val options = Options(args)
    val key = options["api-key"] ?: System.getenv("GOSTOP_API_KEY")
    val client = clientOf(options, key)
    try {
        watchChecks(client, key)
    } finally {
        client.close()
    }
}

private fun watchChecks(client: GostopClient, key: String?) {
    runBlocking {
        val created = client.createGame(CreateGameRequest.newBuilder().setPreset("standard").setPlayers(2).build())
        println("first(): version ${client.watch(created.gameId).first().version}")
        try {
            client.watch(created.gameId).collect { throw IllegalStateException("thrown at ${it.version}") }
        } catch (e: IllegalStateException) {
            println("throw: ${e.message}")
        }

        // Resuming after breaks.
        val server = client.baseUrl.removePrefix("http://").trimEnd('/')
        val host = server.substringBeforeLast(':')
        val port = server.substringAfterLast(':').toInt()
        CuttingProxy(InetSocketAddress(host, port)).use { proxy ->
            val proxied = GostopClient("http://127.0.0.1:${proxy.port}", client.transport, apiKey = key)
            try {
                val game = client.createGame(CreateGameRequest.newBuilder().setPreset("standard").setPlayers(2).build())
                val progress = WatchProgress()
                val seen = coroutineScope {
                    val watching = async {
                        val out = ArrayList<WatchGameResponse>()
                        proxied.watch(game.gameId, progress = progress).collect {
                            out.add(it)
                            if (out.size % 7 == 0) proxy.cut()
                        }
                        out
                    }
                    playRound(client, game)
                    watching.await()
                }
                val whole = client.watch(game.gameId).toList()
                val same = seen.map(::key) == whole.map(::key)
                println("resumed: ${if (same) "every event once, in order" else "events differ"}, " +
                    "reconnected ${if (progress.reconnects > 0) "after breaks" else "never"}, " +
                    "last version ${if (progress.lastCompleteVersion == whole.last().version) "the game's" else "not the game's"}")
            } finally {
                proxied.close()
            }
        }

        // close() with a watch open.
        val opened = CompletableDeferred<Unit>()
        val watching = async {
            try {
                client.watch(created.gameId).collect { opened.complete(Unit) }
                "ended"
            } catch (e: GostopException) {
                "${e.code.name} ${e.rawMessage}"
            }
        }
        opened.await()
        client.close()
        println("watch: ${watching.await()}")
        val after = try {
            client.getGame(created.gameId)
            "no error"
        } catch (e: GostopException) {
            "${e.code.name} ${e.rawMessage}"
        }
        println("after: $after")
    }
}
