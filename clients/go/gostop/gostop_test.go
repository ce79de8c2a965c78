package gostop

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
)

func TestActionID(t *testing.T) {
	cases := []struct {
		action *pb.Action
		want   int32
	}{
		{&pb.Action{Kind: &pb.Action_PlayCard{PlayCard: &pb.PlayCard{Card: 5}}}, 5},
		{&pb.Action{Kind: &pb.Action_PlayCard{PlayCard: &pb.PlayCard{Card: 5, Shake: true}}}, 69},
		{&pb.Action{Kind: &pb.Action_Bomb{Bomb: &pb.Bomb{Month: 12}}}, 140},
		{&pb.Action{Kind: &pb.Action_FlipOnly{FlipOnly: &pb.FlipOnly{}}}, 150},
		{&pb.Action{Kind: &pb.Action_ChooseCapture{ChooseCapture: &pb.ChooseCapture{Card: 50}}}, 210},
		{&pb.Action{Kind: &pb.Action_KeepGukjin{KeepGukjin: &pb.KeepGukjin{}}}, 220},
		{&pb.Action{Kind: &pb.Action_ConvertGukjin{ConvertGukjin: &pb.ConvertGukjin{}}}, 221},
		{&pb.Action{Kind: &pb.Action_Go{Go: &pb.Go{}}}, 230},
		{&pb.Action{Kind: &pb.Action_Stop{Stop: &pb.Stop{}}}, 231},
		{&pb.Action{Kind: &pb.Action_JoinRound{JoinRound: &pb.JoinRound{}}}, 240},
		{&pb.Action{Kind: &pb.Action_SitOut{SitOut: &pb.SitOut{}}}, 241},
		{&pb.Action{Kind: &pb.Action_DeclineGwangSale{DeclineGwangSale: &pb.DeclineGwangSale{}}}, 250},
		{&pb.Action{Kind: &pb.Action_SellGwang{SellGwang: &pb.SellGwang{}}}, 251},
	}
	for _, c := range cases {
		got, err := ActionID(c.action)
		if err != nil || got != c.want {
			t.Errorf("ActionID(%v) = %d, %v; want %d", c.action, got, err, c.want)
		}
	}
	if _, err := ActionID(&pb.Action{}); err == nil {
		t.Error("ActionID of an empty action: no error")
	}
}

func TestWrapReadsErrorInfo(t *testing.T) {
	s, err := status.New(codes.Aborted, "stale").WithDetails(&errdetails.ErrorInfo{
		Reason: "STALE_VERSION", Domain: ErrorDomain,
		Metadata: map[string]string{"current_version": "7", "expected_version": "6"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := fmt.Errorf("call: %w", wrap(s.Err()))
	e, ok := AsError(wrapped)
	if !ok {
		t.Fatalf("AsError(%v) found nothing", wrapped)
	}
	if e.Code != codes.Aborted || e.Reason != ReasonStaleVersion || e.Domain != ErrorDomain {
		t.Errorf("got %+v", e)
	}
	if e.Metadata["current_version"] != "7" || !IsReason(wrapped, ReasonStaleVersion) {
		t.Errorf("metadata %v", e.Metadata)
	}
	if status.Code(e) != codes.Aborted {
		t.Errorf("status.Code = %v", status.Code(e))
	}
	if e.Retryable() {
		t.Error("ABORTED is not retryable with the same request")
	}
	plain := wrap(errors.New("boom"))
	if ReasonOf(plain) != ReasonNone {
		t.Errorf("reason of a plain error: %q", ReasonOf(plain))
	}
	if wrap(nil) != nil {
		t.Error("wrap(nil) != nil")
	}
}

func TestNewRequestID(t *testing.T) {
	a, b := NewRequestID("x"), NewRequestID("x")
	if a == b || len(a) > 128 {
		t.Errorf("request ids %q %q", a, b)
	}
}
