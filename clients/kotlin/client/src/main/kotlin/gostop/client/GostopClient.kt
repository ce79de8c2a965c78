package gostop.client

import com.connectrpc.Code
import com.connectrpc.Headers
import com.connectrpc.ProtocolClientConfig
import com.connectrpc.ResponseMessage
import com.connectrpc.ServerOnlyStreamInterface
import com.connectrpc.impl.ProtocolClient
import com.connectrpc.okhttp.ConnectOkHttpClient
import com.connectrpc.protocols.NetworkProtocol
import gostop.v1.Game.Action
import gostop.v1.Game.CreateGameRequest
import gostop.v1.Game.CreateGameResponse
import gostop.v1.Game.GetGameLogRequest
import gostop.v1.Game.GetGameLogResponse
import gostop.v1.Game.GetGameRequest
import gostop.v1.Game.GetGameResponse
import gostop.v1.Game.ListRuleSetsRequest
import gostop.v1.Game.RuleSet
import gostop.v1.Game.SetAutoPlayRequest
import gostop.v1.Game.SetAutoPlayResponse
import gostop.v1.Game.StartNextRoundRequest
import gostop.v1.Game.SubmitActionRequest
import gostop.v1.Game.TurnResult
import gostop.v1.Game.WatchGameRequest
import gostop.v1.Game.WatchGameResponse
import gostop.v1.GameServiceClient
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.async
import kotlinx.coroutines.cancel
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.isActive
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import okhttp3.OkHttpClient
import java.util.Collections
import java.util.concurrent.TimeUnit
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/** How the client reaches the service. */
enum class Transport(internal val network: NetworkProtocol) {
    /** The Connect protocol (HTTP/1.1, or HTTP/2 over TLS), on the server's HTTP port. */
    CONNECT(NetworkProtocol.CONNECT),

    /** gRPC over HTTP/2 (cleartext with prior knowledge for http:// URLs), on the gRPC port. */
    GRPC(NetworkProtocol.GRPC),

    /** gRPC-Web, on the server's HTTP port. */
    GRPC_WEB(NetworkProtocol.GRPC_WEB),
}

/** The credentials and deadline of one call. */
data class CallAuth(
    /** A seat token: the call acts as that seat (`authorization: Bearer <token>`); null: a spectator or key holder. */
    val token: String? = null,
    /** This call's deadline, instead of the client's. */
    val timeout: Duration? = null,
)

/** The whole log of a game, read page by page: every entry and the last page's other fields. */
data class GameLog(val entries: List<gostop.v1.Game.LogEntry>, val last: GetGameLogResponse) {
    val version: Long get() = last.version
}

/**
 * A client of `gostop.v1.GameService` on connect-kotlin and OkHttp: Connect, gRPC or gRPC-Web.
 *
 * It adds what every caller needs over the generated [GameServiceClient] ([raw]): credentials in
 * headers (a seat token as `authorization: Bearer <token>`, an API or operator key as `x-api-key`),
 * a deadline on every unary call ([timeout]), request ids and the expected version of every step,
 * retries of `UNAVAILABLE` with the very same request ([retry]), the log's paging, errors typed by
 * their `google.rpc.ErrorInfo` ([GostopException]) and [watch], a [Flow] that resumes after a break
 * from the last version it delivered. [close] ends every open call and watch and refuses later
 * calls. It keeps no game state: it never asks for, nor holds, more than the caller's seat sees.
 *
 * [baseUrl] is `http://host:port` (or https). Safe to share between coroutines.
 */
class GostopClient @JvmOverloads constructor(
    val baseUrl: String,
    val transport: Transport = Transport.CONNECT,
    private val apiKey: String? = null,
    val timeout: Duration = DEFAULT_TIMEOUT,
    val retry: RetryPolicy = RetryPolicy.DEFAULT,
    okHttpClient: OkHttpClient? = null,
) : AutoCloseable {
    private val ownsHttp = okHttpClient == null
    private val http: OkHttpClient = httpClient(okHttpClient, transport, baseUrl)

    /** The generated client, for anything the wrapper does not cover (no credentials, no retries). */
    val raw: GameServiceClient = GameServiceClient(
        ProtocolClient(
            httpClient = ConnectOkHttpClient(http),
            config = ProtocolClientConfig(
                host = baseUrl.trimEnd('/'),
                serializationStrategy = ProtobufStrategy,
                networkProtocol = transport.network,
                ioCoroutineContext = Dispatchers.IO,
                // Streams have no deadline; unary calls get one per call (below).
                timeoutOracle = { null },
            ),
        ),
    )

    /** The unary calls in flight, cancelled by [close]. */
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.IO)

    /** The open watch streams, ended by [close]. */
    private val streams = Collections.synchronizedSet(HashSet<ServerOnlyStreamInterface<*, *>>())

    @Volatile
    var closed: Boolean = false
        private set

    /**
     * Ends every open call and watch (they fail with [GostopException] CANCELED, message
     * [CLIENT_CLOSED]) and refuses every later call; the HTTP client the client made is shut down.
     * Calling it again does nothing.
     */
    override fun close() {
        if (closed) return
        closed = true
        scope.cancel(CancellationException(CLIENT_CLOSED))
        val open = synchronized(streams) { streams.toList().also { streams.clear() } }
        // Cancelling a stream's channel cancels its HTTP call and frees the thread delivering to it.
        open.forEach { runCatching { it.responseChannel().cancel() } }
        if (ownsHttp) {
            http.dispatcher.cancelAll()
            http.dispatcher.executorService.shutdown()
            http.connectionPool.evictAll()
        }
    }

    private fun closedError(cause: Throwable? = null) = GostopException(Code.CANCELED, CLIENT_CLOSED, cause = cause)

    private fun headers(auth: CallAuth?): Headers {
        val out = HashMap<String, List<String>>()
        auth?.token?.let { out["authorization"] = listOf("Bearer $it") }
        apiKey?.let { out["x-api-key"] = listOf(it) }
        return out
    }

    /** One attempt of a unary call, run in the client's scope (so that close() ends it). */
    private suspend fun <O> attempt(auth: CallAuth?, call: suspend (Headers) -> ResponseMessage<O>): O {
        if (closed) throw closedError()
        val deadline = auth?.timeout ?: timeout
        val work = scope.async {
            val response = if (deadline.isPositive() && deadline.isFinite()) {
                withTimeout(deadline) { call(headers(auth)) }
            } else {
                call(headers(auth))
            }
            when (response) {
                is ResponseMessage.Success -> response.message
                is ResponseMessage.Failure -> throw GostopException.from(response.cause)
            }
        }
        try {
            return work.await()
        } catch (error: Throwable) {
            if (closed) throw closedError(error)
            if (error is CancellationException && !currentCoroutineContext().isActive) {
                work.cancel()
                throw error // the caller was cancelled
            }
            throw GostopException.from(error)
        }
    }

    /**
     * A unary call with the retry policy: the same request again after UNAVAILABLE. [repeatable]: a
     * read, or a step with its request id, which the server applies at most once.
     */
    private suspend fun <O> unary(
        auth: CallAuth?,
        repeatable: Boolean,
        call: suspend (Headers) -> ResponseMessage<O>,
    ): O {
        val backoff = retry.start()
        while (true) {
            val error = try {
                return attempt(auth, call)
            } catch (e: GostopException) {
                e
            }
            // Without a request id (CreateGame) a retry after an unknown outcome could apply the
            // call twice: only a failure known not to be applied is retried.
            val wait = if (!repeatable && error.outcomeUnknown) null else backoff.after(error)
            if (wait == null || closed) throw error
            delay(wait)
        }
    }

    /** Every preset at every player count it supports. */
    suspend fun listRuleSets(auth: CallAuth? = null): List<RuleSet> =
        unary(auth, true) { raw.listRuleSets(ListRuleSetsRequest.getDefaultInstance(), it) }.ruleSetsList

    /**
     * Deals the first round of a new match: its id, one token per seat, version 1. Needs an API
     * key when the server requires one, and an operator key for an explicit deal.
     */
    suspend fun createGame(request: CreateGameRequest, auth: CallAuth? = null): CreateGameResponse =
        unary(auth, false) { raw.createGame(request, it) }

    /** The caller's view (its legal actions when it is to move) and the version; no token: the spectator's. */
    suspend fun getGame(gameId: String, auth: CallAuth? = null): GetGameResponse =
        unary(auth, true) { raw.getGame(GetGameRequest.newBuilder().setGameId(gameId).build(), it) }

    /**
     * Applies one action of [token]'s seat, chosen at [expectedVersion] (the version of the view that
     * listed it), at most once per [requestId] (a fresh one when null; pass your own to retry across
     * restarts of your program). A stale version fails with `ABORTED` / `STALE_VERSION`: read the game
     * again and choose again.
     */
    suspend fun submitAction(
        gameId: String,
        token: String,
        expectedVersion: Long,
        actionId: Int,
        requestId: String? = null,
        timeout: Duration? = null,
    ): TurnResult = submit(gameId, token, expectedVersion, requestId, timeout) { it.setActionId(actionId) }

    /** [submitAction] with a structured action instead of an id. */
    suspend fun submitAction(
        gameId: String,
        token: String,
        expectedVersion: Long,
        action: Action,
        requestId: String? = null,
        timeout: Duration? = null,
    ): TurnResult = submit(gameId, token, expectedVersion, requestId, timeout) { it.setStructured(action) }

    private suspend fun submit(
        gameId: String,
        token: String,
        expectedVersion: Long,
        requestId: String?,
        timeout: Duration?,
        action: (SubmitActionRequest.Builder) -> SubmitActionRequest.Builder,
    ): TurnResult {
        val request = action(
            SubmitActionRequest.newBuilder().setGameId(gameId).setExpectedVersion(expectedVersion)
                .setRequestId(requestId ?: newRequestId()),
        ).build()
        val response = unary(CallAuth(token, timeout), true) { raw.submitAction(request, it) }
        check(response.hasResult()) { "SubmitAction returned no result" }
        return response.result
    }

    /** Deals the next round of a match once the current round is over. */
    suspend fun startNextRound(
        gameId: String,
        token: String,
        expectedVersion: Long,
        requestId: String? = null,
        timeout: Duration? = null,
    ): TurnResult {
        val request = StartNextRoundRequest.newBuilder().setGameId(gameId).setExpectedVersion(expectedVersion)
            .setRequestId(requestId ?: newRequestId()).build()
        val response = unary(CallAuth(token, timeout), true) { raw.startNextRound(request, it) }
        check(response.hasResult()) { "StartNextRound returned no result" }
        return response.result
    }

    /**
     * Turns auto-play (자동치기) on or off for [token]'s seat of a game with a turn clock: while on,
     * the table's bot makes the seat's decisions, each after the clock's pause, until the seat acts
     * itself. A step of the log of its own (an `AutoPlaySet` event), at most once per [requestId] (a
     * fresh one when null); asking for the state the seat is already in changes nothing. Answers the
     * version and the seat's view; `FAILED_PRECONDITION` / `NO_CLOCK` on a game without a clock.
     */
    suspend fun setAutoPlay(
        gameId: String,
        token: String,
        on: Boolean,
        requestId: String? = null,
        timeout: Duration? = null,
    ): SetAutoPlayResponse {
        val request = SetAutoPlayRequest.newBuilder().setGameId(gameId).setOn(on)
            .setRequestId(requestId ?: newRequestId()).build()
        return unary(CallAuth(token, timeout), true) { raw.setAutoPlay(request, it) }
    }

    /** One page of the unredacted log (operators, or seats once the match is over). */
    suspend fun getLogPage(gameId: String, afterVersion: Long = 0, pageSize: Int = 0, auth: CallAuth? = null): GetGameLogResponse {
        val request = GetGameLogRequest.newBuilder().setGameId(gameId).setAfterVersion(afterVersion)
            .setPageSize(pageSize).build()
        return unary(auth, true) { raw.getGameLog(request, it) }
    }

    /** The whole log, following next_after_version page by page. */
    suspend fun getLog(gameId: String, pageSize: Int = 0, auth: CallAuth? = null): GameLog {
        val entries = ArrayList<gostop.v1.Game.LogEntry>()
        var after = 0L
        while (true) {
            val page = getLogPage(gameId, after, pageSize, auth)
            entries.addAll(page.entriesList)
            val next = page.nextAfterVersion
            if (next == 0L) return GameLog(entries, page)
            check(next > after) { "GetGameLog paging does not advance ($after -> $next)" }
            after = next
        }
    }

    /**
     * The caller's redacted events of every version after [afterVersion] (0: the whole game), as
     * they are committed; the flow completes after the event that finishes the match. A stream that
     * breaks with a retryable status (`UNAVAILABLE`: a server draining or restarting, a lost
     * connection) is opened again after the last version whose events were all delivered, and the
     * events of a version already delivered are not delivered twice; [progress] tells where it stands.
     * No token: the spectator's events.
     *
     * The stream opens when the flow is collected. Leaving the collection early (`first()`,
     * `take(n)`, a throw, a cancelled coroutine) cancels the stream on the server; [close] ends it
     * with a [GostopException] CANCELED ([CLIENT_CLOSED]). Collecting the same flow again goes on
     * after the last version [progress] saw (pass a fresh [WatchProgress] to start over).
     */
    fun watch(gameId: String, token: String? = null, afterVersion: Long = 0, progress: WatchProgress = WatchProgress(afterVersion)): Flow<WatchGameResponse> = flow {
        val backoff = retry.start()
        while (true) {
            if (closed) throw closedError()
            val stream = raw.watchGame(headers(CallAuth(token)))
            streams.add(stream)
            if (closed) {
                streams.remove(stream)
                stream.responseChannel().cancel()
                throw closedError()
            }
            var failure: GostopException? = null
            try {
                // Each version comes as one message, handed out an event at a time (unpack).
                val request = WatchGameRequest.newBuilder().setGameId(gameId).setAfterVersion(progress.resume())
                    .setWholeVersions(true).build()
                stream.sendAndClose(request)
                val items = stream.responseChannel().iterator()
                while (failure == null) {
                    // Only the stream's failures are caught here: the collector's own (from emit) go up.
                    val message: WatchGameResponse? = try {
                        if (items.hasNext()) items.next() else null
                    } catch (e: CancellationException) {
                        if (closed) throw closedError(e)
                        throw e
                    } catch (e: Throwable) {
                        if (closed) throw closedError(e)
                        failure = GostopException.from(e)
                        continue
                    }
                    if (message == null) {
                        if (closed) throw closedError()
                        progress.finish()
                        return@flow
                    }
                    for (item in unpack(message)) {
                        if (progress.accept(item)) {
                            backoff.reset()
                            emit(item)
                        }
                    }
                }
            } finally {
                streams.remove(stream)
                // Whichever way the stream was left: its channel cancelled (so that the HTTP client's
                // thread blocked delivering the next message is released) and its call cancelled.
                stream.responseChannel().cancel()
                withContext(NonCancellable) { runCatching { stream.receiveClose() } }
            }
            val broken = checkNotNull(failure)
            val wait = backoff.after(broken) ?: throw broken
            progress.reconnects += 1
            delay(wait)
        }
    }

    companion object {
        /** The deadline of a unary call unless the client or the call says otherwise. */
        val DEFAULT_TIMEOUT: Duration = 10.seconds

        private fun httpClient(given: OkHttpClient?, transport: Transport, baseUrl: String): OkHttpClient {
            val builder = given?.newBuilder() ?: OkHttpClient.Builder()
                // Deadlines are the client's, per call; a watch may wait long between events.
                .readTimeout(0, TimeUnit.MILLISECONDS)
                .writeTimeout(0, TimeUnit.MILLISECONDS)
                .callTimeout(0, TimeUnit.MILLISECONDS)
            if (given == null) {
                // Retries are the client's (RetryPolicy), not OkHttp's too.
                builder.retryOnConnectionFailure(false)
            }
            if (given == null && baseUrl.startsWith("http://")) {
                // Plain HTTP only: OkHttp then leaves the platform's TLS alone (its set-up is most of
                // the time a fresh process spends making a client).
                builder.connectionSpecs(listOf(okhttp3.ConnectionSpec.CLEARTEXT))
            }
            if (transport == Transport.GRPC && baseUrl.startsWith("http://")) {
                // gRPC needs HTTP/2; without TLS there is no negotiation: prior knowledge.
                builder.protocols(listOf(okhttp3.Protocol.H2_PRIOR_KNOWLEDGE))
            }
            return builder.build()
        }
    }
}
