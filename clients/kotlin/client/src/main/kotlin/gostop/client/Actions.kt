package gostop.client

import gostop.v1.Game.Action
import gostop.v1.Game.CreateGameResponse
import java.util.UUID

/**
 * The stable integer id of a structured action (the id of a LegalAction; docs/rules.md §5):
 * PlayCard c → c, with shake 64 + c; Bomb m → 128 + m; FlipOnly 150; ChooseCapture c → 160 + c;
 * KeepGukjin 220; ConvertGukjin 221; Go 230; Stop 231; JoinRound 240; SitOut 241;
 * DeclineGwangSale 250; SellGwang 251.
 */
fun actionId(action: Action): Int = when (action.kindCase) {
    Action.KindCase.PLAY_CARD -> action.playCard.card + if (action.playCard.shake) 64 else 0
    Action.KindCase.BOMB -> 128 + action.bomb.month
    Action.KindCase.FLIP_ONLY -> 150
    Action.KindCase.CHOOSE_CAPTURE -> 160 + action.chooseCapture.card
    Action.KindCase.KEEP_GUKJIN -> 220
    Action.KindCase.CONVERT_GUKJIN -> 221
    Action.KindCase.GO -> 230
    Action.KindCase.STOP -> 231
    Action.KindCase.JOIN_ROUND -> 240
    Action.KindCase.SIT_OUT -> 241
    Action.KindCase.DECLINE_GWANG_SALE -> 250
    Action.KindCase.SELL_GWANG -> 251
    Action.KindCase.KIND_NOT_SET, null -> throw IllegalArgumentException("empty action")
}

/** A new request id: reuse it to retry the same call, draw a new one for every other call. */
fun newRequestId(prefix: String = "kt"): String = "$prefix-${UUID.randomUUID()}"

/** The token of [seat] in a CreateGame response. */
fun seatToken(game: CreateGameResponse, seat: Int): String =
    game.seatsList.firstOrNull { it.seat == seat }?.token ?: throw IllegalArgumentException("no token for seat $seat")
