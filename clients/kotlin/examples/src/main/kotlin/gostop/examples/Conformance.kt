// Runs the shared conformance scenarios (tests/conformance/scenarios/*.json) against a server.
//
//   java -cp … gostop.examples.ConformanceKt [--server ADDRESS] [--protocol grpc|connect|grpc-web]
//        [--operator-key KEY] [--scenarios DIR] [--page-size N] [FILE.json…]
//
// The protocol is gRPC by default (the server's gRPC port); connect and grpc-web speak to its HTTP
// port. The server also comes from GOSTOP_ADDRESS, the key from GOSTOP_OPERATOR_KEY, the folder
// from GOSTOP_SCENARIOS (default: the repository's, seen from clients/kotlin/examples). For each
// scenario it creates the game with the operator key, submits every step with its seat's token at
// the version it holds (with a request id; an auto-play step is a SetAutoPlay), makes the calls the
// server must refuse (each must fail with its code, reason and metadata), reads the whole log page
// by page (7 entries a page by default) and checks the final version, every entry's version, seat,
// action id and action, every event, the last round's settlement and the named fields of the
// spectator's final view (the clock's times by how they relate to its settings and the seat's
// bank), parsing the expected JSON into the proto messages and comparing messages. Prints the transport, one line
// per scenario and `N passed, N failed` (the first call's and the whole run's times on stderr);
// exits 1 when one failed, 2 when none was found (or on a bad option).
package gostop.examples

import com.google.gson.JsonElement
import com.google.gson.JsonObject
import com.google.gson.JsonParser
import com.google.protobuf.Message
import com.google.protobuf.util.JsonFormat
import com.connectrpc.Code
import gostop.client.GostopClient
import gostop.client.GostopException
import gostop.client.actionId
import gostop.client.seatToken
import gostop.v1.Game.Action
import gostop.v1.Game.CreateGameRequest
import gostop.v1.Game.CreateGameResponse
import gostop.v1.Game.Event
import gostop.v1.Game.GameView
import gostop.v1.Game.Settlement
import gostop.v1.Game.TurnResult
import kotlinx.coroutines.runBlocking
import java.io.File
import kotlin.system.exitProcess

/** The newest scenario format this runner understands. */
private const val FORMAT = 1

private class Mismatch(message: String) : Exception(message)

private fun check(condition: Boolean, message: () -> String) {
    if (!condition) throw Mismatch(message())
}

private val parser = JsonFormat.parser()
private val printer = JsonFormat.printer().omittingInsignificantWhitespace()

@Suppress("UNCHECKED_CAST")
private fun <B : Message.Builder> parse(json: JsonElement, builder: B): B = builder.also { parser.merge(json.toString(), it) }

private fun shorten(text: String, limit: Int = 400) = if (text.length <= limit) text else text.take(limit) + "…"

private fun checkMessage(expected: Message, actual: Message, where: String) =
    check(expected == actual) { "$where: expected ${shorten(printer.print(expected))}, got ${shorten(printer.print(actual))}" }

private fun JsonObject.isNullOrAbsent(key: String) = !has(key) || get(key).isJsonNull

/** What a step's call answers: the version, and for a step of the game its result. */
private class Answer(val version: Long, val result: TurnResult?)

/** One step's call at [version] (a SetAutoPlay for an auto-play step). */
private suspend fun call(client: GostopClient, game: CreateGameResponse, version: Long, step: JsonObject, requestId: String): Answer {
    val seat = step["seat"].asInt
    val token = seatToken(game, seat)
    return when {
        step.has("set_auto_play") -> {
            val on = step["set_auto_play"].asBoolean
            val response = client.setAutoPlay(game.gameId, token, on, requestId)
            val answered = response.view.seatsList.firstOrNull { it.seat == seat }?.autoPlay
            check(answered == on) { "SetAutoPlay($on) answered seat $seat's auto-play $answered" }
            Answer(response.version, null)
        }
        step.has("action_id") ->
            client.submitAction(game.gameId, token, version, step["action_id"].asInt, requestId).let { Answer(it.version, it) }
        step.has("start_next_round") && step["start_next_round"].asBoolean ->
            client.startNextRound(game.gameId, token, version, requestId).let { Answer(it.version, it) }
        else -> throw Mismatch("neither action_id, start_next_round nor set_auto_play")
    }
}

/** The canonical gRPC name of [code] (connect-kotlin's names are lowercase, and "canceled"). */
private fun grpcName(code: Code) = if (code == Code.CANCELED) "CANCELLED" else code.codeName.uppercase()

/** Every call of the scenario's refusals fails with its code, reason and metadata. */
private suspend fun checkRefusals(client: GostopClient, scenario: JsonObject, game: CreateGameResponse, version: Long) {
    val refusals = scenario.getAsJsonArray("refusals") ?: return
    for ((index, element) in refusals.withIndex()) {
        val refusal = element.asJsonObject
        val want = refusal.getAsJsonObject("error")
        val error = try {
            if (refusal.has("create")) {
                client.createGame(parse(refusal["create"], CreateGameRequest.newBuilder()).build())
            } else {
                call(client, game, version, refusal, "refusal-$index")
            }
            null
        } catch (e: GostopException) {
            e
        }
        val wanted = "${want["code"].asString} ${want["reason"].asString}"
        check(error != null) { "refusal $index: expected $wanted, the call succeeded" }
        val got = "${grpcName(error!!.code)} ${error.reason}"
        check(got == wanted) { "refusal $index: expected $wanted, got $got" }
        for ((key, value) in want.getAsJsonObject("metadata")?.entrySet() ?: emptySet()) {
            check(error.metadata[key] == value.asString) {
                "refusal $index: metadata $key = ${error.metadata[key]}, expected ${value.asString}"
            }
        }
    }
}

/**
 * Checks how the clock's server times relate to its settings and the seat's bank, then clears them
 * from [view], so that the rest of the clock compares as a message.
 */
private fun checkClock(view: GameView.Builder) {
    if (!view.hasClock()) return
    val clock = view.clockBuilder
    val times = listOf(clock.startedMs, clock.bankFromMs, clock.deadlineMs)
    if (clock.seat < 0) {
        check(times.all { it == 0L }) { "a clock that runs for nobody has times: $times" }
    } else {
        val seat = view.seatsList.firstOrNull { it.seat == clock.seat }
        check(seat != null && clock.startedMs > 0) { "clock: no seat ${clock.seat} or no start" }
        val paused = seat!!.away || seat.autoPlay
        val settings = clock.settings
        val bankFrom = clock.startedMs + if (paused) settings.autoPauseMs else settings.decisionMs
        val deadline = if (paused) bankFrom else bankFrom + seat.bankMs
        check(clock.bankFromMs == bankFrom && clock.deadlineMs == deadline) {
            "clock times do not agree with the settings and the bank: $times"
        }
    }
    clock.clearStartedMs().clearBankFromMs().clearDeadlineMs()
}

private suspend fun runScenario(client: GostopClient, scenario: JsonObject, pageSize: Int) {
    val format = if (scenario.has("format")) scenario["format"].asInt else FORMAT
    check(format <= FORMAT) { "scenario format $format, this runner reads $FORMAT" }
    val game = client.createGame(parse(scenario["create"], CreateGameRequest.newBuilder()).build())
    val gameId = game.gameId
    var version = game.version
    var last: TurnResult? = null
    val steps = scenario.getAsJsonArray("steps")
    for ((index, element) in steps.withIndex()) {
        val step = element.asJsonObject
        val answer = try {
            call(client, game, version, step, "conformance-$index")
        } catch (e: Mismatch) {
            throw Mismatch("step $index: ${e.message}")
        } catch (e: Exception) {
            throw Mismatch("step $index ($step): ${e.message}")
        }
        check(answer.version == version + 1) { "step $index: version ${answer.version} after $version" }
        version = answer.version
        last = answer.result ?: last
    }
    checkRefusals(client, scenario, game, version)

    val expect = scenario.getAsJsonObject("expect")
    val finalVersion = expect["final_version"].asLong
    check(version == finalVersion) { "final version $version, expected $finalVersion" }

    val log = client.getLog(gameId, pageSize)
    check(log.version == finalVersion) { "log version ${log.version}, expected $finalVersion" }
    val wanted = expect.getAsJsonArray("log")
    check(log.entries.size == wanted.size()) { "log has ${log.entries.size} entries, expected ${wanted.size()}" }
    for ((i, element) in wanted.withIndex()) {
        val want = element.asJsonObject
        val got = log.entries[i]
        val where = "log entry $i (version ${got.version})"
        check(got.version == want["version"].asLong) { "$where: version ${got.version}, expected ${want["version"]}" }
        check(got.seat == want["seat"].asInt) { "$where: seat ${got.seat}, expected ${want["seat"]}" }
        if (want.has("kind")) check(got.kind == want["kind"].asString) { "$where: kind ${got.kind}, expected ${want["kind"]}" }
        val gotId = if (got.hasAction()) actionId(got.action) else null
        val wantId = if (want.isNullOrAbsent("actionId")) null else want["actionId"].asInt
        check(gotId == wantId) { "$where: action id $gotId, expected $wantId" }
        if (!want.isNullOrAbsent("action") && got.hasAction()) {
            checkMessage(parse(want["action"], Action.newBuilder()).build(), got.action, "$where action")
        }
        val events = want.getAsJsonArray("events")
        check(got.eventsCount == events.size()) { "$where: ${got.eventsCount} events, expected ${events.size()}" }
        for ((j, json) in events.withIndex()) {
            checkMessage(parse(json, Event.newBuilder()).build(), got.getEvents(j), "$where event $j")
        }
    }

    if (expect.has("settlement")) {
        // The last round's settlement: that of the last step's result (the deal's, without steps).
        val got: Settlement? = if (last != null) {
            last.takeIf { it.hasSettlement() }?.settlement
        } else {
            game.view.takeIf { game.hasView() && it.hasSettlement() }?.settlement
        }
        if (expect["settlement"].isJsonNull) {
            check(got == null) { "settlement ${got?.let { printer.print(it) }}, expected none" }
        } else {
            check(got != null) { "no settlement in the last result" }
            checkMessage(parse(expect["settlement"], Settlement.newBuilder()).build(), got!!, "settlement")
        }
    }

    if (expect.has("final_view_spectator")) {
        val spectator = client.getGame(gameId)
        check(spectator.hasView()) { "no spectator view" }
        val subset = expect.getAsJsonObject("final_view_spectator")
        val expected = parse(subset, GameView.newBuilder()).build()
        // Compare only the fields the subset names, as messages: clear every other top-level field.
        val projected = spectator.view.toBuilder()
        checkClock(projected)
        val named = subset.keySet()
        for (key in named) {
            check(GameView.getDescriptor().fields.any { it.jsonName == key || it.name == key }) {
                "final_view_spectator: unknown field $key"
            }
        }
        for (field in GameView.getDescriptor().fields) {
            if (field.jsonName !in named && field.name !in named) projected.clearField(field)
        }
        checkMessage(expected, projected.build(), "final spectator view")
    }
}

fun main(args: Array<String>) {
    val exit = try {
        run(args)
    } catch (e: IllegalArgumentException) {
        System.err.println(e.message)
        2
    }
    exitProcess(exit)
}

private fun run(args: Array<String>): Int {
    val options = Options(args)
    val key = options["operator-key"] ?: System.getenv("GOSTOP_OPERATOR_KEY") ?: ""
    val dir = File(options["scenarios"] ?: System.getenv("GOSTOP_SCENARIOS") ?: "../../../tests/conformance/scenarios")
    val pageSize = options["page-size"]?.toInt() ?: 7
    val files = options.positional.filter { it.endsWith(".json") }.map(::File).ifEmpty {
        (dir.listFiles { f -> f.name.endsWith(".json") } ?: emptyArray()).sortedBy { it.name }
    }
    val positional = options.positional.filterNot { it.endsWith(".json") }
    val server = options["server"] ?: positional.firstOrNull() ?: System.getenv("GOSTOP_ADDRESS") ?: "127.0.0.1:50051"
    val protocol = options["protocol"] ?: "grpc"
    val client = GostopClient(baseUrl(server), transportNamed(protocol), apiKey = key.ifEmpty { null })
    println("conformance: $protocol (Kotlin, OkHttp) to ${baseUrl(server)}")
    var passed = 0
    var failed = 0
    val started = System.nanoTime()
    runBlocking {
        // The first call alone (a fresh client: connection set-up included), for the bar.
        val first = System.nanoTime()
        client.listRuleSets()
        System.err.println("first call: %.1f ms".format((System.nanoTime() - first) / 1e6))
        for (file in files) {
            var name = file.name.removeSuffix(".json")
            val begun = System.nanoTime()
            try {
                val scenario = JsonParser.parseString(file.readText()).asJsonObject
                if (scenario.has("name")) name = scenario["name"].asString
                runScenario(client, scenario, pageSize)
                passed += 1
                println("PASS $name (${(System.nanoTime() - begun) / 1_000_000} ms)")
            } catch (e: Exception) {
                failed += 1
                println("FAIL $name: ${e.message}")
            }
        }
    }
    if (files.isEmpty()) println("no scenarios found in $dir")
    System.err.println("scenarios: %.0f ms".format((System.nanoTime() - started) / 1e6))
    println("$passed passed, $failed failed")
    client.close()
    return if (failed > 0) 1 else if (files.isEmpty()) 2 else 0
}
