package gostop

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the ErrorInfo domain of every error of the service.
const ErrorDomain = "gostop.v1"

// Reason is the stable ErrorInfo reason of a failure (docs/service.md, "Errors").
type Reason string

// The reasons the service sends.
const (
	ReasonMalformedGameID  Reason = "MALFORMED_GAME_ID"
	ReasonMissingPreset    Reason = "MISSING_PRESET"
	ReasonUnknownPreset    Reason = "UNKNOWN_PRESET"
	ReasonInvalidRules     Reason = "INVALID_RULES"
	ReasonInvalidDeal      Reason = "INVALID_DEAL"
	ReasonBadRounds        Reason = "BAD_ROUNDS"
	ReasonMissingAction    Reason = "MISSING_ACTION"
	ReasonMalformedAction  Reason = "MALFORMED_ACTION"
	ReasonMalformedRequest Reason = "MALFORMED_REQUEST"
	ReasonRequestIDTooLong Reason = "REQUEST_ID_TOO_LONG"
	ReasonRequestIDReused  Reason = "REQUEST_ID_REUSED"
	ReasonBadVersion       Reason = "BAD_VERSION"
	ReasonBadCredentials   Reason = "BAD_CREDENTIALS"
	ReasonWrongGame        Reason = "WRONG_GAME"
	ReasonOperatorOnly     Reason = "OPERATOR_ONLY"
	ReasonLogNotAvailable  Reason = "LOG_NOT_AVAILABLE"
	ReasonGameNotFound     Reason = "GAME_NOT_FOUND"
	ReasonNotYourTurn      Reason = "NOT_YOUR_TURN"
	ReasonIllegalAction    Reason = "ILLEGAL_ACTION"
	ReasonRoundOver        Reason = "ROUND_OVER"
	ReasonRoundInProgress  Reason = "ROUND_IN_PROGRESS"
	ReasonGameTooLong      Reason = "GAME_TOO_LONG"
	ReasonStaleVersion     Reason = "STALE_VERSION"
	ReasonStoreUnavailable Reason = "STORE_UNAVAILABLE"
	ReasonStoreTimeout     Reason = "STORE_TIMEOUT"
	ReasonShuttingDown     Reason = "SHUTTING_DOWN"
	ReasonVersionAhead     Reason = "VERSION_AHEAD"
	ReasonTooManyStreams   Reason = "TOO_MANY_STREAMS"
	ReasonMatchTotalLimit  Reason = "MATCH_TOTAL_LIMIT"
	ReasonSnapshotCorrupt  Reason = "SNAPSHOT_CORRUPT"
	ReasonInternal         Reason = "INTERNAL"
	ReasonIDExhausted      Reason = "ID_EXHAUSTED"
	ReasonNone             Reason = ""

	// The turn clock (docs/clock.md).
	ReasonBadClock     Reason = "BAD_CLOCK"      // INVALID_ARGUMENT: ClockSettings out of range (metadata field)
	ReasonNoClock      Reason = "NO_CLOCK"       // FAILED_PRECONDITION: SetAutoPlay on a game without a clock
	ReasonTurnTimedOut Reason = "TURN_TIMED_OUT" // ABORTED: the table's bot made the seat's decision first
	ReasonNotABotSeat  Reason = "NOT_A_BOT_SEAT" // PERMISSION_DENIED: a bot worker before the deadline (metadata deadline_ms)
)

// Error is a failed call: its gRPC code and message and the ErrorInfo of its google.rpc.Status
// details. Reason is empty when the failure did not come from the service (a deadline, a refused
// connection…).
type Error struct {
	Code     codes.Code
	Message  string
	Reason   Reason
	Domain   string
	Metadata map[string]string
	cause    error
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s %s: %s", e.Code, e.Reason, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying gRPC error.
func (e *Error) Unwrap() error { return e.cause }

// GRPCStatus lets status.FromError/status.Code see through the wrapper.
func (e *Error) GRPCStatus() *status.Status {
	if s, ok := status.FromError(e.cause); ok {
		return s
	}
	return status.New(e.Code, e.Message)
}

// Retryable reports whether a retry with the same request id may succeed.
func (e *Error) Retryable() bool { return e.Code == codes.Unavailable }

// wrap turns a gRPC error into an *Error (nil stays nil).
func wrap(err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	s, _ := status.FromError(err)
	e := &Error{Code: s.Code(), Message: s.Message(), Metadata: map[string]string{}, cause: err}
	for _, detail := range s.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			e.Reason = Reason(info.GetReason())
			e.Domain = info.GetDomain()
			for k, v := range info.GetMetadata() {
				e.Metadata[k] = v
			}
			break
		}
	}
	return e
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// ReasonOf is the ErrorInfo reason of err ("" when it has none).
func ReasonOf(err error) Reason {
	if e, ok := AsError(err); ok {
		return e.Reason
	}
	return ReasonNone
}

// IsReason reports whether err is a failure with that reason.
func IsReason(err error, reason Reason) bool {
	return err != nil && ReasonOf(err) == reason
}
