package main

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/status"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
	"github.com/gostop/gostop/clients/go/gostop"
)

// transport is one player's way to the service: gRPC (the Go client) or the Connect protocol.
type transport interface {
	getGame(ctx context.Context, gameID, token string) (*pb.GetGameResponse, error)
	submit(ctx context.Context, gameID, token string, version int64, actionID int32, requestID string) (*pb.TurnResult, error)
	startNextRound(ctx context.Context, gameID, token string, version int64, requestID string) (*pb.TurnResult, error)
	createGame(ctx context.Context, req *pb.CreateGameRequest) (*pb.CreateGameResponse, error)
	watch(ctx context.Context, gameID, token string, after int64, opts watchOptions) (stream, error)
}

// watchOptions are what a player's WatchGame asks for: views on the stream, whole versions.
type watchOptions struct{ views, whole bool }

// stream is an open WatchGame: recv returns io.EOF once it ended with the match.
type stream interface {
	recv() (*pb.WatchGameResponse, error)
	close()
}

// asCallError gives any failure of either protocol a code (and reason) to be counted by.
func asCallError(err error) *callError {
	var ce *callError
	if errors.As(err, &ce) {
		return ce
	}
	if ge, ok := gostop.AsError(err); ok {
		return &callError{Code: codeName(ge.Code.String()), Reason: string(ge.Reason), Message: ge.Message}
	}
	if st, ok := status.FromError(err); ok {
		return &callError{Code: codeName(st.Code().String()), Message: st.Message()}
	}
	return &callError{Code: "UNKNOWN", Message: err.Error()}
}

// codeName spells a grpc-go code name ("FailedPrecondition") as the protocol does
// ("FAILED_PRECONDITION").
func codeName(camel string) string {
	out := make([]byte, 0, len(camel)+4)
	for i := 0; i < len(camel); i++ {
		c := camel[i]
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				out = append(out, '_')
			}
			out = append(out, c)
		} else {
			out = append(out, c-'a'+'A')
		}
	}
	if string(out) == "CANCELED" {
		return "CANCELLED"
	}
	return string(out)
}

type grpcTransport struct{ client *gostop.Client }

func (t grpcTransport) getGame(ctx context.Context, gameID, token string) (*pb.GetGameResponse, error) {
	return t.client.GetGame(ctx, gameID, token)
}

func (t grpcTransport) submit(ctx context.Context, gameID, token string, version int64, actionID int32, requestID string) (*pb.TurnResult, error) {
	return t.client.SubmitAction(ctx, gostop.Submit{GameID: gameID, Token: token, ExpectedVersion: version,
		ActionID: actionID, RequestID: requestID})
}

func (t grpcTransport) startNextRound(ctx context.Context, gameID, token string, version int64, requestID string) (*pb.TurnResult, error) {
	return t.client.StartNextRound(ctx, gameID, token, version, requestID)
}

func (t grpcTransport) createGame(ctx context.Context, req *pb.CreateGameRequest) (*pb.CreateGameResponse, error) {
	return t.client.CreateGame(ctx, req)
}

func (t grpcTransport) watch(ctx context.Context, gameID, token string, after int64, opts watchOptions) (stream, error) {
	var asks []gostop.WatchOption
	if opts.views {
		asks = append(asks, gostop.WithViews())
	}
	if !opts.whole {
		asks = append(asks, func(req *pb.WatchGameRequest) { req.WholeVersions = false })
	}
	w, err := t.client.Watch(ctx, gameID, token, after, asks...)
	if err != nil {
		return nil, err
	}
	return grpcStream{w}, nil
}

type grpcStream struct{ w *gostop.Watch }

func (s grpcStream) recv() (*pb.WatchGameResponse, error) {
	msg, err := s.w.Recv()
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	return msg, err
}

func (s grpcStream) close() { s.w.Close() }

type connectTransport struct{ client *connectClient }

func (t connectTransport) getGame(ctx context.Context, gameID, token string) (*pb.GetGameResponse, error) {
	out := &pb.GetGameResponse{}
	return out, t.client.unary(ctx, "GetGame", token, &pb.GetGameRequest{GameId: gameID}, out)
}

func (t connectTransport) submit(ctx context.Context, gameID, token string, version int64, actionID int32, requestID string) (*pb.TurnResult, error) {
	out := &pb.SubmitActionResponse{}
	req := &pb.SubmitActionRequest{GameId: gameID, ExpectedVersion: version, RequestId: requestID,
		Action: &pb.SubmitActionRequest_ActionId{ActionId: actionID}}
	if err := t.client.unary(ctx, "SubmitAction", token, req, out); err != nil {
		return nil, err
	}
	return out.GetResult(), nil
}

func (t connectTransport) startNextRound(ctx context.Context, gameID, token string, version int64, requestID string) (*pb.TurnResult, error) {
	out := &pb.StartNextRoundResponse{}
	req := &pb.StartNextRoundRequest{GameId: gameID, ExpectedVersion: version, RequestId: requestID}
	if err := t.client.unary(ctx, "StartNextRound", token, req, out); err != nil {
		return nil, err
	}
	return out.GetResult(), nil
}

func (t connectTransport) createGame(ctx context.Context, req *pb.CreateGameRequest) (*pb.CreateGameResponse, error) {
	out := &pb.CreateGameResponse{}
	return out, t.client.unary(ctx, "CreateGame", "", req, out)
}

func (t connectTransport) watch(ctx context.Context, gameID, token string, after int64, opts watchOptions) (stream, error) {
	s, err := t.client.watch(ctx, gameID, token, after, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}
