package gostop.client

import com.connectrpc.Code
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource

/**
 * When and how long a failed call is retried, as the other clients of the service do it.
 *
 * Only [codes] (`UNAVAILABLE`) are retried, and a retry sends the very same request, request id
 * included: after `outcome=unknown` (a write sent to the store and not answered) the retry is what
 * learns whether it was applied, and it is applied at most once. `CreateGame`, which has no request
 * id, is retried only when the outcome says it was not applied. Attempt n (from 1) waits
 * `min(maxBackoff, initialBackoff * multiplier^(n-1))` with equal jitter; at most [maxAttempts]
 * attempts and [maxElapsed] from the first. A watch starts a fresh backoff after every event.
 * `RetryPolicy(maxAttempts = 1)` never retries.
 */
data class RetryPolicy(
    val maxAttempts: Int = 10,
    val initialBackoff: Duration = 50.milliseconds,
    val maxBackoff: Duration = 2.seconds,
    val multiplier: Double = 2.0,
    val maxElapsed: Duration = 20.seconds,
    val codes: Set<Code> = setOf(Code.UNAVAILABLE),
) {
    /** A new backoff for one call (or one watch). */
    fun start(): Backoff = Backoff(this)

    companion object {
        @JvmField val DEFAULT = RetryPolicy()
        @JvmField val NONE = RetryPolicy(maxAttempts = 1)
    }
}

/** The retry state of one call, or of one watch (reset by every delivered event). */
class Backoff internal constructor(private val policy: RetryPolicy) {
    private var attempt = 0
    private var started = TimeSource.Monotonic.markNow()

    fun reset() {
        attempt = 0
        started = TimeSource.Monotonic.markNow()
    }

    /** How long to wait before retrying after [error], or null when it must not be retried. */
    fun after(error: GostopException): Duration? {
        if (error.code !in policy.codes) return null
        attempt += 1
        if (attempt >= policy.maxAttempts) return null
        var cap = policy.initialBackoff.inWholeMicroseconds.toDouble()
        repeat(attempt - 1) { cap *= policy.multiplier }
        cap = minOf(cap, policy.maxBackoff.inWholeMicroseconds.toDouble())
        val delayMicros = cap / 2 + Random.nextDouble() * cap / 2
        val delay = (delayMicros / 1000.0).milliseconds
        if (started.elapsedNow() + delay > policy.maxElapsed) return null
        return delay
    }
}
