package gostop.examples

import gostop.client.GostopClient
import gostop.client.Transport

/** `--name value` options and the remaining positional arguments of a program's command line. */
class Options(args: Array<String>, private val flags: Set<String> = emptySet()) {
    val values = HashMap<String, String>()
    val positional = ArrayList<String>()

    init {
        var i = 0
        while (i < args.size) {
            val arg = args[i]
            when {
                arg in flags -> values[arg.removePrefix("--")] = "true"
                arg.startsWith("--") -> {
                    require(i + 1 < args.size) { "$arg needs a value" }
                    values[arg.removePrefix("--")] = args[i + 1]
                    i += 1
                }
                else -> positional.add(arg)
            }
            i += 1
        }
    }

    operator fun get(name: String): String? = values[name]
}

/** The transport named on a command line: grpc, connect or grpc-web. */
fun transportNamed(name: String): Transport = when (name) {
    "grpc" -> Transport.GRPC
    "connect" -> Transport.CONNECT
    "grpc-web" -> Transport.GRPC_WEB
    else -> throw IllegalArgumentException("--protocol $name: grpc, connect or grpc-web")
}

/** A base URL from host:port or a URL. */
fun baseUrl(server: String): String = if (Regex("^[a-z]+://", RegexOption.IGNORE_CASE).containsMatchIn(server)) server else "http://$server"

/** The client of a program: --server, --protocol (or GOSTOP_ADDRESS, GOSTOP_PROTOCOL) and a key. */
fun clientOf(options: Options, key: String?): GostopClient {
    val server = options["server"] ?: options.positional.firstOrNull() ?: System.getenv("GOSTOP_ADDRESS") ?: "127.0.0.1:50051"
    val transport = transportNamed(options["protocol"] ?: System.getenv("GOSTOP_PROTOCOL") ?: "grpc")
    return GostopClient(baseUrl(server), transport, apiKey = key?.ifEmpty { null })
}
