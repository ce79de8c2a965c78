"""MyBot: take the best capture, keep good cards off empty months, stop at once (--server, --token)."""
import argparse
from collections.abc import Sequence

from gostop.client import Game, GostopClient
from gostop.client.runner import run_seats
from gostop.engine import KIND, MONTH, Action, Bomb, ChooseCapture, Kind, PlayCard, Stop, View

WORTH = {Kind.GWANG: 5, Kind.YEOL: 3, Kind.TTI: 3, Kind.PI: 1}


class MyBot:
    name = "my-bot"

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        def value(action: Action) -> int:
            if isinstance(action, (Stop, Bomb)):
                return 100  # points in hand: stop; a 폭탄 takes four cards and doubles
            if not isinstance(action, (PlayCard, ChooseCapture)):
                return 0  # go, 국진, 빈 내기...: no preference
            own = WORTH[KIND[action.card]]  # of two floor cards to choose from, the better one wins
            taken = [c for c in view.floor if MONTH[c] == MONTH[action.card]]
            return own + sum(WORTH[KIND[c]] for c in taken) if taken else -own
        return max(legal, key=value)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="play seats of a gostop game with MyBot")
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--token", action="append", required=True, help="a seat token (repeatable)")
    args = parser.parse_args(argv)
    game = Game.from_tokens(args.token)
    with GostopClient(args.server) as client:
        report = run_seats(client, game, {seat: (token, MyBot()) for seat, token in game.tokens.items()})
    print(report.text())


if __name__ == "__main__":
    main()
