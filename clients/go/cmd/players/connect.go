package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
	"github.com/gostop/gostop/clients/go/gostop"
)

// connectPath is the URL path prefix of the service's methods on the HTTP port.
const connectPath = "/gostop.v1.GameService/"

// callError is a failed call of either protocol: its code (the gRPC code's name) and the
// ErrorInfo reason when the server sent one.
type callError struct {
	Code    string
	Reason  string
	Message string
}

func (e *callError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Reason, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// key is how the error is counted: CODE or CODE/REASON.
func (e *callError) key() string {
	if e.Reason != "" {
		return e.Code + "/" + e.Reason
	}
	return e.Code
}

// connectErrorBody is the Connect protocol's JSON error (a unary body or an end-of-stream's "error").
type connectErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"details"`
}

func (b *connectErrorBody) toError() *callError {
	e := &callError{Code: strings.ToUpper(b.Code), Message: b.Message}
	if e.Code == "CANCELED" {
		e.Code = "CANCELLED"
	}
	for _, d := range b.Details {
		if d.Type != "google.rpc.ErrorInfo" {
			continue
		}
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(d.Value, "="))
		if err != nil {
			continue
		}
		var info errdetails.ErrorInfo
		if proto.Unmarshal(raw, &info) == nil {
			e.Reason = info.GetReason()
		}
	}
	return e
}

// httpStatusCode maps an HTTP status without a Connect error body to a code.
func httpStatusCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "UNIMPLEMENTED"
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return "UNAVAILABLE"
	default:
		return "UNKNOWN"
	}
}

func readConnectError(status int, body []byte) *callError {
	var b connectErrorBody
	if err := json.Unmarshal(body, &b); err != nil || b.Code == "" {
		return &callError{Code: httpStatusCode(status), Message: fmt.Sprintf("HTTP %d: %.200s", status, body)}
	}
	return b.toError()
}

// connectClient speaks the Connect protocol (binary protobuf) to one HTTP port.
type connectClient struct {
	base    string
	http    *http.Client
	timeout time.Duration
}

func (c *connectClient) request(ctx context.Context, method, contentType, token string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+connectPath+method, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Connect-Protocol-Version", "1")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// unary calls method with in and decodes the answer into out.
func (c *connectClient) unary(ctx context.Context, method, token string, in, out proto.Message) error {
	body, err := proto.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := c.request(ctx, method, "application/proto", token, body)
	if err != nil {
		return err
	}
	req.Header.Set("Connect-Timeout-Ms", fmt.Sprint(c.timeout.Milliseconds()))
	resp, err := c.http.Do(req)
	if err != nil {
		return transportError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return transportError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		return readConnectError(resp.StatusCode, data)
	}
	return proto.Unmarshal(data, out)
}

// transportError is a failure below the protocol: the context's end, or the connection's.
func transportError(ctx context.Context, err error) *callError {
	switch ctx.Err() {
	case context.Canceled:
		return &callError{Code: "CANCELLED", Message: err.Error()}
	case context.DeadlineExceeded:
		return &callError{Code: "DEADLINE_EXCEEDED", Message: err.Error()}
	}
	return &callError{Code: "UNAVAILABLE", Message: err.Error()}
}

// connectStream is a WatchGame server stream over the Connect protocol.
type connectStream struct {
	pending []*pb.WatchGameResponse
	body    io.ReadCloser
	reader  *bufio.Reader
	ctx     context.Context
	cancel  context.CancelFunc
}

func (c *connectClient) watch(ctx context.Context, gameID, token string, after int64, opts watchOptions) (*connectStream, error) {
	msg, err := proto.Marshal(&pb.WatchGameRequest{GameId: gameID, AfterVersion: after, IncludeViews: opts.views, WholeVersions: opts.whole})
	if err != nil {
		return nil, err
	}
	envelope := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(envelope[1:5], uint32(len(msg)))
	copy(envelope[5:], msg)
	ctx, cancel := context.WithCancel(ctx)
	req, err := c.request(ctx, "WatchGame", "application/connect+proto", token, envelope)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		return nil, transportError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, readConnectError(resp.StatusCode, data)
	}
	return &connectStream{body: resp.Body, reader: bufio.NewReader(resp.Body), ctx: ctx, cancel: cancel}, nil
}

// recv returns the next event or view, a version's message unpacked; io.EOF once the stream
// ended without an error.
func (s *connectStream) recv() (*pb.WatchGameResponse, error) {
	if len(s.pending) == 0 {
		msg, err := s.read()
		if err != nil {
			return nil, err
		}
		s.pending = gostop.Unpack(msg)
	}
	msg := s.pending[0]
	s.pending = s.pending[1:]
	return msg, nil
}

// read returns the stream's next message.
func (s *connectStream) read() (*pb.WatchGameResponse, error) {
	var head [5]byte
	if _, err := io.ReadFull(s.reader, head[:]); err != nil {
		return nil, s.fail(err)
	}
	size := binary.BigEndian.Uint32(head[1:5])
	data := make([]byte, size)
	if _, err := io.ReadFull(s.reader, data); err != nil {
		return nil, s.fail(err)
	}
	if head[0]&0x02 != 0 {
		s.close()
		var end struct {
			Error *connectErrorBody `json:"error"`
		}
		if err := json.Unmarshal(data, &end); err != nil {
			return nil, &callError{Code: "INTERNAL", Message: "bad end-of-stream message: " + err.Error()}
		}
		if end.Error != nil {
			return nil, end.Error.toError()
		}
		return nil, io.EOF
	}
	if head[0]&0x01 != 0 {
		s.close()
		return nil, &callError{Code: "INTERNAL", Message: "compressed message not asked for"}
	}
	msg := &pb.WatchGameResponse{}
	if err := proto.Unmarshal(data, msg); err != nil {
		s.close()
		return nil, &callError{Code: "INTERNAL", Message: err.Error()}
	}
	return msg, nil
}

func (s *connectStream) fail(err error) error {
	s.close()
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &callError{Code: "UNAVAILABLE", Message: "the stream ended without its end-of-stream message"}
	}
	return transportError(s.ctx, err)
}

func (s *connectStream) close() {
	s.cancel()
	s.body.Close()
}
