package gostop.client

import com.connectrpc.Code
import com.connectrpc.ConnectException
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.TimeoutCancellationException
import java.io.IOException

/** The ErrorInfo domain of every error of the service. */
const val ERROR_DOMAIN: String = "gostop.v1"

/** The message of the error of every call made through a closed client (CANCELED, no reason). */
const val CLIENT_CLOSED: String = "client closed: GostopClient.close() was called"

/**
 * A failed call: its status code (gRPC and Connect share them), the server's message and the
 * `google.rpc.ErrorInfo` of the status details. [reason] is "" when the failure did not come from
 * the service (a deadline, a refused connection, a closed client); [metadata] is the ErrorInfo's
 * (e.g. `current_version` of `STALE_VERSION`, `outcome` of the `UNAVAILABLE` reasons).
 */
class GostopException(
    val code: Code,
    val rawMessage: String,
    val reason: String = "",
    val domain: String = "",
    val metadata: Map<String, String> = emptyMap(),
    cause: Throwable? = null,
) : Exception(describe(code, reason, rawMessage), cause) {

    /** Whether a retry of the very same request (same request id) may succeed: `UNAVAILABLE`. */
    val retryable: Boolean get() = code == Code.UNAVAILABLE

    /**
     * Whether the call may have been applied although it failed: `outcome=unknown` (a write sent
     * to the store and not answered), a deadline or a cancellation, or a transport failure. Only a
     * retry with the same request id tells; `CreateGame`, which has none, is not retried then.
     */
    val outcomeUnknown: Boolean
        get() = when {
            metadata["outcome"] == "unknown" -> true
            metadata["outcome"] == "not_applied" -> false
            reason.isNotEmpty() -> false
            else -> code == Code.UNAVAILABLE || code == Code.DEADLINE_EXCEEDED || code == Code.CANCELED ||
                code == Code.UNKNOWN
        }

    companion object {
        private fun describe(code: Code, reason: String, message: String): String =
            "${code.codeName}${if (reason.isEmpty()) "" else " $reason"}: $message"

        /** The typed error of any failure of a call (a [ConnectException] or a local exception). */
        @JvmStatic
        fun from(error: Throwable): GostopException = when (error) {
            is GostopException -> error
            is ConnectException -> fromConnect(error)
            is TimeoutCancellationException ->
                GostopException(Code.DEADLINE_EXCEEDED, error.message ?: "deadline exceeded", cause = error)
            is CancellationException -> GostopException(Code.CANCELED, error.message ?: "cancelled", cause = error)
            is IOException -> GostopException(Code.UNAVAILABLE, error.message ?: error.toString(), cause = error)
            else -> GostopException(Code.UNKNOWN, error.message ?: error.toString(), cause = error)
        }

        private fun fromConnect(error: ConnectException): GostopException {
            val info = error.details.firstNotNullOfOrNull { detail ->
                if (detail.type.substringAfterLast('/') == RpcStatus.ERROR_INFO) {
                    runCatching { RpcStatus.errorInfo(detail.payload.toByteArray()) }.getOrNull()
                } else {
                    null
                }
            }
            // A transport failure (connection refused or reset) comes as a ConnectException wrapping
            // an IOException: the server may not have answered, as UNAVAILABLE says.
            val transport = info == null && error.exception is IOException && error.code == Code.UNKNOWN
            return GostopException(
                code = if (transport) Code.UNAVAILABLE else error.code,
                rawMessage = error.message ?: error.exception?.toString() ?: "",
                reason = info?.reason ?: "",
                domain = info?.domain ?: "",
                metadata = info?.metadata ?: emptyMap(),
                cause = error,
            )
        }
    }
}

/** The stable ErrorInfo reasons of the service (docs/service.md, "Errors"). */
object Reason {
    const val MALFORMED_GAME_ID = "MALFORMED_GAME_ID"
    const val MISSING_PRESET = "MISSING_PRESET"
    const val UNKNOWN_PRESET = "UNKNOWN_PRESET"
    const val INVALID_RULES = "INVALID_RULES"
    const val INVALID_DEAL = "INVALID_DEAL"
    const val BAD_ROUNDS = "BAD_ROUNDS"
    const val MISSING_ACTION = "MISSING_ACTION"
    const val MALFORMED_ACTION = "MALFORMED_ACTION"
    const val MALFORMED_REQUEST = "MALFORMED_REQUEST"
    const val REQUEST_ID_TOO_LONG = "REQUEST_ID_TOO_LONG"
    const val REQUEST_ID_REUSED = "REQUEST_ID_REUSED"
    const val REQUEST_ID_RESERVED = "REQUEST_ID_RESERVED"
    const val BAD_VERSION = "BAD_VERSION"
    const val BAD_PAGE = "BAD_PAGE"
    const val BAD_CREDENTIALS = "BAD_CREDENTIALS"
    const val WRONG_GAME = "WRONG_GAME"
    const val OPERATOR_ONLY = "OPERATOR_ONLY"
    const val LOG_NOT_AVAILABLE = "LOG_NOT_AVAILABLE"
    const val NO_SUCH_SEAT = "NO_SUCH_SEAT"
    const val GAME_NOT_FOUND = "GAME_NOT_FOUND"
    const val NOT_YOUR_TURN = "NOT_YOUR_TURN"
    const val ILLEGAL_ACTION = "ILLEGAL_ACTION"
    const val ROUND_OVER = "ROUND_OVER"
    const val ROUND_IN_PROGRESS = "ROUND_IN_PROGRESS"
    const val GAME_TOO_LONG = "GAME_TOO_LONG"
    const val MATCH_TOTAL_LIMIT = "MATCH_TOTAL_LIMIT"
    const val VERSION_AHEAD = "VERSION_AHEAD"
    const val TOO_MANY_STREAMS = "TOO_MANY_STREAMS"
    const val STALE_VERSION = "STALE_VERSION"
    const val STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    const val STORE_TIMEOUT = "STORE_TIMEOUT"
    const val SHUTTING_DOWN = "SHUTTING_DOWN"
    const val SNAPSHOT_CORRUPT = "SNAPSHOT_CORRUPT"
    const val INTERNAL = "INTERNAL"
    const val ID_EXHAUSTED = "ID_EXHAUSTED"

    /** `INVALID_ARGUMENT`: clock settings out of range (metadata `field`). */
    const val BAD_CLOCK = "BAD_CLOCK"

    /** `FAILED_PRECONDITION`: `SetAutoPlay` on a game without a turn clock. */
    const val NO_CLOCK = "NO_CLOCK"

    /** `ABORTED`: the seat's time ran out and the table's bot made its decision first (metadata `current_version`). */
    const val TURN_TIMED_OUT = "TURN_TIMED_OUT"

    /** `PERMISSION_DENIED`: a bot worker acting for a person's seat before its deadline (metadata `deadline_ms`). */
    const val NOT_A_BOT_SEAT = "NOT_A_BOT_SEAT"

    /** `PERMISSION_DENIED`: a call only a seat's token may make (`SetAutoPlay`). */
    const val SEAT_TOKEN_ONLY = "SEAT_TOKEN_ONLY"
}
