package gostop.client

import com.connectrpc.Code
import com.connectrpc.ConnectException
import com.google.protobuf.Any as ProtoAny
import com.google.rpc.ErrorInfo
import com.google.rpc.Status
import gostop.v1.Game.Action
import gostop.v1.Game.Bomb
import gostop.v1.Game.Event
import gostop.v1.Game.Go
import gostop.v1.Game.PlayCard
import gostop.v1.Game.WatchGameResponse
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

    /** A failure as the server sends it: a google.rpc.Status whose details hold [info] (and another detail first). */
    private fun failure(code: Code, info: ErrorInfo): ConnectException {
        val status = Status.newBuilder().setCode(code.value).setMessage("failed")
            .addDetails(ProtoAny.pack(Status.newBuilder().setMessage("not an ErrorInfo").build()))
            .addDetails(ProtoAny.pack(info)).build()
        val parser = ProtobufStrategy.errorDetailParser()
        return ConnectException(code, "failed").withErrorDetails(parser, parser.parseDetails(status.toByteArray()))
    }

    @Test
    fun errorsCarryTheReasonAndMetadataOfErrorInfo() {
        val info = ErrorInfo.newBuilder().setReason("STALE_VERSION").setDomain(ERROR_DOMAIN)
            .putMetadata("current_version", "5").build()
        val error = GostopException.from(failure(Code.ABORTED, info))
        assertEquals(Code.ABORTED, error.code)
        assertEquals(Reason.STALE_VERSION, error.reason)
        assertEquals("5", error.metadata["current_version"])
        assertEquals(ERROR_DOMAIN, error.domain)
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

    private fun played(card: Int) = Event.newBuilder().setCardPlayed(gostop.v1.Game.CardPlayed.newBuilder().setCard(card)).build()

    @Test
    fun aVersionsMessageIsHandedOutAnEventAtATime() {
        val view = gostop.v1.Game.GameView.newBuilder().setVersion(4).build()
        val whole = WatchGameResponse.newBuilder().setVersion(4).addEvents(played(1)).addEvents(played(2)).setView(view).build()
        val items = unpack(whole)
        assertEquals(listOf(1, 2), items.take(2).map { it.event.cardPlayed.card })
        assertTrue(items.all { it.version == 4L })
        assertEquals(view, items[2].view)
        assertFalse(items[2].hasEvent())
        // A version with no event the caller may see gives nothing; a view-only message stays as it is.
        assertEquals(emptyList(), unpack(WatchGameResponse.newBuilder().setVersion(5).build()))
        val viewOnly = WatchGameResponse.newBuilder().setVersion(4).setView(view).build()
        assertEquals(listOf(viewOnly), unpack(viewOnly))
    }

    @Test
    fun aWatchLeftInsideAVersionResumesAfterItsDeliveredEvents() {
        val progress = WatchProgress(3)
        val whole = WatchGameResponse.newBuilder().setVersion(4).addEvents(played(1)).addEvents(played(2)).build()
        assertEquals(3, progress.resume())
        assertTrue(progress.accept(unpack(whole)[0]))
        // The collection left after the first event: the version is sent again whole, its first event dropped.
        assertEquals(3, progress.resume())
        assertEquals(listOf(false, true), unpack(whole).map { progress.accept(it) })
        progress.finish()
        assertEquals(4, progress.lastCompleteVersion)
    }
}
