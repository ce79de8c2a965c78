// Command randombot plays a whole standard 2-player round against the gostop service: every seat
// picks uniformly among its legal actions until the round is over, while a spectator watches.
//
//	go run ./examples/randombot -server 127.0.0.1:50051   (or GOSTOP_ADDRESS; GOSTOP_API_KEY if needed)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
	"github.com/gostop/gostop/clients/go/gostop"
)

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

type watched struct {
	events int
	last   int64
	err    error
}

func run() error {
	server := flag.String("server", env("GOSTOP_ADDRESS", "127.0.0.1:50051"), "server host:port")
	apiKey := flag.String("api-key", os.Getenv("GOSTOP_API_KEY"), "API key (x-api-key), if the server needs one")
	seed := flag.String("seed", os.Getenv("GOSTOP_SEED"), "shuffle seed (drawn by the server when empty)")
	flag.Parse()

	client, err := gostop.New(*server, gostop.WithAPIKey(*apiKey))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := context.Background()

	req := &pb.CreateGameRequest{Preset: "standard", Players: 2}
	if *seed != "" {
		s, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			return fmt.Errorf("bad seed: %w", err)
		}
		req.Seed = &s
	}
	game, err := client.CreateGame(ctx, req)
	if err != nil {
		return err
	}
	gameID := game.GetGameId()
	fmt.Printf("game %s created at version %d (%d seats)\n", gameID, game.GetVersion(), len(game.GetSeats()))

	// A spectator follows the game from the start until the stream ends with the match.
	watch, err := client.Watch(ctx, gameID, "", 0)
	if err != nil {
		return err
	}
	done := make(chan watched, 1)
	go func() {
		var w watched
		for {
			msg, err := watch.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				w.err = err
				break
			}
			w.events++
			w.last = msg.GetVersion()
		}
		done <- w
	}()

	view, version, actions := game.GetView(), game.GetVersion(), 0
	for view.GetPhase() != pb.Phase_PHASE_OVER {
		seat := view.GetToMove()
		token := gostop.SeatToken(game, seat)
		if view.GetViewer() != seat || len(view.GetLegalActions()) == 0 {
			// The seat to move reads its own view (the spectator's has no legal actions).
			mine, err := client.GetGame(ctx, gameID, token)
			if err != nil {
				return err
			}
			view, version = mine.GetView(), mine.GetVersion()
			continue
		}
		legal := view.GetLegalActions()
		choice := legal[rand.IntN(len(legal))]
		submit := gostop.Submit{
			GameID: gameID, Token: token, ExpectedVersion: version,
			ActionID: choice.GetId(), RequestID: gostop.NewRequestID(fmt.Sprintf("bot-s%d", seat)),
		}
		result, err := client.SubmitAction(ctx, submit)
		if e, ok := gostop.AsError(err); ok && e.Retryable() {
			// Safe with the same request id: the first commit's response comes back.
			result, err = client.SubmitAction(ctx, submit)
		}
		if err != nil {
			return err
		}
		actions++
		fmt.Printf("v%d seat %d: %s (%d events)\n", result.GetVersion(), seat, choice.GetLabel(), len(result.GetEvents()))
		view, version = result.GetView(), result.GetVersion()
		if s := result.GetSettlement(); s != nil {
			fmt.Printf("round over: %s winner %d points %v\n", s.GetOutcome(), s.GetWinner(), s.GetPoints())
		}
	}

	w := <-done
	if w.err != nil {
		return fmt.Errorf("watch: %w", w.err)
	}
	fmt.Printf("spectator saw %d events up to version %d\n", w.events, w.last)
	if w.last != version {
		return fmt.Errorf("the watch ended at version %d, the game is at %d", w.last, version)
	}
	fmt.Printf("done: %d actions, final version %d\n", actions, version)
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
