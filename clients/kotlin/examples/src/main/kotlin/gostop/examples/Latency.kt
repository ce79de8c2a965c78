// The latency of calls from a fresh process: the first call (connection set-up, class loading and
// the JIT's cold start included), the median of the next N calls (ListRuleSets) and the first call
// of a second client made in the same process.
//
//   java -cp … gostop.examples.LatencyKt [--server ADDRESS] [--protocol grpc|connect|grpc-web] [--calls N]
package gostop.examples

import kotlinx.coroutines.runBlocking

fun main(args: Array<String>) {
    val options = Options(args)
    val calls = options["calls"]?.toInt() ?: 100
    val started = System.nanoTime()
    val client = clientOf(options, null)
    val made = (System.nanoTime() - started) / 1e6
    client.use {
        runBlocking {
            client.listRuleSets()
            val first = (System.nanoTime() - started) / 1e6
            val times = (1..calls).map {
                val t = System.nanoTime()
                client.listRuleSets()
                (System.nanoTime() - t) / 1e6
            }.sorted()
            println("first call: %.1f ms (%.1f ms of it making the client), median of the next %d: %.2f ms"
                .format(first, made, calls, times[times.size / 2]))
            // A second client in the same (now warm) process: its own connection, no class loading.
            val again = System.nanoTime()
            clientOf(options, null).use { second ->
                second.listRuleSets()
                println("first call of a second client: %.1f ms".format((System.nanoTime() - again) / 1e6))
            }
        }
    }
}
