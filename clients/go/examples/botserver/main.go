// Command botserver is a remote bot: a gostop.v1.BotService gRPC server that a tournament (or a
// game server's bot workers) asks for one seat's decisions.
//
// It plays a simple greedy rule on the view alone: a 폭탄 first, then the hand card that takes the
// most floor cards of its month (a bonus card counts as one), and stop rather than go; other
// decisions, and ties, are drawn at random from the request's seed. It needs no game-service
// connection: every request carries the seat's view and its legal actions.
//
//	go run ./examples/botserver -listen 127.0.0.1:7002
//	gostop tournament --bots greedy,remote:go --remote-bot go=127.0.0.1:7002
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
)

// monthCards is the number of month cards (ids 0-47, month (id / 4) + 1); 48-50 are bonus 피.
const monthCards = 48

type bot struct {
	pb.UnimplementedBotServiceServer
}

// score rates one legal action on the view: higher is better.
func score(action *pb.Action, view *pb.GameView) int {
	switch kind := action.GetKind().(type) {
	case *pb.Action_Bomb:
		return 10
	case *pb.Action_PlayCard:
		card := kind.PlayCard.GetCard()
		if card >= monthCards {
			return 1
		}
		taken := 0
		for _, floor := range view.GetFloor() {
			if floor >= 0 && floor < monthCards && floor/4 == card/4 {
				taken++
			}
		}
		return 2 * taken
	case *pb.Action_Stop:
		return 1
	}
	return 0
}

// Decide answers the id of the best-rated legal action, ties drawn from the request's seed.
func (bot) Decide(_ context.Context, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	view := req.GetView()
	legal := view.GetLegalActions()
	if len(legal) == 0 {
		return nil, status.Error(codes.InvalidArgument, "the view lists no legal actions")
	}
	rng := rand.New(rand.NewPCG(req.GetSeed(), uint64(view.GetVersion())))
	best, bestScore, ties := legal[0], -1, 0
	for _, action := range legal {
		s := score(action.GetAction(), view)
		switch {
		case s > bestScore:
			best, bestScore, ties = action, s, 1
		case s == bestScore:
			ties++
			if rng.IntN(ties) == 0 { // each of the tied actions is kept with equal chance
				best = action
			}
		}
	}
	return &pb.DecideResponse{ActionId: best.GetId()}, nil
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:7002", "host:port to serve on (port 0: any free port)")
	flag.Parse()

	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	server := grpc.NewServer()
	pb.RegisterBotServiceServer(server, bot{})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		server.GracefulStop()
	}()
	// The address line tells a caller that chose port 0 where to connect.
	fmt.Printf("botserver listening on %s\n", lis.Addr())
	return server.Serve(lis)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
