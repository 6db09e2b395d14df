package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// samplingFields are the generation parameters both completion endpoints
// take: OpenAI's, and llama-server's top_k, min_p, repeat_penalty,
// ignore_eos and cache_prompt.
type samplingFields struct {
	Model               string          `json:"model"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	RepeatPenalty       *float64        `json:"repeat_penalty"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	N                   *int            `json:"n"`
	Logprobs            json.RawMessage `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	IgnoreEOS           bool            `json:"ignore_eos"`   // llama-server's: for benchmarks of a fixed length
	CachePrompt         *bool           `json:"cache_prompt"` // llama-server's: false prefills the whole prompt
	// LogitBias is OpenAI's: token id (a decimal string) → a bias in
	// [-100, 100] added to that token's logit before sampling (-100 in
	// effect bans it).
	LogitBias map[string]float64 `json:"logit_bias"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatRequest struct {
	samplingFields
	Messages           json.RawMessage            `json:"messages"`
	Tools              json.RawMessage            `json:"tools"`
	ResponseFormat     *struct{ Type string }     `json:"response_format"`
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
}

type completionRequest struct {
	samplingFields
	Prompt json.RawMessage `json:"prompt"`
	Echo   bool            `json:"echo"`
	Suffix *string         `json:"suffix"`
	BestOf *int            `json:"best_of"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// checkModel refuses a model name other than the one served.
func (s *Server) checkModel(name string) *apiError {
	if name == "" || name == s.cfg.ModelID {
		return nil
	}
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", param: "model",
		msg: fmt.Sprintf("the model %q does not exist: this server serves %q (GET /v1/models)", name, s.cfg.ModelID)}
}

func isNull(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

// params turns the request's fields into sampling parameters, a token
// limit and stop strings, refusing what is out of range or unsupported.
func (s *Server) params(f *samplingFields) (genRequest, *apiError) {
	var g genRequest
	if e := s.checkModel(f.Model); e != nil {
		return g, e
	}
	if f.N != nil && *f.N != 1 {
		return g, badRequest("unsupported_value", "n=%d: this server generates one choice per request (n=1); send %d requests", *f.N, *f.N)
	}
	if !isNull(f.Logprobs) && strings.TrimSpace(string(f.Logprobs)) != "false" {
		return g, badRequest("unsupported_parameter", "logprobs are not supported")
	}
	p := s.cfg.Defaults
	rng := func(name string, v *float64, lo, hi float64, dst *float32) *apiError {
		if v == nil {
			return nil
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			return badRequest("invalid_value", "%s=%v: must be between %v and %v", name, *v, lo, hi)
		}
		*dst = float32(*v)
		return nil
	}
	for _, c := range []struct {
		name   string
		v      *float64
		lo, hi float64
		dst    *float32
	}{
		{"temperature", f.Temperature, 0, 2, &p.Temperature},
		{"top_p", f.TopP, 0, 1, &p.TopP},
		{"min_p", f.MinP, 0, 1, &p.MinP},
		{"presence_penalty", f.PresencePenalty, -2, 2, &p.PresencePenalty},
		{"frequency_penalty", f.FrequencyPenalty, -2, 2, &p.FrequencyPenalty},
		{"repeat_penalty", f.RepeatPenalty, 0.01, 10, &p.RepeatPenalty},
	} {
		if e := rng(c.name, c.v, c.lo, c.hi, c.dst); e != nil {
			return g, e
		}
	}
	if f.TopK != nil {
		if *f.TopK < 0 {
			return g, badRequest("invalid_value", "top_k=%d: must be >= 0 (0: off)", *f.TopK)
		}
		p.TopK = *f.TopK
	}
	switch {
	case f.Seed != nil && *f.Seed != -1:
		p.Seed = uint64(*f.Seed)
	case s.cfg.RandomSeed || f.Seed != nil:
		p.Seed = rand.Uint64()
	}
	g.IgnoreEOS = f.IgnoreEOS
	g.NoCache = f.CachePrompt != nil && !*f.CachePrompt
	g.MaxTokens = -1
	if s.cfg.MaxTokens > 0 {
		g.MaxTokens = s.cfg.MaxTokens
	}
	for _, mt := range []struct {
		name string
		v    *int
	}{{"max_tokens", f.MaxTokens}, {"max_completion_tokens", f.MaxCompletionTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return g, badRequest("invalid_value", "%s=%d: must be at least 1", mt.name, *mt.v)
		}
		g.MaxTokens = *mt.v
	}
	if !isNull(f.Stop) {
		var one string
		if err := json.Unmarshal(f.Stop, &one); err == nil {
			g.Stop = []string{one}
		} else if err := json.Unmarshal(f.Stop, &g.Stop); err != nil {
			return g, badRequest("invalid_type", "stop: a string or an array of strings")
		}
		if len(g.Stop) > 16 {
			return g, badRequest("invalid_value", "stop: %d strings, at most 16", len(g.Stop))
		}
		kept := g.Stop[:0]
		for _, st := range g.Stop {
			if st != "" {
				kept = append(kept, st)
			}
		}
		g.Stop = kept
	}
	if len(f.LogitBias) > 0 {
		g.LogitBias = make([]tokenBias, 0, len(f.LogitBias))
		seen := make(map[int64]bool, len(f.LogitBias))
		for k, v := range f.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil || id < 0 || int(id) >= s.cfg.NVocab {
				return g, badRequest("invalid_value", "logit_bias: %q is not a token id (0..%d)", k, s.cfg.NVocab-1)
			}
			if seen[id] {
				return g, badRequest("invalid_value", "logit_bias: token %d given twice", id)
			}
			seen[id] = true
			if math.IsNaN(v) || v < -100 || v > 100 {
				return g, badRequest("invalid_value", "logit_bias[%s]=%v: must be between -100 and 100", k, v)
			}
			g.LogitBias = append(g.LogitBias, tokenBias{int32(id), float32(v)})
		}
	}
	if err := p.Validate(); err != nil {
		return g, badRequest("invalid_value", "%v", err)
	}
	g.Params = p
	return g, nil
}

// checkPrompt refuses a prompt the slot cannot hold with room for one
// generated token.
func (s *Server) checkPrompt(ids []int32) *apiError {
	n := s.cfg.Engine.SlotContext()
	if len(ids) == 0 {
		return badRequest("invalid_value", "the prompt is empty")
	}
	if len(ids) >= n {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "context_length_exceeded",
			msg: fmt.Sprintf("the prompt is %d tokens, but a slot's context holds %d positions: at most %d prompt tokens, leaving one to generate", len(ids), n, n-1)}
	}
	nv := int32(s.cfg.Tokenizer.NVocab())
	for i, id := range ids {
		if id < 0 || id >= nv {
			return badRequest("invalid_value", "prompt token %d: id %d is outside the vocabulary (0..%d)", i, id, nv-1)
		}
	}
	return nil
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := decode(r, &req); e != nil {
		writeAPIError(w, e)
		return
	}
	g, e := s.params(&req.samplingFields)
	if e != nil {
		writeAPIError(w, e)
		return
	}
	if req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text" {
		writeAPIError(w, badRequest("unsupported_parameter", "response_format %q is not supported (no constrained decoding yet): only \"text\"", req.ResponseFormat.Type))
		return
	}
	prompt, e := s.render(&req)
	if e != nil {
		writeAPIError(w, e)
		return
	}
	g.Prompt = s.cfg.Tokenizer.Encode(prompt, true, true)
	s.generate(w, r, g, req.Stream, req.StreamOptions, true)
}

// render applies the chat template to the request's messages.
func (s *Server) render(req *chatRequest) (string, *apiError) {
	if s.cfg.Template == nil {
		return "", badRequest("no_chat_template", "the model has no chat template: restart the server with --chat-template-file F.jinja or --chat-template chatml, or use /v1/completions")
	}
	if isNull(req.Messages) {
		return "", badRequest("missing_field", "messages: an array of {\"role\", \"content\"} objects is required")
	}
	o := s.cfg.TemplateOptions
	o.AddGenerationPrompt = true
	if !isNull(req.Tools) {
		o.Tools = req.Tools
	}
	if v, ok := req.ChatTemplateKwargs["enable_thinking"]; ok {
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return "", badRequest("invalid_type", "chat_template_kwargs.enable_thinking: true or false")
		}
		o.EnableThinking = &b
	}
	s.tmplMu.Lock()
	prompt, err := s.cfg.Template.Render(req.Messages, o)
	s.tmplMu.Unlock()
	if err != nil {
		return "", badRequest("invalid_messages", "%v", err)
	}
	return prompt, nil
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := decode(r, &req); e != nil {
		writeAPIError(w, e)
		return
	}
	g, e := s.params(&req.samplingFields)
	if e != nil {
		writeAPIError(w, e)
		return
	}
	switch {
	case req.Echo:
		writeAPIError(w, badRequest("unsupported_parameter", "echo is not supported"))
		return
	case req.Suffix != nil && *req.Suffix != "":
		writeAPIError(w, badRequest("unsupported_parameter", "suffix (fill-in-the-middle) is not supported"))
		return
	case req.BestOf != nil && *req.BestOf != 1:
		writeAPIError(w, badRequest("unsupported_value", "best_of=%d: only 1 is supported", *req.BestOf))
		return
	}
	ids, e := s.promptTokens(req.Prompt)
	if e != nil {
		writeAPIError(w, e)
		return
	}
	g.Prompt = ids
	s.generate(w, r, g, req.Stream, req.StreamOptions, false)
}

// promptTokens reads a completion prompt: a string, an array of one
// string, an array of token ids, or an array of one such array.
func (s *Server) promptTokens(raw json.RawMessage) ([]int32, *apiError) {
	if isNull(raw) {
		return nil, badRequest("missing_field", "prompt: a string (or an array of token ids) is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return s.cfg.Tokenizer.Encode(text, true, true), nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) != 1 {
			return nil, badRequest("unsupported_value", "prompt: %d prompts in one request; this server takes one", len(texts))
		}
		return s.cfg.Tokenizer.Encode(texts[0], true, true), nil
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil {
		return ids, nil
	}
	var batch [][]int32
	if json.Unmarshal(raw, &batch) == nil {
		if len(batch) != 1 {
			return nil, badRequest("unsupported_value", "prompt: %d prompts in one request; this server takes one", len(batch))
		}
		return batch[0], nil
	}
	return nil, badRequest("invalid_type", "prompt: a string, an array of one string, or an array of token ids")
}

// chunk types of the two endpoints.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatDelta   `json:"delta,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

type textChoice struct {
	Text         string    `json:"text"`
	Index        int       `json:"index"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type response struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices any    `json:"choices"`
	Usage   any    `json:"usage,omitempty"`
}

// generate runs g and answers as one JSON object or as an event stream.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, g genRequest, stream bool, so *streamOptions, isChat bool) {
	rw, _ := w.(*rec)
	if e := s.checkPrompt(g.Prompt); e != nil {
		writeAPIError(w, e)
		return
	}
	if s.draining.Load() {
		writeAPIError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "shutting_down", msg: "the server is shutting down: retry on another replica"})
		return
	}
	rc := http.NewResponseController(w)
	// The body is read: from here on the request is a generation, which
	// may outlast the server's read timeout (an expired read deadline
	// would cancel the request's context).
	rc.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	j, err := s.sched.submit(ctx, g)
	if err != nil {
		switch {
		case errors.Is(err, ErrQueueFull):
			s.metrics.rejects.Add(1)
			writeAPIError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "server_busy",
				msg: fmt.Sprintf("the server is busy: %d slots in use and %d requests queued; retry later", s.cfg.Engine.Slots(), max(s.cfg.Queue, 0))})
		case errors.Is(err, ErrClosed):
			writeAPIError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "shutting_down", msg: "the server is shutting down: retry on another replica"})
		default:
			writeAPIError(w, badRequest("invalid_value", "%v", err))
		}
		return
	}
	s.metrics.promptTokens.Add(int64(len(g.Prompt)))
	if rw != nil {
		rw.prompt, rw.stream = len(g.Prompt), stream
	}
	id, object, created := newID("cmpl-"), "text_completion", time.Now().Unix()
	if isChat {
		id, object = newID("chatcmpl-"), "chat.completion"
	}
	note := func(finish string, gen int) {
		if rw != nil {
			rw.finish, rw.gen = finish, gen
			j.mu.Lock()
			rw.ttft = j.ttft
			j.mu.Unlock()
		}
	}
	if !stream {
		var text strings.Builder
		for {
			if err := j.wait(ctx); err != nil {
				s.metrics.streamsCancelled.Add(1)
				if rw != nil {
					rw.cancelled = true
				}
				return
			}
			t, done := j.take()
			text.WriteString(t)
			if done {
				break
			}
		}
		finish, gen, err := j.result()
		note(finish, gen)
		if err != nil {
			s.writeJobError(w, err)
			return
		}
		// Invalid UTF-8 (a byte-level vocabulary can produce it) becomes
		// U+FFFD byte by byte in encoding/json, as in the stream's chunks.
		out := text.String()
		resp := response{ID: id, Object: object, Created: created, Model: s.cfg.ModelID,
			Usage: usage{len(g.Prompt), gen, len(g.Prompt) + gen}}
		if isChat {
			resp.Choices = []chatChoice{{Message: &chatMessage{Role: "assistant", Content: out}, FinishReason: &finish}}
		} else {
			resp.Choices = []textChoice{{Text: out, FinishReason: &finish}}
		}
		rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		writeJSON(w, http.StatusOK, resp)
		return
	}

	// Server-sent events: one chunk per piece of text, a last chunk with
	// the finish reason, the usage chunk if asked for, then [DONE].
	if isChat {
		object = "chat.completion.chunk"
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	includeUsage := so != nil && so.IncludeUsage
	write := func(format string, a ...any) bool {
		rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := fmt.Fprintf(w, format, a...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	send := func(payload []byte) bool { return write("data: %s\n\n", payload) }
	chunk := func(text string, finish *string, role bool) []byte {
		resp := response{ID: id, Object: object, Created: created, Model: s.cfg.ModelID}
		if includeUsage {
			resp.Usage = json.RawMessage("null")
		}
		if isChat {
			d := &chatDelta{}
			if role {
				d.Role = "assistant"
			}
			if finish == nil {
				d.Content = &text
			}
			resp.Choices = []chatChoice{{Delta: d, FinishReason: finish}}
		} else {
			resp.Choices = []textChoice{{Text: text, FinishReason: finish}}
		}
		b, _ := json.Marshal(resp)
		return b
	}
	gone := func() {
		cancel() // frees the slot at the scheduler's next step
		s.metrics.streamsCancelled.Add(1)
		if rw != nil {
			rw.cancelled = true
		}
	}
	if isChat && !send(chunk("", nil, true)) {
		gone()
		return
	}
	// The headers go out now, and an SSE comment every keepAlive while
	// nothing else does (queued, or a long prompt): proxies keep the
	// stream open and a client that left is noticed.
	if !write(": %s\n\n", id) {
		gone()
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var pending []byte // an unfinished UTF-8 character held for the next piece
	for {
		select {
		case <-j.notify:
		case <-ctx.Done():
			gone()
			return
		case <-tick.C:
			if !write(": keep-alive\n\n") {
				gone()
				return
			}
			continue
		}
		t, done := j.take()
		pending = append(pending, t...)
		if len(pending) > 0 {
			n := validPrefix(pending, done)
			if n > 0 {
				if !send(chunk(string(pending[:n]), nil, false)) {
					gone()
					return
				}
				pending = append(pending[:0], pending[n:]...)
			}
		}
		if done {
			break
		}
	}
	finish, gen, err := j.result()
	note(finish, gen)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			gone()
			return
		}
		// The status line has gone out: the error is the stream's last
		// event, without [DONE].
		_, typ, code, msg := jobError(err)
		send(errorJSON(typ, code, msg, ""))
		if rw != nil {
			rw.errMsg = msg
		}
		return
	}
	if !send(chunk("", &finish, false)) {
		return
	}
	if includeUsage {
		resp := response{ID: id, Object: object, Created: created, Model: s.cfg.ModelID, Choices: []any{},
			Usage: usage{len(g.Prompt), gen, len(g.Prompt) + gen}}
		b, _ := json.Marshal(resp)
		if !send(b) {
			return
		}
	}
	send([]byte("[DONE]"))
}

// keepAlive is the period of SSE comments on a stream that has nothing
// else to send.
var keepAlive = 15 * time.Second

// validPrefix is how much of b can be sent as text: all of it at the end,
// else up to an unfinished UTF-8 character at its end.
func validPrefix(b []byte, final bool) int {
	if final {
		return len(b)
	}
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return len(b)
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return len(b)
			}
			return len(b) - k
		}
	}
	return len(b)
}

// jobError maps a failed generation to a status and an OpenAI error.
func jobError(err error) (int, string, string, string) {
	if errors.Is(err, ErrClosed) {
		return http.StatusServiceUnavailable, "server_error", "shutting_down", "the server shut down before the generation finished: retry on another replica"
	}
	return http.StatusInternalServerError, "server_error", "internal_error", err.Error()
}

func (s *Server) writeJobError(w http.ResponseWriter, err error) {
	status, typ, code, msg := jobError(err)
	writeAPIError(w, &apiError{status: status, typ: typ, code: code, msg: msg})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelObject()}})
}

func (s *Server) modelObject() map[string]any {
	return map[string]any{"id": s.cfg.ModelID, "object": "model", "created": s.created, "owned_by": "minfer",
		"meta": map[string]any{"n_vocab": s.cfg.NVocab, "slots": s.cfg.Engine.Slots(), "n_ctx_slot": s.cfg.Engine.SlotContext()}}
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/v1/models/")
	if name == "" {
		writeAPIError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", msg: "no model id after /v1/models/"})
		return
	}
	if e := s.checkModel(name); e != nil {
		writeAPIError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject())
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	busy := s.sched.busy()
	body := map[string]any{"status": "ok", "slots_idle": s.cfg.Engine.Slots() - busy, "slots_processing": busy,
		"queue_depth": s.metrics.queued.Load()}
	switch err := s.sched.health(); {
	case s.draining.Load():
		body["status"] = "shutting down"
		writeJSON(w, http.StatusServiceUnavailable, body)
	case err != nil:
		body["status"], body["error"] = "error", err.Error()
		writeJSON(w, http.StatusServiceUnavailable, body)
	default:
		writeJSON(w, http.StatusOK, body)
	}
}

func (s *Server) metricsz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.metrics.write(w)
}

func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := decode(r, &req); e != nil {
		writeAPIError(w, e)
		return
	}
	prompt, e := s.render(&req)
	if e != nil {
		writeAPIError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": prompt})
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial *bool   `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}
	if e := decode(r, &req); e != nil {
		writeAPIError(w, e)
		return
	}
	if req.Content == nil {
		writeAPIError(w, badRequest("missing_field", "content: the text to tokenize is required"))
		return
	}
	parse := req.ParseSpecial == nil || *req.ParseSpecial
	ids := s.cfg.Tokenizer.Encode(*req.Content, req.AddSpecial, parse)
	if !req.WithPieces {
		if ids == nil {
			ids = []int32{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	type piece struct {
		ID    int32 `json:"id"`
		Piece any   `json:"piece"`
	}
	out := make([]piece, len(ids))
	for i, id := range ids {
		p := s.cfg.Tokenizer.Piece(id, true)
		if utf8.ValidString(p) {
			out[i] = piece{id, p}
		} else {
			b := make([]int, len(p))
			for k := range b {
				b[k] = int(p[k])
			}
			out[i] = piece{id, b}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int32 `json:"tokens"`
	}
	if e := decode(r, &req); e != nil {
		writeAPIError(w, e)
		return
	}
	nv := int32(s.cfg.Tokenizer.NVocab())
	var b strings.Builder
	for i, id := range req.Tokens {
		if id < 0 || id >= nv {
			writeAPIError(w, badRequest("invalid_value", "tokens[%d]: id %d is outside the vocabulary (0..%d)", i, id, nv-1))
			return
		}
		b.WriteString(s.cfg.Tokenizer.Piece(id, true))
	}
	writeJSON(w, http.StatusOK, map[string]string{"content": b.String()})
}
