package gostop.client

import com.connectrpc.Code
import com.connectrpc.ConnectErrorDetail
import com.connectrpc.ConnectException
import com.google.protobuf.Any as ProtoAny
import com.google.rpc.ErrorInfo
import gostop.v1.Game.Action
import gostop.v1.Game.Bomb
import gostop.v1.Game.Event
import gostop.v1.Game.Go
import gostop.v1.Game.PlayCard
import gostop.v1.Game.WatchGameResponse
import okio.ByteString.Companion.toByteString
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.milliseconds

class ClientTest {
    @Test
    fun actionIdsFollowTheTable() {
        assertEquals(7, actionId(Action.newBuilder().setPlayCard(PlayCard.newBuilder().setCard(7)).build()))
        assertEquals(71, actionId(Action.newBuilder().setPlayCard(PlayCard.newBuilder().setCard(7).setShake(true)).build()))
        assertEquals(131, actionId(Action.newBuilder().setBomb(Bomb.newBuilder().setMonth(3)).build()))
        assertEquals(230, actionId(Action.newBuilder().setGo(Go.getDefaultInstance()).build()))
    }

    private fun failure(code: Code, info: ErrorInfo): ConnectException {
        val any = ProtoAny.pack(info)
        val detail = ConnectErrorDetail(any.typeUrl, any.value.toByteArray().toByteString())
        return ConnectException(code, "failed").withErrorDetails(
            object : com.connectrpc.ErrorDetailParser {
                override fun <E : kotlin.Any> unpack(any: com.connectrpc.AnyError, clazz: kotlin.reflect.KClass<E>): E? = null
                override fun parseDetails(bytes: ByteArray): List<ConnectErrorDetail> = emptyList()
            },
            listOf(detail),
        )
    }

    @Test
    fun errorsCarryTheReasonAndMetadataOfErrorInfo() {
        val info = ErrorInfo.newBuilder().setReason("STALE_VERSION").setDomain(ERROR_DOMAIN)
            .putMetadata("current_version", "5").build()
        val error = GostopException.from(failure(Code.ABORTED, info))
        assertEquals(Code.ABORTED, error.code)
        assertEquals(Reason.STALE_VERSION, error.reason)
        assertEquals("5", error.metadata["current_version"])
        assertFalse(error.retryable)
        assertFalse(error.outcomeUnknown)
    }

    @Test
    fun theOutcomeOfUnavailableIsRespected() {
        val unknown = GostopException.from(
            failure(Code.UNAVAILABLE, ErrorInfo.newBuilder().setReason("STORE_TIMEOUT").putMetadata("outcome", "unknown").build()),
        )
        assertTrue(unknown.retryable)
        assertTrue(unknown.outcomeUnknown)
        val notApplied = GostopException.from(
            failure(Code.UNAVAILABLE, ErrorInfo.newBuilder().setReason("STORE_UNAVAILABLE").putMetadata("outcome", "not_applied").build()),
        )
        assertTrue(notApplied.retryable)
        assertFalse(notApplied.outcomeUnknown)
        val transport = GostopException.from(ConnectException(Code.UNKNOWN, "reset", java.io.IOException("reset")))
        assertEquals(Code.UNAVAILABLE, transport.code)
        assertTrue(transport.outcomeUnknown)
    }

    @Test
    fun backoffRetriesUnavailableOnlyAndStops() {
        val backoff = RetryPolicy(maxAttempts = 3, initialBackoff = 1.milliseconds).start()
        val unavailable = GostopException(Code.UNAVAILABLE, "down")
        assertNull(backoff.after(GostopException(Code.ABORTED, "stale")))
        assertTrue(backoff.after(unavailable) != null)
        assertTrue(backoff.after(unavailable) != null)
        assertNull(backoff.after(unavailable))
        assertNull(RetryPolicy.NONE.start().after(unavailable))
    }

    private fun item(version: Long) = WatchGameResponse.newBuilder().setVersion(version).setEvent(Event.getDefaultInstance()).build()

    @Test
    fun aResumedWatchNeitherLosesNorRepeats() {
        val progress = WatchProgress(0)
        assertEquals(0, progress.resume())
        assertTrue(progress.accept(item(1)))
        assertTrue(progress.accept(item(2)))
        assertTrue(progress.accept(item(2)))
        // Broken in the middle of version 2: resume after 1, drop the two events of 2 already delivered.
        assertEquals(1, progress.resume())
        assertFalse(progress.accept(item(2)))
        assertFalse(progress.accept(item(2)))
        assertTrue(progress.accept(item(2)))
        assertTrue(progress.accept(item(3)))
        assertEquals(2, progress.lastCompleteVersion)
        progress.finish()
        assertEquals(3, progress.lastCompleteVersion)
    }
}
