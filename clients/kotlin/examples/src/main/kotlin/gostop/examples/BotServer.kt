// A gostop.v1.BotService server (grpc-java): a bot that plays seats of games for whoever asks it
// (a tournament, a server's bot workers). It takes the legal action that captures the most floor
// cards (the first such), or with options "style=random" a random one drawn from the request's
// seed. Prints "botserver listening on HOST:PORT" once it listens (port 0: a free one).
//
//   java -cp … gostop.examples.BotServerKt [--listen HOST:PORT]
package gostop.examples

import gostop.v1.Bot.DecideRequest
import gostop.v1.Bot.DecideResponse
import gostop.v1.Game.Action
import gostop.v1.Game.GameView
import io.grpc.CallOptions
import io.grpc.MethodDescriptor
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder
import io.grpc.stub.ClientCalls
import io.grpc.ServerServiceDefinition
import io.grpc.Status
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder
import io.grpc.protobuf.ProtoUtils
import io.grpc.stub.ServerCalls
import io.grpc.stub.StreamObserver
import java.net.InetSocketAddress

/** Month cards are ids 0-47 (month = id / 4 + 1); 48-50 are bonus 피. */
private const val MONTH_CARDS = 48

/** The request's options, "key=value,...", as a map. */
private fun parseOptions(text: String): Map<String, String> = text.split(",").mapNotNull { item ->
    val parts = item.split("=", limit = 2)
    val key = parts[0].trim()
    if (key.isEmpty()) null else key to (parts.getOrNull(1) ?: "").trim()
}.toMap()

/** Floor cards a play would take (a bonus card takes none but is worth playing: 1). */
private fun taken(action: Action, view: GameView): Int {
    if (action.kindCase != Action.KindCase.PLAY_CARD) return 0
    val card = action.playCard.card
    if (card >= MONTH_CARDS) return 1
    return view.floorList.count { it in 0 until MONTH_CARDS && it / 4 == card / 4 }
}

/** A small seeded generator (splitmix64), so that a tournament replays the same choices. */
private fun randomIndex(seed: Long, version: Long, n: Int): Int {
    var z = seed xor (version * -0x61c8864680b583ebL)
    z = (z xor (z ushr 30)) * -0x40a7b892e31b1a47L
    z = (z xor (z ushr 27)) * -0x6b2fb644ecceee15L
    z = z xor (z ushr 31)
    return java.lang.Long.remainderUnsigned(z, n.toLong()).toInt()
}

fun decide(request: DecideRequest): Int {
    val view = request.view
    val legal = view.legalActionsList
    if (!request.hasView() || legal.isEmpty()) {
        throw Status.INVALID_ARGUMENT.withDescription("the view lists no legal actions").asRuntimeException()
    }
    if (parseOptions(request.options)["style"] == "random") {
        return legal[randomIndex(request.seed, view.version, legal.size)].id
    }
    var best = legal[0]
    for (candidate in legal) {
        if (taken(candidate.action, view) > taken(best.action, view)) best = candidate
    }
    return best.id
}

private val DECIDE: MethodDescriptor<DecideRequest, DecideResponse> =
    MethodDescriptor.newBuilder<DecideRequest, DecideResponse>()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName("gostop.v1.BotService", "Decide"))
        .setRequestMarshaller(ProtoUtils.marshaller(DecideRequest.getDefaultInstance()))
        .setResponseMarshaller(ProtoUtils.marshaller(DecideResponse.getDefaultInstance()))
        .build()

private val SERVICE: ServerServiceDefinition = ServerServiceDefinition.builder("gostop.v1.BotService")
    .addMethod(
        DECIDE,
        ServerCalls.asyncUnaryCall { request: DecideRequest, response: StreamObserver<DecideResponse> ->
            try {
                response.onNext(DecideResponse.newBuilder().setActionId(decide(request)).build())
                response.onCompleted()
            } catch (e: io.grpc.StatusRuntimeException) {
                response.onError(e)
            }
        },
    )
    .build()

/**
 * One Decide through the server over loopback before it says it listens: the JVM loads and
 * compiles the HTTP/2 path at the first call, which would otherwise make the first caller's
 * connection wait past its handshake timeout.
 */
private fun warmUp(address: InetSocketAddress) {
    val channel = NettyChannelBuilder.forAddress(InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), address.port))
        .usePlaintext().build()
    try {
        val view = GameView.newBuilder().addLegalActions(gostop.v1.Game.LegalAction.newBuilder().setId(0)).build()
        repeat(20) {
            ClientCalls.blockingUnaryCall(channel, DECIDE, CallOptions.DEFAULT, DecideRequest.newBuilder().setView(view).build())
        }
    } finally {
        channel.shutdownNow()
    }
}

fun main(args: Array<String>) {
    val options = Options(args)
    val text = options["listen"] ?: "127.0.0.1:7001"
    val colon = text.lastIndexOf(':')
    val port = text.substring(colon + 1).toIntOrNull()
    require(colon > 0 && port != null && port in 0..65535) { "--listen: expected HOST:PORT, not $text" }
    val host = text.substring(0, colon).removePrefix("[").removeSuffix("]")
    val server = NettyServerBuilder.forAddress(InetSocketAddress(host, port)).addService(SERVICE).build().start()
    val bound = server.listenSockets.first() as InetSocketAddress
    warmUp(bound)
    val shown = if (bound.address is java.net.Inet6Address) "[${bound.address.hostAddress}]" else bound.address.hostAddress
    println("botserver listening on $shown:${bound.port}")
    System.out.flush()
    Runtime.getRuntime().addShutdownHook(Thread { server.shutdown() })
    server.awaitTermination()
}
