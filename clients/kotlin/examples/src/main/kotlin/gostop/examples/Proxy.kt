package gostop.examples

import java.net.InetSocketAddress
import java.net.ServerSocket
import java.net.Socket
import java.util.Collections
import kotlin.concurrent.thread

/**
 * A loopback TCP proxy to [target] whose open connections [cut] closes (new ones are accepted).
 * With [dropNextReply] set, the next connection is closed as soon as the server begins to answer
 * on it, so the request was served and its reply is lost (for HTTP/1.1; HTTP/2 servers speak first).
 */
class CuttingProxy(target: InetSocketAddress) : AutoCloseable {
    private val server = ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())
    private val open = Collections.synchronizedList(ArrayList<Socket>())
    val port: Int get() = server.localPort

    @Volatile
    var dropNextReply = false

    /** Connections accepted. */
    @Volatile
    var connections = 0
        private set

    init {
        thread(isDaemon = true, name = "proxy-accept") {
            while (!server.isClosed) {
                val downstream = runCatching { server.accept() }.getOrNull() ?: break
                val upstream = runCatching { Socket(target.address, target.port) }.getOrNull()
                if (upstream == null) {
                    downstream.close()
                    continue
                }
                connections += 1
                open.add(downstream)
                open.add(upstream)
                val drop = dropNextReply
                dropNextReply = false
                pump(downstream, upstream)
                if (drop) dropReply(upstream, downstream) else pump(upstream, downstream)
            }
        }
    }

    private fun pump(from: Socket, to: Socket) = thread(isDaemon = true, name = "proxy-pump") {
        runCatching { from.getInputStream().copyTo(to.getOutputStream(), 8192) }
        runCatching { from.close() }
        runCatching { to.close() }
    }

    private fun dropReply(from: Socket, to: Socket) = thread(isDaemon = true, name = "proxy-drop") {
        runCatching { from.getInputStream().read() }
        runCatching { from.close() }
        runCatching { to.close() }
    }

    fun cut() {
        val sockets = synchronized(open) { open.toList().also { open.clear() } }
        sockets.forEach { runCatching { it.close() } }
    }

    override fun close() {
        server.close()
        cut()
    }
}

