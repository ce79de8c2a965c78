package gostop.client

import gostop.v1.Game.WatchGameResponse

/**
 * Where a watch stands, so that a resumed stream neither loses nor repeats an event.
 *
 * The events of one version are delivered one at a time, so a watch left in the middle of a version
 * (its collection cancelled, or a stream cut that sends each event as a message of its own) is
 * resumed after the last version known complete ([lastCompleteVersion]), and the events of the
 * version in progress that were already delivered are dropped.
 */
class WatchProgress(afterVersion: Long = 0) {
    /** The last version whose events were all delivered. */
    @Volatile
    var lastCompleteVersion: Long = afterVersion
        private set

    /** The version of the last event delivered (0 before any). */
    @Volatile
    var lastVersion: Long = afterVersion
        private set

    /** Connections made again after a break. */
    @Volatile
    var reconnects: Int = 0
        internal set

    private var inProgress: Long? = null
    private var delivered = 0
    private var skip = 0

    /** The after_version of a (re)connection. */
    internal fun resume(): Long {
        skip = if (inProgress != null) delivered else 0
        return lastCompleteVersion
    }

    /** Whether to deliver [item] (false for a repeat of an event already delivered). */
    internal fun accept(item: WatchGameResponse): Boolean {
        if (item.version == inProgress && skip > 0) {
            skip -= 1
            return false
        }
        if (item.version != inProgress) {
            inProgress?.let { lastCompleteVersion = it }
            inProgress = item.version
            delivered = 0
            skip = 0
        }
        delivered += 1
        lastVersion = item.version
        return true
    }

    /** The stream ended normally: the version in progress was complete. */
    internal fun finish() {
        inProgress?.let { lastCompleteVersion = it }
    }
}

/**
 * The messages a stream without `whole_versions` sends for [message], a version's message: one per
 * event, then the view, if any. A message without events is returned as it is when it holds a view;
 * a version with no event the caller may see gives nothing, as such a stream sends nothing for it.
 */
fun unpack(message: WatchGameResponse): List<WatchGameResponse> {
    if (message.eventsCount == 0) {
        return if (message.hasView() || message.hasEvent()) listOf(message) else emptyList()
    }
    val items = message.eventsList.mapTo(ArrayList(message.eventsCount + 1)) { event ->
        WatchGameResponse.newBuilder().setVersion(message.version).setEvent(event).build()
    }
    if (message.hasView()) {
        items.add(WatchGameResponse.newBuilder().setVersion(message.version).setView(message.view).build())
    }
    return items
}
