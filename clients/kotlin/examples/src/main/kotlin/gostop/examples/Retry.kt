// A step whose reply is lost: a proxy closes the connection as soon as the server begins to answer
// SubmitAction, so the action was applied and the client saw a broken connection (UNAVAILABLE, the
// outcome unknown). The client retries with the same request id on a new connection and gets the
// committed answer: the step is applied once. Prints one line; for HTTP/1.1 (Connect, gRPC-Web).
//
//   java -cp … gostop.examples.RetryKt [--server ADDRESS] [--protocol connect|grpc-web] [--api-key KEY]
package gostop.examples

import gostop.client.CallAuth
import gostop.client.GostopClient
import gostop.client.seatToken
import gostop.v1.Game.CreateGameRequest
import kotlinx.coroutines.runBlocking
import java.net.InetSocketAddress

fun main(args: Array<String>) {
    val options = Options(args)
    val key = options["api-key"] ?: System.getenv("GOSTOP_API_KEY")
    val client = clientOf(options, key)
    val server = client.baseUrl.removePrefix("http://").trimEnd('/')
    CuttingProxy(InetSocketAddress(server.substringBeforeLast(':'), server.substringAfterLast(':').toInt())).use { proxy ->
        val proxied = GostopClient("http://127.0.0.1:${proxy.port}", client.transport, apiKey = key)
        try {
            runBlocking {
                val game = client.createGame(CreateGameRequest.newBuilder().setPreset("standard").setPlayers(2).build())
                val token = seatToken(game, game.view.toMove)
                val mine = client.getGame(game.gameId, CallAuth(token))
                proxied.listRuleSets() // the connection the reply is lost on is a new one
                proxy.dropNextReply = true
                proxy.cut()
                val result = proxied.submitAction(game.gameId, token, mine.version, mine.view.getLegalActions(0).id, "lost-reply-1")
                val now = client.getGame(game.gameId).version
                val log = client.getLog(game.gameId)
                val once = result.version == mine.version + 1 && now == result.version && log.entries.size.toLong() == now
                println("lost reply: ${if (once) "applied once" else "NOT applied once ($now, ${log.entries.size})"}, " +
                    "answered ${if (proxy.connections >= 3) "on a new connection" else "without a retry"}")
            }
        } finally {
            proxied.close()
            client.close()
        }
    }
}
