package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minfer/minfer/chat"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/tokenizer"
)

// Config describes the model a Server serves and its limits.
type Config struct {
	Engine    Engine
	Tokenizer *tokenizer.Tokenizer
	// NVocab is the length of a logits row (the model's vocabulary).
	NVocab int
	// Template renders chat messages (nil: /v1/chat/completions and
	// /apply-template answer 400).
	Template        *chat.Template
	TemplateOptions chat.Options
	// ModelID is the name /v1/models lists and requests must name (or
	// leave empty).
	ModelID string
	// Defaults are the sampling parameters a request does not set.
	Defaults sample.Params
	// RandomSeed gives requests without a seed a random one instead of
	// Defaults.Seed.
	RandomSeed bool
	// MaxTokens caps a generation when the request sets no limit (-1 or 0:
	// until end of generation or a full slot).
	MaxTokens int
	// APIKey, if set, is required as "Authorization: Bearer KEY" on every
	// endpoint but /health.
	APIKey string
	// MaxBodyBytes bounds a request body (0: 8 MiB).
	MaxBodyBytes int64
	// Queue is how many requests may wait for a slot (beyond that: 503).
	Queue int
	// PrefillChunk is the most prompt tokens of one request evaluated per
	// step (0: 128).
	PrefillChunk int
	// PrefillBatch is the most prompt tokens of all requests together
	// evaluated per step (0: 512).
	PrefillBatch int
	// CachePrompt reuses the prefix a slot's cache shares with a new
	// prompt (a conversation's earlier turns), as llama-server's
	// cache_prompt; requests go to the free slot sharing the most.
	CachePrompt bool
	// WriteTimeout bounds each write to a client (0: 30 s): a client that
	// stops reading is cut off and its slot freed.
	WriteTimeout time.Duration
	Logger       *slog.Logger
}

// Server is the HTTP front of a scheduler.
type Server struct {
	cfg      Config
	sched    *scheduler
	metrics  *metrics
	log      *slog.Logger
	routes   map[string]map[string]http.HandlerFunc
	tmplMu   sync.Mutex
	draining atomic.Bool
	created  int64
}

// New starts the scheduler over cfg.Engine.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil || cfg.Tokenizer == nil {
		return nil, errors.New("serve: an engine and a tokenizer are needed")
	}
	if cfg.Engine.Slots() < 1 || cfg.Engine.SlotContext() < 2 {
		return nil, fmt.Errorf("serve: the engine has %d slots of %d positions", cfg.Engine.Slots(), cfg.Engine.SlotContext())
	}
	if cfg.NVocab <= 0 {
		cfg.NVocab = cfg.Tokenizer.NVocab()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ModelID == "" {
		cfg.ModelID = "minfer"
	}
	if err := cfg.Defaults.Validate(); err != nil {
		return nil, err
	}
	m := newMetrics()
	m.queueSize = max(cfg.Queue, 0)
	s := &Server{cfg: cfg, metrics: m, log: cfg.Logger, created: time.Now().Unix()}
	s.sched = newScheduler(cfg.Engine, cfg.Tokenizer, cfg.NVocab, SchedConfig{Queue: cfg.Queue, PrefillChunk: cfg.PrefillChunk, PrefillBatch: cfg.PrefillBatch, CachePrompt: cfg.CachePrompt}, m)
	s.routes = map[string]map[string]http.HandlerFunc{
		"/v1/chat/completions": {"POST": s.chatCompletions},
		"/chat/completions":    {"POST": s.chatCompletions},
		"/v1/completions":      {"POST": s.completions},
		"/completions":         {"POST": s.completions},
		"/v1/models":           {"GET": s.models},
		"/models":              {"GET": s.models},
		"/health":              {"GET": s.healthz},
		"/v1/health":           {"GET": s.healthz},
		"/metrics":             {"GET": s.metricsz},
		"/apply-template":      {"POST": s.applyTemplate},
		"/tokenize":            {"POST": s.tokenize},
		"/detokenize":          {"POST": s.detokenize},
	}
	return s, nil
}

// Close stops the scheduler: running and queued generations end with an
// error.
func (s *Server) Close() { s.sched.close() }

// Drain makes /health answer 503 and refuses new generations, so a load
// balancer stops sending requests while the streams in flight finish.
func (s *Server) Drain() { s.draining.Store(true) }

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests finish for up to grace, then cancels
// the generations left and closes their connections.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second, // the body; handlers lift it for the generation
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", grace.String(), "slots_busy", s.sched.busy())
	s.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		s.log.Warn("grace period over: cancelling the generations left", "slots_busy", s.sched.busy())
	}
	s.Close() // ends what is left; their handlers return
	if err != nil {
		cctx, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel2()
		if hs.Shutdown(cctx) != nil {
			hs.Close()
		}
	}
	<-errc
	return nil
}

// Handler is the server's routes with authentication, body limits, panic
// recovery, logging and request metrics.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serveHTTP)
}

// rec records what a handler did, for the log line and the metrics.
type rec struct {
	http.ResponseWriter
	status      int
	wrote       bool
	prompt, gen int
	finish      string
	errMsg      string
	stream      bool
	cancelled   bool
	ttft        time.Duration
}

func (r *rec) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *rec) Write(b []byte) (int, error) {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (r *rec) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &rec{ResponseWriter: w}
	endpoint := r.URL.Path
	byMethod, known := s.routes[endpoint]
	if !known && strings.HasPrefix(endpoint, "/v1/models/") {
		byMethod, known = map[string]http.HandlerFunc{"GET": s.model}, true
		endpoint = "/v1/models/{id}"
	}
	if !known {
		endpoint = "other"
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.metrics.panics.Add(1)
			s.log.Error("handler panic", "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rw.wrote {
				writeError(rw, http.StatusInternalServerError, "server_error", "internal_error", "internal error: the request was not completed (logged on the server)")
			}
		}
		s.metrics.request(endpoint, rw.status)
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", rw.status, "ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr}
		if rw.prompt > 0 {
			attrs = append(attrs, "prompt_tokens", rw.prompt, "completion_tokens", rw.gen, "finish", rw.finish, "stream", rw.stream,
				"ttft_ms", rw.ttft.Milliseconds())
		}
		if rw.cancelled {
			attrs = append(attrs, "cancelled", true)
		}
		if rw.errMsg != "" {
			attrs = append(attrs, "error", rw.errMsg)
		}
		level := slog.LevelInfo
		if (endpoint == "/health" || endpoint == "/v1/health" || endpoint == "/metrics") && rw.status == http.StatusOK {
			level = slog.LevelDebug // probes and scrapes every few seconds
		}
		s.log.Log(r.Context(), level, "request", attrs...)
	}()
	if !known {
		writeError(rw, http.StatusNotFound, "invalid_request_error", "not_found", fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
		return
	}
	h, ok := byMethod[r.Method]
	if !ok {
		var allowed []string
		for m := range byMethod {
			allowed = append(allowed, m)
		}
		rw.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(rw, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
		return
	}
	if s.cfg.APIKey != "" && endpoint != "/health" && endpoint != "/v1/health" && !s.authorized(r) {
		writeError(rw, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "invalid or missing API key: send the header \"Authorization: Bearer KEY\"")
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, s.cfg.MaxBodyBytes)
	h(rw, r)
}

func (s *Server) authorized(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		key = r.Header.Get("X-Api-Key")
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.cfg.APIKey)) == 1
}

// apiError is an error with its HTTP status and OpenAI type and code.
type apiError struct {
	status    int
	typ, code string
	msg       string
	param     string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(code, format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: code, msg: fmt.Sprintf(format, a...)}
}

// withParam names the request field the error is about.
func (e *apiError) withParam(p string) *apiError {
	e.param = p
	return e
}

// errorBody is OpenAI's error object.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func errorJSON(typ, code, msg, param string) []byte {
	var b errorBody
	b.Error.Message, b.Error.Type, b.Error.Code = msg, typ, code
	if param != "" {
		b.Error.Param = &param
	}
	out, _ := json.Marshal(b)
	return out
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	if r, ok := w.(*rec); ok {
		r.errMsg = msg
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(errorJSON(typ, code, msg, ""), '\n'))
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	if r, ok := w.(*rec); ok {
		r.errMsg = e.msg
	}
	w.Header().Set("Content-Type", "application/json")
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(e.status)
	w.Write(append(errorJSON(e.typ, e.code, e.msg, e.param), '\n'))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "internal_error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// decode reads a JSON body into v: 413 past the size limit, 400 if it is
// not JSON of the expected shape.
func decode(r *http.Request, v any) *apiError {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
				msg: fmt.Sprintf("the request body is larger than the server's limit of %d bytes", mbe.Limit)}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_type", param: te.Field,
				msg: fmt.Sprintf("field %q: a JSON %s where %s was expected", te.Field, te.Value, jsonKind(te.Type.Kind().String()))}
		}
		return badRequest("invalid_json", "the request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return badRequest("invalid_json", "the request body has data after the JSON object")
	}
	return nil
}

func jsonKind(k string) string {
	switch k {
	case "float32", "float64":
		return "a number"
	case "int", "int64", "int32":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return k
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
