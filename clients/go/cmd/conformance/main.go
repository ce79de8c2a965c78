// Command conformance runs the shared conformance scenarios (tests/conformance/scenarios/*.json)
// against a server.
//
//	conformance [-server host:port] [-operator-key KEY] [-scenarios DIR] [-page-size N] [FILE.json …]
//
// The server also comes from GOSTOP_ADDRESS, the key from GOSTOP_OPERATOR_KEY, the folder from
// GOSTOP_SCENARIOS (default: tests/conformance/scenarios of the first parent folder of the
// working directory that has one). For each scenario it creates the game with the operator key,
// submits every step with its seat's token at the version it holds (with a request id; an
// auto-play step is a SetAutoPlay), makes the calls the server must refuse (each must fail with
// its code, reason and metadata), reads the whole log page by page (7 entries a page by default, so
// that paging is exercised) and checks the final version, every entry's version, seat, action id
// and action, every event, the last round's settlement and the named fields of the spectator's
// final view (the clock's times by how they relate to its settings and the seat's bank), parsing
// the expected JSON into the proto messages and comparing messages (proto.Equal), not strings.
// Prints one line per scenario and "N passed, N failed"; exits 1 when one failed, 2 when none was
// found.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
	"github.com/gostop/gostop/clients/go/gostop"
)

// jsonInt accepts a JSON number or a decimal string (proto3 JSON writes 64-bit integers as strings).
type jsonInt int64

func (n *jsonInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer: %s", b)
	}
	*n = jsonInt(v)
	return nil
}

type step struct {
	Seat     int32  `json:"seat"`
	ActionID *int32 `json:"action_id"`
	// Not in the base format: a step that deals the next round of a match instead of acting.
	StartNextRound bool `json:"start_next_round"`
	// Not in the base format: SetAutoPlay as the seat (a step of the table alone).
	SetAutoPlay *bool `json:"set_auto_play"`
}

// refusal is a call the server must refuse: a CreateGame (Create) or a step of a seat.
type refusal struct {
	step
	Create json.RawMessage `json:"create"`
	Error  struct {
		Code     string            `json:"code"`
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	} `json:"error"`
}

type entry struct {
	Version  jsonInt           `json:"version"`
	Kind     *string           `json:"kind"` // create, action, next_round or table (optional)
	Seat     int32             `json:"seat"`
	ActionID *int32            `json:"actionId"`
	Action   json.RawMessage   `json:"action"` // the structured action (optional; null for a deal)
	Events   []json.RawMessage `json:"events"`
}

// format is the newest scenario format this runner understands.
const format = 1

type scenario struct {
	Format      int             `json:"format"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Create      json.RawMessage `json:"create"`
	Steps       []step          `json:"steps"`
	Refusals    []refusal       `json:"refusals"`
	Expect      struct {
		FinalVersion       jsonInt                    `json:"final_version"`
		Log                []entry                    `json:"log"`
		Settlement         json.RawMessage            `json:"settlement"`
		FinalViewSpectator map[string]json.RawMessage `json:"final_view_spectator"`
	} `json:"expect"`
}

type mismatch struct{ msg string }

func (m *mismatch) Error() string { return m.msg }

func fail(format string, args ...any) error { return &mismatch{fmt.Sprintf(format, args...)} }

func shorten(s string) string {
	if r := []rune(s); len(r) > 400 {
		return string(r[:400]) + "…"
	}
	return s
}

func render(m proto.Message) string {
	b, err := protojson.MarshalOptions{}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("%v", m)
	}
	return shorten(string(b))
}

// sameMessage parses the expected JSON into a fresh message of actual's type and compares messages.
func sameMessage(expectedJSON []byte, actual proto.Message, where string) error {
	expected := actual.ProtoReflect().New().Interface()
	if err := protojson.Unmarshal(expectedJSON, expected); err != nil {
		return fail("%s: expected JSON does not parse: %v", where, err)
	}
	if !proto.Equal(expected, actual) {
		return fail("%s: expected %s, got %s", where, render(expected), render(actual))
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// call makes one step's call at version: the version it answers and, for a step of the game (not
// of the table alone), its TurnResult.
func call(ctx context.Context, client *gostop.Client, gameID, token string, version int64, st step, requestID string) (int64, *pb.TurnResult, error) {
	switch {
	case st.SetAutoPlay != nil:
		resp, err := client.SetAutoPlay(ctx, gameID, token, *st.SetAutoPlay, requestID)
		if err != nil {
			return 0, nil, err
		}
		for _, seat := range resp.GetView().GetSeats() {
			if seat.GetSeat() == st.Seat && seat.GetAutoPlay() != *st.SetAutoPlay {
				return 0, nil, fail("SetAutoPlay(%t) answered seat %d's auto-play %t", *st.SetAutoPlay, st.Seat, seat.GetAutoPlay())
			}
		}
		return resp.GetVersion(), nil, nil
	case st.ActionID != nil:
		result, err := client.SubmitAction(ctx, gostop.Submit{
			GameID: gameID, Token: token, ExpectedVersion: version, ActionID: *st.ActionID, RequestID: requestID,
		})
		return result.GetVersion(), result, err
	case st.StartNextRound:
		result, err := client.StartNextRound(ctx, gameID, token, version, requestID)
		return result.GetVersion(), result, err
	}
	return 0, nil, fail("neither action_id, start_next_round nor set_auto_play")
}

func describe(st step) string {
	switch {
	case st.SetAutoPlay != nil:
		return fmt.Sprintf("seat %d, auto-play %t", st.Seat, *st.SetAutoPlay)
	case st.ActionID != nil:
		return fmt.Sprintf("seat %d, action %d", st.Seat, *st.ActionID)
	}
	return fmt.Sprintf("seat %d, next round", st.Seat)
}

// checkRefusals makes every call of the scenario's refusals, each of which must fail with its
// code (canonical name), reason and metadata.
func checkRefusals(ctx context.Context, client *gostop.Client, sc *scenario, game *pb.CreateGameResponse, version int64) error {
	for i, r := range sc.Refusals {
		var err error
		if len(r.Create) > 0 {
			create := &pb.CreateGameRequest{}
			if perr := protojson.Unmarshal(r.Create, create); perr != nil {
				return fail("refusal %d: create does not parse: %v", i, perr)
			}
			_, err = client.CreateGame(ctx, create)
		} else {
			token := gostop.SeatToken(game, r.Seat)
			_, _, err = call(ctx, client, game.GetGameId(), token, version, r.step, fmt.Sprintf("refusal-%d", i))
		}
		e, ok := gostop.AsError(err)
		if !ok {
			return fail("refusal %d: expected %s %s, got %v", i, r.Error.Code, r.Error.Reason, err)
		}
		name := code.Code(e.Code).String()
		if name != r.Error.Code || string(e.Reason) != r.Error.Reason {
			return fail("refusal %d: expected %s %s, got %s %s", i, r.Error.Code, r.Error.Reason, name, e.Reason)
		}
		for k, v := range r.Error.Metadata {
			if e.Metadata[k] != v {
				return fail("refusal %d: metadata %s = %q, expected %q", i, k, e.Metadata[k], v)
			}
		}
	}
	return nil
}

// checkClock checks how the clock's server times relate (to the settings and the seat's bank), then
// clears them, so that the rest of the clock compares as a message.
func checkClock(view *pb.GameView) error {
	clock := view.GetClock()
	if clock == nil {
		return nil
	}
	started, bankFrom, deadline := clock.GetStartedMs(), clock.GetBankFromMs(), clock.GetDeadlineMs()
	settings := clock.GetSettings()
	switch {
	case clock.GetSeat() < 0:
		if started != 0 || bankFrom != 0 || deadline != 0 {
			return fail("a clock that runs for nobody has times: %s", render(clock))
		}
	default:
		var seat *pb.SeatView
		for _, s := range view.GetSeats() {
			if s.GetSeat() == clock.GetSeat() {
				seat = s
			}
		}
		if seat == nil || started <= 0 {
			return fail("clock: no seat %d or no start: %s", clock.GetSeat(), render(clock))
		}
		wantBankFrom := started + int64(settings.GetDecisionMs())
		wantDeadline := wantBankFrom + int64(seat.GetBankMs())
		if seat.GetAway() || seat.GetAutoPlay() {
			wantBankFrom = started + int64(settings.GetAutoPauseMs())
			wantDeadline = wantBankFrom
		}
		if bankFrom != wantBankFrom || deadline != wantDeadline {
			return fail("clock times do not agree with the settings and the bank: %s", render(clock))
		}
	}
	clock.StartedMs, clock.BankFromMs, clock.DeadlineMs = 0, 0, 0
	return nil
}

func runScenario(ctx context.Context, client *gostop.Client, sc *scenario, pageSize int32) error {
	if sc.Format > format {
		return fail("scenario format %d, this runner reads %d", sc.Format, format)
	}
	create := &pb.CreateGameRequest{}
	if err := protojson.Unmarshal(sc.Create, create); err != nil {
		return fail("create does not parse: %v", err)
	}
	game, err := client.CreateGame(ctx, create)
	if err != nil {
		return fail("CreateGame: %v", err)
	}
	gameID, version := game.GetGameId(), game.GetVersion()
	var last *pb.TurnResult
	for i, st := range sc.Steps {
		token := gostop.SeatToken(game, st.Seat)
		answered, result, err := call(ctx, client, gameID, token, version, st, fmt.Sprintf("conformance-%d", i))
		if err != nil {
			return fail("step %d (%s): %v", i, describe(st), err)
		}
		if answered != version+1 {
			return fail("step %d: version %d after %d", i, answered, version)
		}
		version = answered
		if result != nil {
			last = result
		}
	}
	if err := checkRefusals(ctx, client, sc, game, version); err != nil {
		return err
	}

	want := &sc.Expect
	final := int64(want.FinalVersion)
	if version != final {
		return fail("final version %d, expected %d", version, final)
	}
	log, err := client.GetLog(ctx, gameID, "", pageSize)
	if err != nil {
		return fail("GetGameLog: %v", err)
	}
	if log.GetVersion() != final {
		return fail("log version %d, expected %d", log.GetVersion(), final)
	}
	if len(log.GetEntries()) != len(want.Log) {
		return fail("log has %d entries, expected %d", len(log.GetEntries()), len(want.Log))
	}
	for i, w := range want.Log {
		got := log.GetEntries()[i]
		where := fmt.Sprintf("log entry %d (version %d)", i, got.GetVersion())
		if got.GetVersion() != int64(w.Version) {
			return fail("%s: version %d, expected %d", where, got.GetVersion(), w.Version)
		}
		if got.GetSeat() != w.Seat {
			return fail("%s: seat %d, expected %d", where, got.GetSeat(), w.Seat)
		}
		if w.Kind != nil && got.GetKind() != *w.Kind {
			return fail("%s: kind %q, expected %q", where, got.GetKind(), *w.Kind)
		}
		switch {
		case got.GetAction() == nil && w.ActionID != nil:
			return fail("%s: no action, expected action id %d", where, *w.ActionID)
		case got.GetAction() != nil:
			id, err := gostop.ActionID(got.GetAction())
			if err != nil {
				return fail("%s: %v", where, err)
			}
			if w.ActionID == nil {
				return fail("%s: action id %d, expected none", where, id)
			}
			if id != *w.ActionID {
				return fail("%s: action id %d, expected %d", where, id, *w.ActionID)
			}
			if !isNull(w.Action) {
				if err := sameMessage(w.Action, got.GetAction(), where+" action"); err != nil {
					return err
				}
			}
		}
		if len(got.GetEvents()) != len(w.Events) {
			return fail("%s: %d events, expected %d", where, len(got.GetEvents()), len(w.Events))
		}
		for j, raw := range w.Events {
			if err := sameMessage(raw, got.GetEvents()[j], fmt.Sprintf("%s event %d", where, j)); err != nil {
				return err
			}
		}
	}

	if want.Settlement != nil {
		// The last round's settlement: that of the last step's result (the deal's, without steps).
		var got *pb.Settlement
		if last != nil {
			got = last.GetSettlement()
		} else {
			got = game.GetView().GetSettlement()
		}
		if isNull(want.Settlement) {
			if got != nil {
				return fail("settlement %s, expected none", render(got))
			}
		} else {
			if got == nil {
				return fail("no settlement in the last result")
			}
			if err := sameMessage(want.Settlement, got, "settlement"); err != nil {
				return err
			}
		}
	}

	if want.FinalViewSpectator != nil {
		spectator, err := client.GetGame(ctx, gameID, "")
		if err != nil {
			return fail("GetGame (spectator): %v", err)
		}
		subset, err := json.Marshal(want.FinalViewSpectator)
		if err != nil {
			return fail("final_view_spectator: %v", err)
		}
		// Compare only the fields the subset names, as messages: clear the others of the actual view.
		actual := proto.Clone(spectator.GetView()).(*pb.GameView)
		if err := checkClock(actual); err != nil {
			return err
		}
		fields := actual.ProtoReflect().Descriptor().Fields()
		named := map[protoreflect.FieldNumber]bool{}
		for key := range want.FinalViewSpectator {
			fd := fields.ByJSONName(key)
			if fd == nil {
				fd = fields.ByName(protoreflect.Name(key))
			}
			if fd == nil {
				return fail("final_view_spectator: unknown field %s", key)
			}
			named[fd.Number()] = true
		}
		m := actual.ProtoReflect()
		for i := 0; i < fields.Len(); i++ {
			if fd := fields.Get(i); !named[fd.Number()] {
				m.Clear(fd)
			}
		}
		if err := sameMessage(subset, actual, "final spectator view"); err != nil {
			return err
		}
	}
	return nil
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// defaultScenarios is tests/conformance/scenarios of the nearest parent folder that has one.
func defaultScenarios() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("tests", "conformance", "scenarios")
	}
	for {
		candidate := filepath.Join(dir, "tests", "conformance", "scenarios")
		if info, err := os.Stat(candidate); err == nil && info.IsDir() {
			return candidate
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join("tests", "conformance", "scenarios")
		}
		dir = parent
	}
}

func main() {
	server := flag.String("server", env("GOSTOP_ADDRESS", "127.0.0.1:50051"), "server host:port")
	key := flag.String("operator-key", os.Getenv("GOSTOP_OPERATOR_KEY"), "operator key (x-api-key)")
	dir := flag.String("scenarios", env("GOSTOP_SCENARIOS", ""), "folder of *.json scenarios")
	pageSize := flag.Int("page-size", 7, "log entries per GetGameLog page")
	timeout := flag.Duration("timeout", 60*time.Second, "time limit of one scenario")
	flag.Parse()

	paths := flag.Args()
	if len(paths) == 0 {
		if *dir == "" {
			*dir = defaultScenarios()
		}
		matches, _ := filepath.Glob(filepath.Join(*dir, "*.json"))
		sort.Strings(matches)
		paths = matches
	}
	client, err := gostop.New(*server, gostop.WithAPIKey(*key))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer client.Close()

	passed, failed := 0, 0
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		started := time.Now()
		err := func() error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var sc scenario
			if err := json.Unmarshal(data, &sc); err != nil {
				return fmt.Errorf("bad scenario file: %w", err)
			}
			if sc.Name != "" {
				name = sc.Name
			}
			ctx, cancel := context.WithTimeout(context.Background(), *timeout)
			defer cancel()
			return runScenario(ctx, client, &sc, int32(*pageSize))
		}()
		if err != nil {
			failed++
			var m *mismatch
			if !errors.As(err, &m) {
				err = fmt.Errorf("error: %w", err)
			}
			fmt.Printf("FAIL %s: %v\n", name, err)
			continue
		}
		passed++
		fmt.Printf("PASS %s (%d ms)\n", name, time.Since(started).Milliseconds())
	}
	if len(paths) == 0 {
		fmt.Printf("no scenarios found in %s\n", *dir)
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	switch {
	case failed > 0:
		os.Exit(1)
	case len(paths) == 0:
		os.Exit(2)
	}
}
