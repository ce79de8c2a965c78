// Package gostop is a small client of the gostop game service (gostop.v1.GameService over gRPC).
//
// It wraps the generated stubs with what every caller needs: credentials in metadata (a seat
// token as "authorization: Bearer <token>", an API or operator key as "x-api-key"), a deadline
// on every unary call, request ids for idempotent retries, the optimistic-concurrency version,
// paging of the game log and errors typed by their google.rpc.ErrorInfo reason (*Error).
package gostop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
)

// DefaultTimeout is the deadline of a unary call when the context has none shorter.
const DefaultTimeout = 10 * time.Second

// Client calls one gostop server over one connection; it is safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	raw     pb.GameServiceClient
	apiKey  string
	timeout time.Duration
}

type config struct {
	apiKey  string
	timeout time.Duration
	creds   credentials.TransportCredentials
	dial    []grpc.DialOption
}

// Option configures a Client.
type Option func(*config)

// WithAPIKey sends an API or operator key as x-api-key on every call.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithTimeout sets the deadline of each unary call (DefaultTimeout otherwise; 0: none).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithTransportCredentials uses TLS (or other) credentials instead of plaintext.
func WithTransportCredentials(creds credentials.TransportCredentials) Option {
	return func(c *config) { c.creds = creds }
}

// WithDialOptions passes extra options to grpc.NewClient.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dial = append(c.dial, opts...) }
}

// New connects lazily to address ("host:port"; plaintext unless WithTransportCredentials).
func New(address string, opts ...Option) (*Client, error) {
	cfg := config{timeout: DefaultTimeout, creds: insecure.NewCredentials()}
	for _, o := range opts {
		o(&cfg)
	}
	dial := append([]grpc.DialOption{grpc.WithTransportCredentials(cfg.creds)}, cfg.dial...)
	conn, err := grpc.NewClient(address, dial...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, raw: pb.NewGameServiceClient(conn), apiKey: cfg.apiKey, timeout: cfg.timeout}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Raw is the generated client, for anything the wrapper does not cover (credentials are not
// added to its calls).
func (c *Client) Raw() pb.GameServiceClient { return c.raw }

// NewRequestID returns a fresh request id; reuse it to retry the same call.
func NewRequestID(prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	if prefix == "" {
		prefix = "go"
	}
	return prefix + "-" + hex.EncodeToString(b)
}

// outgoing adds the credentials (token may be empty: a spectator or key holder) to ctx.
func (c *Client) outgoing(ctx context.Context, token string) context.Context {
	var kv []string
	if token != "" {
		kv = append(kv, "authorization", "Bearer "+token)
	}
	if c.apiKey != "" {
		kv = append(kv, "x-api-key", c.apiKey)
	}
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// unary adds credentials and the per-call deadline.
func (c *Client) unary(ctx context.Context, token string) (context.Context, context.CancelFunc) {
	ctx = c.outgoing(ctx, token)
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return context.WithCancel(ctx)
}

// ListRuleSets returns every preset at every player count it supports.
func (c *Client) ListRuleSets(ctx context.Context) ([]*pb.RuleSet, error) {
	ctx, cancel := c.unary(ctx, "")
	defer cancel()
	resp, err := c.raw.ListRuleSets(ctx, &pb.ListRuleSetsRequest{})
	if err != nil {
		return nil, wrap(err)
	}
	return resp.GetRuleSets(), nil
}

// CreateGame deals the first round of a new match: its id, one token per seat, version 1.
func (c *Client) CreateGame(ctx context.Context, req *pb.CreateGameRequest) (*pb.CreateGameResponse, error) {
	ctx, cancel := c.unary(ctx, "")
	defer cancel()
	resp, err := c.raw.CreateGame(ctx, req)
	return resp, wrap(err)
}

// GetGame returns the caller's view (its legal actions when it is to move) and the version;
// an empty token reads the spectator's view.
func (c *Client) GetGame(ctx context.Context, gameID, token string) (*pb.GetGameResponse, error) {
	ctx, cancel := c.unary(ctx, token)
	defer cancel()
	resp, err := c.raw.GetGame(ctx, &pb.GetGameRequest{GameId: gameID})
	return resp, wrap(err)
}

// Submit is one SubmitAction call: ActionID or Structured (exactly one).
type Submit struct {
	GameID string
	Token  string
	// ExpectedVersion is the version the action was chosen at.
	ExpectedVersion int64
	// ActionID is the id of a LegalAction of the view (used when Structured is nil).
	ActionID int32
	// Structured is a structured action instead of an id.
	Structured *pb.Action
	// RequestID makes the call safe to retry; a fresh one is drawn when empty.
	RequestID string
}

// SubmitAction applies one action of the token's seat at ExpectedVersion, at most once per
// request id, and returns the caller's TurnResult.
func (c *Client) SubmitAction(ctx context.Context, s Submit) (*pb.TurnResult, error) {
	req := &pb.SubmitActionRequest{GameId: s.GameID, ExpectedVersion: s.ExpectedVersion, RequestId: s.RequestID}
	if req.RequestId == "" {
		req.RequestId = NewRequestID("go")
	}
	if s.Structured != nil {
		req.Action = &pb.SubmitActionRequest_Structured{Structured: s.Structured}
	} else {
		req.Action = &pb.SubmitActionRequest_ActionId{ActionId: s.ActionID}
	}
	ctx, cancel := c.unary(ctx, s.Token)
	defer cancel()
	resp, err := c.raw.SubmitAction(ctx, req)
	if err != nil {
		return nil, wrap(err)
	}
	return resp.GetResult(), nil
}

// StartNextRound deals the next round of a match once the current round is over.
func (c *Client) StartNextRound(ctx context.Context, gameID, token string, expectedVersion int64, requestID string) (*pb.TurnResult, error) {
	if requestID == "" {
		requestID = NewRequestID("go")
	}
	ctx, cancel := c.unary(ctx, token)
	defer cancel()
	resp, err := c.raw.StartNextRound(ctx, &pb.StartNextRoundRequest{
		GameId: gameID, ExpectedVersion: expectedVersion, RequestId: requestID,
	})
	if err != nil {
		return nil, wrap(err)
	}
	return resp.GetResult(), nil
}

// SetAutoPlay turns auto-play (자동치기) on or off for the token's seat of a game with a turn
// clock: while on, the table's bot makes the seat's decisions, each after the clock's pause, until
// the seat acts itself. It is a step of the log of its own (an AutoPlaySet event), at most once per
// request id (a fresh one is drawn when empty); asking for the state the seat is already in changes
// nothing. FAILED_PRECONDITION, ReasonNoClock, on a game without a clock.
func (c *Client) SetAutoPlay(ctx context.Context, gameID, token string, on bool, requestID string) (*pb.SetAutoPlayResponse, error) {
	if requestID == "" {
		requestID = NewRequestID("go")
	}
	ctx, cancel := c.unary(ctx, token)
	defer cancel()
	resp, err := c.raw.SetAutoPlay(ctx, &pb.SetAutoPlayRequest{GameId: gameID, On: on, RequestId: requestID})
	if err != nil {
		return nil, wrap(err)
	}
	return resp, nil
}

// Watch is a stream of the caller's redacted events.
type Watch struct {
	stream  grpc.ServerStreamingClient[pb.WatchGameResponse]
	cancel  context.CancelFunc
	pending []*pb.WatchGameResponse
	// Last is the version of the last event received (resume from it after a broken stream).
	Last int64
}

// Recv returns the next event (or view); io.EOF once the stream ended with the match.
func (w *Watch) Recv() (*pb.WatchGameResponse, error) {
	if len(w.pending) == 0 {
		msg, err := w.stream.Recv()
		if err != nil {
			w.cancel()
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, wrap(err)
		}
		w.pending = Unpack(msg)
	}
	msg := w.pending[0]
	w.pending = w.pending[1:]
	w.Last = msg.GetVersion()
	return msg, nil
}

// Unpack splits a version's message (WatchGameRequest.whole_versions) into the messages a stream
// without it sends: one per event, then the view; any other message is returned as it is.
func Unpack(msg *pb.WatchGameResponse) []*pb.WatchGameResponse {
	events := msg.GetEvents()
	if len(events) == 0 {
		return []*pb.WatchGameResponse{msg}
	}
	version := msg.GetVersion()
	items := make([]*pb.WatchGameResponse, 0, len(events)+1)
	for _, event := range events {
		items = append(items, &pb.WatchGameResponse{Version: version, Event: event})
	}
	if msg.View != nil {
		items = append(items, &pb.WatchGameResponse{Version: version, View: msg.View})
	}
	return items
}

// Close ends the stream early.
func (w *Watch) Close() { w.cancel() }

// WatchOption changes what a watch asks for.
type WatchOption func(*pb.WatchGameRequest)

// WithViews asks for the caller's view after the events of each version (a message with View set
// and no Event), so that a seat learns its legal actions from the stream without GetGame.
func WithViews() WatchOption {
	return func(req *pb.WatchGameRequest) { req.IncludeViews = true }
}

// Watch streams the events of every version after afterVersion (0: the whole game) as they are
// committed; the stream has no deadline but ctx's. An empty token watches as a spectator.
func (c *Client) Watch(ctx context.Context, gameID, token string, afterVersion int64, opts ...WatchOption) (*Watch, error) {
	ctx, cancel := context.WithCancel(c.outgoing(ctx, token))
	req := &pb.WatchGameRequest{GameId: gameID, AfterVersion: afterVersion, WholeVersions: true}
	for _, opt := range opts {
		opt(req)
	}
	stream, err := c.raw.WatchGame(ctx, req)
	if err != nil {
		cancel()
		return nil, wrap(err)
	}
	return &Watch{stream: stream, cancel: cancel}, nil
}

// GetLogPage returns one page of the unredacted log (operators, or seats once the match is over).
func (c *Client) GetLogPage(ctx context.Context, gameID, token string, afterVersion int64, pageSize int32) (*pb.GetGameLogResponse, error) {
	ctx, cancel := c.unary(ctx, token)
	defer cancel()
	resp, err := c.raw.GetGameLog(ctx, &pb.GetGameLogRequest{GameId: gameID, AfterVersion: afterVersion, PageSize: pageSize})
	return resp, wrap(err)
}

// GetLog reads the whole log, following next_after_version page by page; the returned response
// holds every entry and the last page's other fields.
func (c *Client) GetLog(ctx context.Context, gameID, token string, pageSize int32) (*pb.GetGameLogResponse, error) {
	var entries []*pb.LogEntry
	var after int64
	for {
		page, err := c.GetLogPage(ctx, gameID, token, after, pageSize)
		if err != nil {
			return nil, err
		}
		entries = append(entries, page.GetEntries()...)
		next := page.GetNextAfterVersion()
		if next == 0 {
			page.Entries = entries
			return page, nil
		}
		if next <= after {
			return nil, fmt.Errorf("GetGameLog paging does not advance (%d -> %d)", after, next)
		}
		after = next
	}
}

// SeatToken is the token of seat in a CreateGame response ("" when there is none).
func SeatToken(game *pb.CreateGameResponse, seat int32) string {
	for _, s := range game.GetSeats() {
		if s.GetSeat() == seat {
			return s.GetToken()
		}
	}
	return ""
}
