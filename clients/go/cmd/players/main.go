// Command players is a load generator of connected players: N people in N/2 two-player games
// (or a mix with three-player games), each holding a WatchGame stream for its seat and acting
// only when it is its turn, after a think time, as people at a table do.
//
//	players -grpc 127.0.0.1:50051[,ADDR…] [-http 127.0.0.1:8080[,ADDR…]] [-players 100]
//	        [-connect-share 0.25] [-three-share 0] [-think-min 1s] [-think-max 3s]
//	        [-warmup 5s] [-duration 30s] [-json FILE]
//
// Each player keeps WatchGame open for its seat (resuming after the last version received when
// the stream breaks), with its view after each version's events (include_views; with -views=false
// it reads its view with GetGame after every event of someone else's commit, one call at a time,
// as a client without views does); when the view gives it legal actions it
// thinks, then submits one of them at random (SubmitAction with a request id and the view's
// version; answered UNAVAILABLE, it sends the same call again, at most twice, as a client must);
// seat 0 deals the next round (StartNextRound) once a round is over. A share of the
// players (-connect-share) goes through the HTTP port with the Connect protocol, the rest through
// gRPC; game i is played on the i-th address of the lists, round robin.
//
// It measures, over the -duration window after -warmup: the actor's latency (SubmitAction or
// StartNextRound sent → answered), the fan-out latency (the actor's answer → the commit's first
// event on each other seat's stream; an event that came first counts as 0), errors by code (with
// the first messages of each) and calls sent again, and
// it checks that every seat's stream carried every committed version exactly once and in order
// (lost and duplicated versions are counted over the whole run). It prints a summary, and the
// same figures as JSON with -json, including its own CPU time per player (getrusage).
//
// The server's per-client-address stream limit (GOSTOP_MAX_WATCH_PER_PEER) counts every stream of
// this one process: raise it, or set it to 0, for more players than it allows.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
	"github.com/gostop/gostop/clients/go/gostop"
)

type options struct {
	grpcAddrs    []string
	httpAddrs    []string
	players      int
	connectShare float64
	views        bool
	whole        bool
	rounds       int
	threeShare   float64
	thinkMin     time.Duration
	thinkMax     time.Duration
	warmup       time.Duration
	duration     time.Duration
	drain        time.Duration
	timeout      time.Duration
	preset       string
	apiKey       string
	jsonPath     string
	seed         uint64
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseFlags() (*options, error) {
	o := &options{}
	grpcList := flag.String("grpc", "127.0.0.1:50051", "gRPC addresses host:port, comma-separated (games round robin)")
	httpList := flag.String("http", "", "HTTP port addresses host:port for the Connect players, comma-separated (needed when -connect-share > 0)")
	flag.IntVar(&o.players, "players", 100, "connected players")
	flag.Float64Var(&o.connectShare, "connect-share", 0.25, "share of the players that use the Connect protocol on the HTTP port")
	flag.IntVar(&o.rounds, "rounds", 0, "rounds per match; 0: open-ended. A table whose match is over starts a new one (a fresh game and tokens), as people do")
	flag.BoolVar(&o.views, "views", true, "learn the seat's view from its stream (WatchGame include_views); false: GetGame after every event, as clients without views do")
	flag.BoolVar(&o.whole, "whole-versions", true, "receive each version as one stream message (WatchGame whole_versions); false: a message per event and one for the view, as clients before it do")
	flag.Float64Var(&o.threeShare, "three-share", 0, "share of the players seated in three-player games (the rest in two-player games)")
	flag.DurationVar(&o.thinkMin, "think-min", time.Second, "shortest think time before an action")
	flag.DurationVar(&o.thinkMax, "think-max", 3*time.Second, "longest think time before an action (uniform between the two)")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "time to seat everyone before the measured window")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "the measured window")
	flag.DurationVar(&o.drain, "drain", 3*time.Second, "after the window: time for the last commits to reach every stream")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "deadline of each unary call")
	flag.StringVar(&o.preset, "preset", "standard", "rule preset of the games")
	flag.StringVar(&o.apiKey, "api-key", os.Getenv("GOSTOP_API_KEY"), "API key for CreateGame when the server requires one (default $GOSTOP_API_KEY)")
	flag.StringVar(&o.jsonPath, "json", "", "write the results as JSON to this file")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the think times, seats' protocols and chosen actions")
	flag.Parse()
	o.grpcAddrs, o.httpAddrs = splitList(*grpcList), splitList(*httpList)
	switch {
	case o.players < 2:
		return nil, errors.New("-players must be at least 2")
	case len(o.grpcAddrs) == 0:
		return nil, errors.New("-grpc needs at least one address")
	case o.connectShare < 0 || o.connectShare > 1 || o.threeShare < 0 || o.threeShare > 1:
		return nil, errors.New("-connect-share and -three-share are between 0 and 1")
	case o.connectShare > 0 && len(o.httpAddrs) == 0:
		return nil, errors.New("-connect-share > 0 needs -http")
	case o.thinkMin < 0 || o.thinkMax < o.thinkMin:
		return nil, errors.New("think times: 0 <= -think-min <= -think-max")
	case o.duration <= 0:
		return nil, errors.New("-duration must be positive")
	}
	for _, a := range append(append([]string{}, o.grpcAddrs...), o.httpAddrs...) {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("address %q: %v", a, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("address %q: only loopback addresses are allowed", a)
		}
	}
	return o, nil
}

// run holds what every player records.
type run struct {
	opts       *options
	start      time.Time // measured window start
	end        time.Time // measured window end
	mu         sync.Mutex
	submit     []time.Duration
	fanout     []time.Duration
	early      int64 // fan-out events that arrived before the actor's answer
	errs       map[string]int64
	examples   map[string][]string // the first few failed calls' messages, by how they are counted
	retries    map[string]int64    // calls sent again with their request id, by the first answer's code
	breaks     map[string]int64    // streams that broke (and were resumed), by code
	actions    int64
	rounds     int64
	lost       int64
	duplicated int64
	resumes    int64
}

func (r *run) measuring(t time.Time) bool { return !t.Before(r.start) && t.Before(r.end) }

func (r *run) fail(err error) { r.tally(r.errs, "", err) }

// retried counts a call answered UNAVAILABLE (a connection closing under it) and sent again.
func (r *run) retried(err error) { r.tally(r.retries, "retried ", err) }

// tally counts err by its code in counts, and keeps its message among the first few of kind+code.
func (r *run) tally(counts map[string]int64, kind string, err error) {
	ce := asCallError(err)
	key := ce.key()
	r.mu.Lock()
	counts[key]++
	if len(r.examples[kind+key]) < maxExamples {
		r.examples[kind+key] = append(r.examples[kind+key], ce.Error())
	}
	r.mu.Unlock()
}

const (
	maxRetries = 2
	retryPause = 50 * time.Millisecond
)

// maxExamples is how many messages of failed calls a report keeps per code: enough to tell a
// transport's failure from the server's answer.
const maxExamples = 3

// broke counts a stream that ended with an error and is resumed (e.g. the server closing a
// connection past its age limit): not a failed call, and the version check tells whether
// anything was lost.
func (r *run) broke(err error) {
	ce := asCallError(err)
	r.mu.Lock()
	r.breaks[ce.key()]++
	r.mu.Unlock()
}

// game is one table: the commit times of its versions and their arrivals on each seat's stream.
type game struct {
	id      string
	seats   int
	mu      sync.Mutex
	commits map[int64]time.Time         // version → the actor's answer
	arrived map[int64]map[int]time.Time // version → watcher seat → first event
	actor   map[int64]int
	latest  int64 // the newest version any seat's answer or view has shown
}

func (g *game) noteVersion(v int64) {
	g.mu.Lock()
	if v > g.latest {
		g.latest = v
	}
	g.mu.Unlock()
}

// committed records the actor's answer for version v, measured if in the window.
func (g *game) committed(r *run, v int64, seat int, at time.Time, measured bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v > g.latest {
		g.latest = v
	}
	for k := range g.arrived { // arrivals of older versions whose commit is not awaited any more
		if _, pending := g.commits[k]; k < v && !pending {
			delete(g.arrived, k)
		}
	}
	if !measured {
		delete(g.arrived, v)
		return
	}
	g.commits[v] = at
	g.actor[v] = seat
	g.settle(r, v)
}

// arrival records seat's first event of version v.
func (g *game) arrival(r *run, v int64, seat int, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, pending := g.commits[v]; !pending && v < g.latest {
		return // settled already, or committed outside the window
	}
	m := g.arrived[v]
	if m == nil {
		m = map[int]time.Time{}
		g.arrived[v] = m
	}
	if _, seen := m[seat]; !seen {
		m[seat] = at
	}
	if _, ok := g.commits[v]; ok {
		g.settle(r, v)
	}
}

// settle turns the arrivals of a committed version into fan-out samples (under g.mu); a counted
// arrival keeps a zero time, and the version is forgotten once every other seat's is counted.
func (g *game) settle(r *run, v int64) {
	at, actor := g.commits[v], g.actor[v]
	m := g.arrived[v]
	counted := 0
	for seat, t := range m {
		if seat == actor {
			continue
		}
		if !t.IsZero() {
			d := t.Sub(at)
			r.mu.Lock()
			if d < 0 {
				d = 0
				r.early++
			}
			r.fanout = append(r.fanout, d)
			r.mu.Unlock()
			m[seat] = time.Time{}
		}
		counted++
	}
	if counted >= g.seats-1 {
		delete(g.arrived, v)
		delete(g.commits, v)
		delete(g.actor, v)
	}
}

// player is one seat, and its stream's record.
type player struct {
	r        *run
	g        *game
	seat     int
	token    string
	t        transport
	rng      *rand.Rand
	notify   chan struct{}
	seen     atomic.Int64                         // the newest version its stream carried
	view     atomic.Pointer[pb.WatchGameResponse] // the newest view its stream carried (-views)
	last     int64                                // stream bookkeeping (watch goroutine only)
	finished atomic.Bool                          // the stream ended with the match
}

func (p *player) think(ctx context.Context) bool {
	d := p.r.opts.thinkMin
	if span := p.r.opts.thinkMax - p.r.opts.thinkMin; span > 0 {
		d += time.Duration(p.rng.Int64N(int64(span)))
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// watch holds the seat's stream until ctx ends, resuming after the last version received.
func (p *player) watch(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		if !first {
			atomic.AddInt64(&p.r.resumes, 1)
		}
		first = false
		s, err := p.t.watch(ctx, p.g.id, p.token, p.last, watchOptions{views: p.r.opts.views, whole: p.r.opts.whole})
		if err != nil {
			if ctx.Err() == nil {
				p.r.fail(err)
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		resumedAfter := p.last
		for {
			msg, err := s.recv()
			if err != nil {
				s.close()
				if errors.Is(err, io.EOF) {
					p.finished.Store(true)
					return
				}
				if ctx.Err() == nil {
					p.r.broke(err)
				}
				break
			}
			now := time.Now()
			v := msg.GetVersion()
			if msg.GetView() != nil { // a view follows its version's events: no event bookkeeping
				p.view.Store(msg)
				p.signal()
				continue
			}
			switch {
			case v <= resumedAfter || v < p.last:
				atomic.AddInt64(&p.r.duplicated, 1)
				continue
			case v > p.last+1:
				atomic.AddInt64(&p.r.lost, v-p.last-1)
			}
			if v != p.last {
				p.g.arrival(p.r, v, p.seat, now)
			}
			p.last = v
			p.seen.Store(v)
			p.signal()
		}
	}
}

func (p *player) signal() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// streamView waits for the stream's view of the newest version it carried.
func (p *player) streamView(ctx context.Context) (*pb.WatchGameResponse, bool) {
	for {
		if got := p.view.Load(); got != nil && got.GetVersion() >= p.seen.Load() {
			return got, true
		}
		if p.finished.Load() {
			return nil, false
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-p.notify:
		case <-time.After(time.Second):
		}
	}
}

// play acts whenever its view says it may, until ctx ends.
func (p *player) play(ctx context.Context) {
	var view *pb.GameView
	var version int64
	refresh := func() bool {
		if p.r.opts.views {
			got, ok := p.streamView(ctx)
			if ok {
				view, version = got.GetView(), got.GetVersion()
				p.g.noteVersion(version)
			}
			return ok
		}
		for ctx.Err() == nil {
			got, err := p.t.getGame(context.WithoutCancel(ctx), p.g.id, p.token)
			if err == nil {
				view, version = got.GetView(), got.GetVersion()
				p.g.noteVersion(version)
				return true
			}
			p.r.fail(err)
			if !sleepCtx(ctx, 200*time.Millisecond) {
				return false
			}
		}
		return false
	}
	if !refresh() {
		return
	}
	for ctx.Err() == nil {
		if view.GetMatch().GetFinished() {
			return
		}
		legal := view.GetLegalActions()
		roundOver := view.GetPhase() == pb.Phase_PHASE_OVER
		if len(legal) > 0 || (roundOver && p.seat == 0) {
			if !p.think(ctx) {
				return
			}
			requestID := gostop.NewRequestID("players")
			sent := time.Now()
			var result *pb.TurnResult
			var err error
			callCtx := context.WithoutCancel(ctx)
			call := func() (*pb.TurnResult, error) {
				return p.t.startNextRound(callCtx, p.g.id, p.token, version, requestID)
			}
			if len(legal) > 0 {
				action := legal[p.rng.IntN(len(legal))].GetId()
				call = func() (*pb.TurnResult, error) {
					return p.t.submit(callCtx, p.g.id, p.token, version, action, requestID)
				}
			}
			result, err = call()
			// As a client must: UNAVAILABLE again with the same request id (the server commits it once).
			for try := 0; err != nil && asCallError(err).Code == "UNAVAILABLE" && try < maxRetries; try++ {
				p.r.retried(err)
				if !sleepCtx(ctx, retryPause) {
					return
				}
				result, err = call()
			}
			answered := time.Now()
			if err != nil {
				p.r.fail(err)
				if !refresh() {
					return
				}
				continue
			}
			measured := p.r.measuring(sent)
			p.g.committed(p.r, result.GetVersion(), p.seat, answered, measured)
			if measured {
				p.r.mu.Lock()
				p.r.submit = append(p.r.submit, answered.Sub(sent))
				if len(legal) > 0 {
					p.r.actions++
				} else {
					p.r.rounds++
				}
				p.r.mu.Unlock()
			}
			view, version = result.GetView(), result.GetVersion()
			if p.seen.Load() > version && !refresh() {
				return
			}
			continue
		}
		// Not our move: wait for the stream to carry a newer version, then read the view again.
		for p.seen.Load() <= version {
			if p.finished.Load() {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-p.notify:
			case <-time.After(time.Second):
			}
		}
		if !refresh() {
			return
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

type latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func summarize(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return latency{Count: len(ds), P50: ms(ds[len(ds)/2]), P99: ms(ds[min(len(ds)-1, len(ds)*99/100)]),
		Max: ms(ds[len(ds)-1])}
}

type report struct {
	Players             int                 `json:"players"`
	Games               int                 `json:"games"`
	GRPCPlayers         int                 `json:"grpc_players"`
	ConnectPlayers      int                 `json:"connect_players"`
	Seconds             float64             `json:"seconds"`
	Actions             int64               `json:"actions"`
	RoundsDealt         int64               `json:"rounds_dealt"`
	ActionsPerSecond    float64             `json:"actions_per_second"`
	Submit              latency             `json:"submit"`
	Fanout              latency             `json:"fanout"`
	FanoutBeforeAnswer  int64               `json:"fanout_before_answer"`
	Lost                int64               `json:"lost"`
	Duplicated          int64               `json:"duplicated"`
	Resumes             int64               `json:"stream_resumes"`
	Breaks              map[string]int64    `json:"stream_breaks"`
	Errors              map[string]int64    `json:"errors"`
	ErrorExamples       map[string][]string `json:"error_examples"`
	Retries             map[string]int64    `json:"retries"`
	ErrorCount          int64               `json:"error_count"`
	CPUSeconds          float64             `json:"generator_cpu_seconds"`
	CPUPercent          float64             `json:"generator_cpu_percent"`
	CPUMillisPerPlayerS float64             `json:"generator_cpu_ms_per_player_second"`
	SetupFailures       int                 `json:"setup_failures"`
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	opts, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "players:", err)
		flag.Usage()
		os.Exit(2)
	}
	rep, err := execute(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "players:", err)
		os.Exit(1)
	}
	printReport(rep)
	if opts.jsonPath != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(opts.jsonPath, append(data, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "players: writing the JSON:", err)
			os.Exit(1)
		}
	}
}

// tableSizes seats the players: three-player tables for the -three-share, two-player ones for the rest.
func tableSizes(o *options) []int {
	threes := int(float64(o.players)*o.threeShare) / 3
	rest := o.players - 3*threes
	var sizes []int
	for i := 0; i < threes; i++ {
		sizes = append(sizes, 3)
	}
	for i := 0; i < rest/2; i++ {
		sizes = append(sizes, 2)
	}
	if rest%2 == 1 && threes > 0 {
		sizes[len(sizes)-1] = 3
	}
	return sizes
}

func execute(o *options) (*report, error) {
	rng := rand.New(rand.NewPCG(o.seed, 0x9e3779b97f4a7c15))
	clientOpts := []gostop.Option{gostop.WithTimeout(o.timeout)}
	creatorOpts := clientOpts
	if o.apiKey != "" {
		creatorOpts = append(creatorOpts, gostop.WithAPIKey(o.apiKey))
	}
	creators := map[string]transport{}
	httpClient := &http.Client{Transport: &http.Transport{
		MaxIdleConns: 0, MaxIdleConnsPerHost: o.players + 16, IdleConnTimeout: time.Minute,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	var closers []*gostop.Client
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	newGRPC := func(addr string, opts ...gostop.Option) (transport, error) {
		c, err := gostop.New(addr, opts...)
		if err != nil {
			return nil, err
		}
		closers = append(closers, c)
		return grpcTransport{c}, nil
	}
	newConnect := func(addr string) transport {
		return connectTransport{&connectClient{base: "http://" + addr, http: httpClient, timeout: o.timeout}}
	}

	sizes := tableSizes(o)
	r := &run{opts: o, errs: map[string]int64{}, examples: map[string][]string{}, retries: map[string]int64{}, breaks: map[string]int64{}}
	seated := 0
	for _, n := range sizes {
		seated += n
	}
	connectSeats := map[int]bool{}
	for _, i := range rng.Perm(seated)[:int(float64(seated)*o.connectShare+0.5)] {
		connectSeats[i] = true
	}

	// Seat everyone: create the games, open every stream, start every player.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	watchCtx, stopWatching := context.WithCancel(context.Background())
	defer stopWatching()
	var players []*player // every seat of every match played
	var playersMu sync.Mutex
	var wg, watchers sync.WaitGroup
	var setupFailures, games, people, connectPeople atomic.Int64
	index := 0
	r.start = time.Now().Add(o.warmup)
	r.end = r.start.Add(o.duration)
	for gi, n := range sizes {
		grpcAddr := o.grpcAddrs[gi%len(o.grpcAddrs)]
		creator, ok := creators[grpcAddr]
		if !ok {
			c, err := newGRPC(grpcAddr, creatorOpts...)
			if err != nil {
				return nil, err
			}
			creator, creators[grpcAddr] = c, c
		}
		// The table's people keep their connections from match to match.
		conns := make([]transport, n)
		for seat := range conns {
			var err error
			if connectSeats[index] {
				conns[seat] = newConnect(o.httpAddrs[gi%len(o.httpAddrs)])
			} else if conns[seat], err = newGRPC(grpcAddr, clientOpts...); err != nil {
				return nil, err
			}
			index++
		}
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			tableRNG := rand.New(rand.NewPCG(seed, uint64(gi)))
			for first := true; ctx.Err() == nil; first = false {
				rounds := int32(o.rounds)
				resp, err := creator.createGame(ctx, &pb.CreateGameRequest{Preset: o.preset, Players: int32(n), Rounds: &rounds})
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					r.fail(err)
					if first {
						setupFailures.Add(1)
						return
					}
					sleepCtx(ctx, 200*time.Millisecond)
					continue
				}
				games.Add(1)
				if first {
					people.Add(int64(n))
					for _, c := range conns {
						if _, ok := c.(connectTransport); ok {
							connectPeople.Add(1)
						}
					}
				}
				g := &game{id: resp.GetGameId(), seats: n, commits: map[int64]time.Time{},
					arrived: map[int64]map[int]time.Time{}, actor: map[int64]int{}, latest: resp.GetVersion()}
				var plays sync.WaitGroup
				for _, st := range resp.GetSeats() {
					p := &player{r: r, g: g, seat: int(st.GetSeat()), token: st.GetToken(), t: conns[st.GetSeat()],
						rng: rand.New(rand.NewPCG(tableRNG.Uint64(), tableRNG.Uint64())), notify: make(chan struct{}, 1)}
					playersMu.Lock()
					players = append(players, p)
					playersMu.Unlock()
					watchers.Add(1)
					go func() { defer watchers.Done(); p.watch(watchCtx) }()
					plays.Add(1)
					go func() { defer plays.Done(); p.play(ctx) }()
				}
				plays.Wait() // the match is over (or the run)
			}
		}()
	}
	if wait := time.Until(r.start); wait > 0 {
		time.Sleep(wait)
	}
	seatedPlayers := people.Load()
	if seatedPlayers == 0 {
		return nil, fmt.Errorf("no game could be created (%v)", r.errs)
	}
	cpuStart := cpuTime()
	time.Sleep(time.Until(r.end))
	cpu := cpuTime() - cpuStart
	stop()
	wg.Wait()
	time.Sleep(o.drain)
	stopWatching()
	watchers.Wait()

	// Whatever a seat's stream did not carry of its game's committed versions is lost.
	for _, p := range players {
		p.g.mu.Lock()
		latest := p.g.latest
		p.g.mu.Unlock()
		if latest > p.last {
			r.lost += latest - p.last
		}
	}
	seatedPeople, connect := int(people.Load()), int(connectPeople.Load())
	secs := o.duration.Seconds()
	rep := &report{
		Players: seatedPeople, Games: int(games.Load()), GRPCPlayers: seatedPeople - connect,
		ConnectPlayers: connect, Seconds: secs, Actions: r.actions, RoundsDealt: r.rounds,
		ActionsPerSecond: float64(r.actions+r.rounds) / secs, Submit: summarize(r.submit),
		Fanout: summarize(r.fanout), FanoutBeforeAnswer: r.early, Lost: r.lost, Duplicated: r.duplicated,
		Resumes: r.resumes, Errors: r.errs, CPUSeconds: cpu.Seconds(), CPUPercent: 100 * cpu.Seconds() / secs,
		CPUMillisPerPlayerS: 1000 * cpu.Seconds() / secs / float64(seatedPeople), SetupFailures: int(setupFailures.Load()),
		Breaks: r.breaks, ErrorExamples: r.examples, Retries: r.retries,
	}
	for _, n := range r.errs {
		rep.ErrorCount += n
	}
	return rep, nil
}

func printReport(r *report) {
	fmt.Printf("%d players (%d gRPC, %d Connect) in %d games, %.0f s measured\n", r.Players, r.GRPCPlayers,
		r.ConnectPlayers, r.Games, r.Seconds)
	fmt.Printf("  actions          %d (+%d rounds dealt), %.1f/s\n", r.Actions, r.RoundsDealt, r.ActionsPerSecond)
	fmt.Printf("  submit  ms       p50 %.1f  p99 %.1f  max %.1f  (%d)\n", r.Submit.P50, r.Submit.P99, r.Submit.Max, r.Submit.Count)
	fmt.Printf("  fan-out ms       p50 %.1f  p99 %.1f  max %.1f  (%d; %d before the actor's answer)\n",
		r.Fanout.P50, r.Fanout.P99, r.Fanout.Max, r.Fanout.Count, r.FanoutBeforeAnswer)
	fmt.Printf("  streams          lost %d, duplicated %d, resumed %d\n", r.Lost, r.Duplicated, r.Resumes)
	fmt.Printf("  errors           %d %s\n", r.ErrorCount, joinCounts(r.Errors))
	for _, k := range sortedKeys(r.Errors) {
		for _, message := range r.ErrorExamples[k] {
			fmt.Printf("    e.g. %s\n", message)
		}
	}
	fmt.Printf("  stream breaks    %s (each resumed)\n", joinCounts(r.Breaks))
	fmt.Printf("  calls sent again %s (same request id)\n", joinCounts(r.Retries))
	fmt.Printf("  generator CPU    %.1f%% of a core, %.3f ms per player-second\n", r.CPUPercent, r.CPUMillisPerPlayerS)
}

func sortedKeys(counts map[string]int64) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// joinCounts is "CODE n, CODE n" in the codes' order.
func joinCounts(counts map[string]int64) string {
	parts := make([]string, 0, len(counts))
	for _, k := range sortedKeys(counts) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
