// Package openai implements policy.Policy against any OpenAI-compatible
// /v1/chat/completions server (vLLM, SGLang, Ollama, llama.cpp server,
// OpenAI) with net/http and encoding/json only.
//
// The client speaks the protocol strictly (tool-call arguments as JSON
// strings, every tool call answered) and reads answers leniently (arguments
// as objects, missing ids, null content, odd finish reasons, missing usage).
// Failures are mapped to the policy error classes; transient ones are
// retried with jittered exponential back-off, and 429s also lower the number
// of requests in flight through an adaptive Limiter.
//
// Arguments that are not a valid JSON object are recorded verbatim with an
// ArgsError and sent back on the next turn as {"_raw": "<the text>"}, since
// some servers (vLLM's chat-template preprocessing among them) decode the
// strings themselves and would answer 400 to invalid JSON.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/secret"
)

// Defaults for the zero values of Config.
const (
	DefaultTimeout       = 5 * time.Minute // generation under load is slow
	DefaultMaxRetries    = 5
	DefaultConcurrency   = 64
	DefaultBackoffBase   = 500 * time.Millisecond
	DefaultBackoffMax    = 30 * time.Second
	DefaultMaxRetryAfter = 2 * time.Minute
	DefaultKeyEnv        = "OPENAI_API_KEY"
	DefaultReadyWait     = 10 * time.Minute // a large model loads in minutes
	DefaultReadyPoll     = 2 * time.Second
)

// TokenParam names the request field that carries the per-turn token limit.
type TokenParam int

const (
	// TokenAuto sends max_tokens until the endpoint refuses it as an
	// unsupported parameter (OpenAI's reasoning models), then
	// max_completion_tokens for the rest of the client's life.
	TokenAuto TokenParam = iota
	// TokenMaxTokens always sends max_tokens.
	TokenMaxTokens
	// TokenMaxCompletionTokens always sends max_completion_tokens.
	TokenMaxCompletionTokens
)

func (p TokenParam) String() string {
	switch p {
	case TokenMaxTokens:
		return "max_tokens"
	case TokenMaxCompletionTokens:
		return "max_completion_tokens"
	}
	return "auto"
}

// ParseTokenParam reads "auto", "max_tokens" or "max_completion_tokens".
func ParseTokenParam(v string) (TokenParam, error) {
	switch v {
	case "", "auto":
		return TokenAuto, nil
	case "max_tokens":
		return TokenMaxTokens, nil
	case "max_completion_tokens":
		return TokenMaxCompletionTokens, nil
	}
	return TokenAuto, fmt.Errorf("invalid token parameter %q: want auto, max_tokens or max_completion_tokens", v)
}

// maxResponseBytes bounds a response body; no sane completion comes close.
const maxResponseBytes = 32 << 20

// Config describes one endpoint and model. Zero values select the defaults
// above. Printing a Config (any verb) or marshalling it to JSON never shows
// the API key.
type Config struct {
	// BaseURL is used exactly as given, usually ending in /v1
	// (http://host:8000/v1); "/chat/completions" is appended to its path.
	BaseURL string
	// Model is the "model" field of every request.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>" when non-empty. Read it
	// from the environment with KeyFromEnv; never from a file or a flag.
	APIKey string `json:"-"`
	// Timeout bounds one HTTP attempt, not the retries around it.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt for
	// transient failures (5xx, 408, 409, 429, timeouts, connection errors).
	// 0 selects DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// HTTPClient, when set, is used instead of a client tuned for many
	// concurrent requests to one host. Its Timeout should be zero or larger
	// than Timeout.
	HTTPClient *http.Client
	// Concurrency is the maximum number of requests in flight (typically the
	// run's --concurrency); the limiter starts there and backs off on 429.
	Concurrency int
	// Limiter, when set, is used instead of a new one of size Concurrency;
	// share one between clients that hit the same server.
	Limiter *Limiter
	// BackoffBase and BackoffMax shape the jittered exponential back-off
	// between retries: the n-th retry waits about BackoffBase·2ⁿ, at most
	// BackoffMax.
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter is the longest Retry-After the client honours; a server
	// asking for more ends the request as an infrastructure error (to be
	// retried when the run resumes) instead of stalling the episode.
	MaxRetryAfter time.Duration
	// EmptyContent says how assistant messages with tool calls and no text
	// are sent (default ContentOmit).
	EmptyContent EmptyContent
	// TokenParam says which field carries the per-turn token limit.
	TokenParam TokenParam
	// ReadyWait bounds how long a request waits for a server that answers
	// 503 "Loading model" to become ready (polling /health, then
	// /v1/models); the wait does not use up retries. 0 selects
	// DefaultReadyWait; a negative value disables waiting.
	ReadyWait time.Duration
	// ReadyPoll is the interval between readiness polls (default
	// DefaultReadyPoll).
	ReadyPoll time.Duration
}

// String describes the config without the API key.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{BaseURL:%q Model:%q APIKey:%s Timeout:%s MaxRetries:%d Concurrency:%d}",
		secret.URL(c.BaseURL), c.Model, keyState(c.APIKey), c.Timeout, c.MaxRetries, c.Concurrency)
}

// Format makes every fmt verb (%v, %+v, %#v, %s, %d, ...) print String, so
// that no formatting of a Config can reveal the key.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

func keyState(key string) string {
	if key == "" {
		return "unset"
	}
	return "set"
}

// KeyFromEnv returns the API key held by the environment variable varName
// (DefaultKeyEnv when varName is empty), without surrounding whitespace, or
// "" when it is unset. Servers such as vLLM and Ollama need no key.
func KeyFromEnv(varName string) string {
	if varName == "" {
		varName = DefaultKeyEnv
	}
	return strings.TrimSpace(os.Getenv(varName))
}

// Stats are the client's counters, for progress displays.
type Stats struct {
	Requests    int64 // HTTP attempts sent
	Retries     int64 // attempts that were retries, whatever the cause
	RateLimited int64 // 429 answers (quota exhaustion excluded)
	Limit       int   // requests currently admitted at a time
	MaxLimit    int   // the limit the limiter grows back to
	InFlight    int   // requests in flight now
}

// Client is a policy.Policy backed by an OpenAI-compatible server. It is
// safe for concurrent use.
type Client struct {
	tools         toolCache
	endpoint      string
	model         string
	key           string
	redact        redactor
	timeout       time.Duration
	maxRetries    int
	backoffBase   time.Duration
	backoffMax    time.Duration
	maxRetryAfter time.Duration
	emptyContent  EmptyContent
	http          *http.Client
	limiter       *Limiter
	base          string // the base URL, as parsed
	tokenParam    TokenParam
	readyWait     time.Duration
	readyPoll     time.Duration

	// completionTokens: send max_completion_tokens (set by TokenParam, or
	// learnt from the endpoint's refusal of max_tokens).
	completionTokens atomic.Bool
	// readyMu serialises readiness waits: one request polls, the others
	// find the server ready when they get the lock.
	readyMu   sync.Mutex
	readyTime time.Time
	// numCtx: the context an Ollama server gives the model (Learn).
	numCtx atomic.Int64
	// noToolChoice: the endpoint refused tool_choice; requests go without it.
	noToolChoice atomic.Bool

	requests, retries, rateLimited atomic.Int64

	// Seams for tests: waiting and the clock.
	sleep func(context.Context, time.Duration) error
	now   func() time.Time
}

var _ policy.Policy = (*Client)(nil)

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" {
		return nil, errors.New("openai: config: base URL is empty")
	}
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: config: base URL %q is not an http(s) URL such as http://localhost:8000/v1", redactor(cfg.APIKey).apply(secret.URL(cfg.BaseURL)))
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: config: model is empty")
	}
	endpoint := *u
	endpoint.Path = strings.TrimRight(u.Path, "/") + "/chat/completions"
	endpoint.RawPath = ""

	c := &Client{
		endpoint:      endpoint.String(),
		model:         cfg.Model,
		key:           cfg.APIKey,
		redact:        redactor(cfg.APIKey),
		timeout:       orDefault(cfg.Timeout, DefaultTimeout),
		backoffBase:   orDefault(cfg.BackoffBase, DefaultBackoffBase),
		backoffMax:    orDefault(cfg.BackoffMax, DefaultBackoffMax),
		maxRetryAfter: orDefault(cfg.MaxRetryAfter, DefaultMaxRetryAfter),
		emptyContent:  cfg.EmptyContent,
		base:          strings.TrimRight(u.String(), "/"),
		tokenParam:    cfg.TokenParam,
		readyWait:     cfg.ReadyWait,
		readyPoll:     orDefault(cfg.ReadyPoll, DefaultReadyPoll),
		http:          cfg.HTTPClient,
		limiter:       cfg.Limiter,
		sleep:         sleepCtx,
		now:           time.Now,
	}
	c.backoffMax = max(c.backoffMax, c.backoffBase)
	if c.readyWait == 0 {
		c.readyWait = DefaultReadyWait
	}
	c.completionTokens.Store(cfg.TokenParam == TokenMaxCompletionTokens)
	switch {
	case cfg.MaxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case cfg.MaxRetries > 0:
		c.maxRetries = cfg.MaxRetries
	}
	concurrency := cfg.Concurrency
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	if c.limiter == nil {
		c.limiter = NewLimiter(concurrency, 0)
	}
	if c.http == nil {
		c.http = &http.Client{Transport: newTransport(c.limiter.Max())}
	}
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// newTransport keeps enough idle connections for the whole concurrency:
// net/http's default of 2 per host would open and close a connection for
// almost every request of a large run and exhaust ephemeral ports.
func newTransport(conns int) http.RoundTripper {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		base = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	t := base.Clone()
	t.MaxIdleConnsPerHost = conns
	t.MaxIdleConns = max(t.MaxIdleConns, conns)
	return t
}

// String describes the client without the API key.
func (c *Client) String() string {
	return fmt.Sprintf("openai.Client{endpoint:%q model:%q api_key:%s}", secret.URL(c.endpoint), c.model, keyState(c.key))
}

// Format makes every fmt verb print String, so that no formatting of a
// Client can reveal the key.
func (c *Client) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// Limiter returns the client's concurrency limiter.
func (c *Client) Limiter() *Limiter { return c.limiter }

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{
		Requests:    c.requests.Load(),
		Retries:     c.retries.Load(),
		RateLimited: c.rateLimited.Load(),
		Limit:       c.limiter.Limit(),
		MaxLimit:    c.limiter.Max(),
		InFlight:    c.limiter.InFlight(),
	}
}

// failure is one failed attempt and what to do about it.
type failure struct {
	err      *Error
	retry    bool
	once     bool          // retry at most once
	loading  bool          // wait for readiness, then retry
	tokens   bool          // resend with max_completion_tokens
	choice   bool          // resend without tool_choice
	sig      string        // status and body, to tell identical repeats
	wait     time.Duration // the server's Retry-After, when hasWait
	hasWait  bool
	canceled bool // the caller's context ended: stop at once
}

// Complete sends req and returns the model's next assistant message. Errors
// are *Error values whose Class is one of the policy error classes.
//
// Beyond the bounded retries with back-off: a 503 "Loading model" waits for
// the server's readiness without using up retries; a refusal of max_tokens
// switches to max_completion_tokens (TokenAuto) and resends at once; a 5xx
// naming a parse or template failure, or a 500 that repeats identically for
// the same request, is a model error after one retry.
func (c *Client) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	encode := func() ([]byte, error) {
		r := req
		if c.noToolChoice.Load() {
			r.ToolChoice = "" // the endpoint refused it; with tools, "auto" is the default
		}
		return encodeRequest(c.model, r, c.emptyContent, &c.tools, c.completionTokens.Load())
	}
	body, err := encode()
	if err != nil {
		return policy.Response{}, &Error{Class: policy.ErrModel, Message: "encode request: " + c.redact.apply(err.Error())}
	}
	seed := newIDSeed(req)
	prevSig := ""
	waits, switched, unchose := 0, false, false
	for attempt := 1; ; attempt++ {
		resp, f := c.attempt(ctx, body, seed)
		if f == nil {
			readFinalAnswerCall(&resp, req.Tools)
			c.noteContextCut(&resp, len(body))
			return resp, nil
		}
		f.err.Attempts = attempt
		if f.canceled {
			return policy.Response{}, f.err
		}
		if f.tokens && c.tokenParam == TokenAuto && !switched && req.MaxTokens > 0 {
			// OpenAI's reasoning models: "Unsupported parameter: 'max_tokens'
			// ... Use 'max_completion_tokens' instead."
			switched = true
			c.completionTokens.Store(true)
			if body, err = encode(); err != nil {
				return policy.Response{}, &Error{Class: policy.ErrModel, Message: "encode request: " + c.redact.apply(err.Error())}
			}
			attempt--
			continue
		}
		if f.choice && !unchose && req.ToolChoice != "" {
			// "Unsupported parameter: 'tool_choice'": a gateway or model
			// that takes tools but not the choice. Without it the server
			// chooses as "auto" would; learnt once for the run.
			unchose = true
			c.noToolChoice.Store(true)
			if body, err = encode(); err != nil {
				return policy.Response{}, &Error{Class: policy.ErrModel, Message: "encode request: " + c.redact.apply(err.Error())}
			}
			attempt--
			continue
		}
		if f.loading && c.readyWait > 0 && waits < 3 {
			waits++
			if err := c.waitReady(ctx, f.err); err != nil {
				return policy.Response{}, err
			}
			attempt--
			continue
		}
		if f.sig != "" && f.sig == prevSig {
			// The same 500 for the same request twice: the request, not the
			// server's health, is the cause. Retrying it forever (or on
			// every resume) cannot help.
			f.err.Class = policy.ErrModel
			f.err.Message += "; the same error repeated for the same request, so it is recorded as a model error"
			return policy.Response{}, f.err
		}
		prevSig = f.sig
		if !f.retry || attempt > c.maxRetries || (f.once && attempt >= 2) {
			return policy.Response{}, f.err
		}
		wait := backoff(attempt-1, c.backoffBase, c.backoffMax)
		if f.hasWait {
			if f.wait > c.maxRetryAfter {
				f.err.Message += fmt.Sprintf("; server asked to retry after %s, more than the %s allowed", f.wait, c.maxRetryAfter)
				return policy.Response{}, f.err
			}
			if f.wait > 0 {
				wait = f.wait
			}
		}
		if err := c.sleep(ctx, wait); err != nil {
			e := c.canceled(ctx, err)
			e.Attempts = attempt
			return policy.Response{}, e
		}
		c.retries.Add(1)
	}
}

// Learn applies what the endpoint check found: with TokenAuto, the token
// parameter the endpoint takes (so that no request is refused to learn it
// again), and the context an Ollama server gives the model (num_ctx), for
// telling when it cut a conversation.
func (c *Client) Learn(rep Report) {
	if c.tokenParam == TokenAuto && rep.TokenParam == TokenMaxCompletionTokens.String() {
		c.completionTokens.Store(true)
	}
	if rep.NumCtx > 0 {
		c.numCtx.Store(int64(rep.NumCtx))
	}
}

// Learned is what the client learnt from an endpoint check (Learn) or
// from a refused request: the token parameter it sends when that is
// max_completion_tokens, and an Ollama server's num_ctx. A work-queue
// coordinator hands it to the workers, whose clients run no check.
func (c *Client) Learned() Report {
	var r Report
	if c.completionTokens.Load() && c.tokenParam == TokenAuto {
		r.TokenParam = TokenMaxCompletionTokens.String()
	}
	r.NumCtx = int(c.numCtx.Load())
	return r
}

// LearnNumCtx asks the server for an Ollama model's num_ctx (POST
// /api/show) when the client does not know it yet; other servers answer
// 404 and nothing is learnt. Workers of a queued run call it, since they
// run no endpoint check.
func (c *Client) LearnNumCtx(ctx context.Context) {
	if c.numCtx.Load() > 0 {
		return
	}
	var rep Report
	c.readNumCtx(ctx, &rep)
	if rep.NumCtx > 0 {
		c.numCtx.Store(int64(rep.NumCtx))
	}
}

// TokenParamInUse is the token parameter the client sends now: the
// configured one, or max_completion_tokens once learnt (TokenAuto).
func (c *Client) TokenParamInUse() TokenParam {
	if c.completionTokens.Load() {
		return TokenMaxCompletionTokens
	}
	if c.tokenParam == TokenAuto {
		return TokenAuto
	}
	return TokenMaxTokens
}

// noteContextCut flags an answer to a request larger than the server's
// num_ctx (Ollama, about four bytes a token), whose reported prompt fits
// in num_ctx: the server dropped the oldest messages, the task first
// (Ollama server/prompt.go chatPrompt), even on the first turn where no
// fall in prompt tokens can show it.
func (c *Client) noteContextCut(resp *policy.Response, bodyBytes int) {
	n := int(c.numCtx.Load())
	if n <= 0 {
		return
	}
	est := bodyBytes / 4
	if p := resp.Usage.PromptTokens; est > n && p > 0 && p <= n {
		resp.ContextCut = fmt.Sprintf("the request was about %d tokens but the server's num_ctx is %d and it read %d prompt tokens: Ollama dropped the oldest messages (raise num_ctx)", est, n, p)
	}
}

// readFinalAnswerCall reads TGI's final-answer pseudo-call as the text it
// is: before TGI 2.4 (PR #2597), tool_choice "auto" was a grammar over the
// offered tools plus one named notify_error (router/src/infer/
// tool_grammar.rs), so a model answering in text came back as a call to
// notify_error with the text in its "error" argument; later versions named
// it no_tool ("content"). A call to a tool the request did offer is left
// alone.
func readFinalAnswerCall(resp *policy.Response, offered []policy.Tool) {
	calls := resp.Message.ToolCalls
	if len(calls) != 1 {
		return
	}
	name := calls[0].Function.Name
	if name != "notify_error" && name != "no_tool" {
		return
	}
	for _, t := range offered {
		if t.Name == name {
			return
		}
	}
	var args map[string]any
	_ = json.Unmarshal(calls[0].Function.Parsed, &args)
	text := ""
	for _, k := range []string{"error", "content"} {
		if s, ok := args[k].(string); ok && s != "" {
			text = s
			break
		}
	}
	if text == "" && resp.Message.Content == "" {
		return // nothing to read: left as the call it is
	}
	if resp.Message.Content == "" {
		resp.Message.Content = text
	}
	resp.Message.ToolCalls = nil
	resp.FinalAnswerCall = name
	if resp.FinishReason == policy.FinishToolCalls {
		resp.FinishReason = policy.FinishStop
	}
}

// isGenericTransient: wordings by which servers say "try again" (OpenAI's
// "The server had an error while processing your request"), which repeat
// identically during an outage and must stay retryable.
func isGenericTransient(e apiError) bool {
	m := strings.ToLower(strings.TrimSpace(e.Message))
	if m == "" || m == "internal server error" {
		return true
	}
	for _, p := range []string{"had an error while processing", "overloaded", "try again", "temporarily", "unavailable"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// waitReady polls the server's readiness after a 503 "Loading model":
// GET /health beside the API root (llama.cpp answers 503 there until the
// model is loaded; vLLM and SGLang answer 200), else GET {base}/models. It
// returns nil when the server is ready, or an infrastructure error after
// ReadyWait.
func (c *Client) waitReady(ctx context.Context, cause *Error) error {
	asked := c.now()
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	if c.readyTime.After(asked) {
		return nil // another request saw the server ready meanwhile
	}
	deadline := asked.Add(c.readyWait)
	for {
		if c.ready(ctx) {
			c.readyTime = c.now()
			return nil
		}
		if !c.now().Before(deadline) {
			e := *cause
			e.Message += fmt.Sprintf("; the server was still not ready after %s (raise --ready-timeout for large models)", c.readyWait)
			return &e
		}
		if err := c.sleep(ctx, c.readyPoll); err != nil {
			return c.canceled(ctx, err)
		}
	}
}

// ready asks the readiness endpoints once.
func (c *Client) ready(ctx context.Context) bool {
	for _, u := range readinessURLs(c.base) {
		status, _, err := c.get(ctx, u)
		if err != nil {
			continue
		}
		if status == http.StatusOK {
			return true
		}
		if status == http.StatusServiceUnavailable {
			return false
		}
	}
	return false
}

// readinessURLs: /health at the server root (base without its /v1), then
// the models list.
func readinessURLs(base string) []string {
	u, err := url.Parse(base)
	if err != nil {
		return nil
	}
	root := *u
	root.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + "/health"
	root.RawPath = ""
	models := *u
	models.Path = strings.TrimRight(u.Path, "/") + "/models"
	models.RawPath = ""
	return []string{root.String(), models.String()}
}

// get makes one GET with the client's key and timeout, outside the limiter.
func (c *Client) get(ctx context.Context, u string) (int, []byte, error) {
	status, data, _, err := c.getHeader(ctx, u)
	return status, data, err
}

// getHeader is get with the answer's headers.
func (c *Client) getHeader(ctx context.Context, u string) (int, []byte, http.Header, error) {
	actx, cancel := context.WithTimeout(ctx, min(c.timeout, 30*time.Second))
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	if c.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.key)
	}
	hresp, err := c.http.Do(hreq)
	if err != nil {
		return 0, nil, nil, err
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, 1<<20))
	return hresp.StatusCode, data, hresp.Header, err
}

// canceled is the error for a caller that gave up. It is an infrastructure
// error, so that an interrupted episode is retried when the run resumes,
// and it also matches context.Canceled or context.DeadlineExceeded.
func (c *Client) canceled(ctx context.Context, err error) *Error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return &Error{Class: policy.ErrInfra, Message: "request abandoned: " + err.Error(), cause: err}
}

// attempt makes one HTTP request inside the limiter.
func (c *Client) attempt(ctx context.Context, body []byte, seed idSeed) (policy.Response, *failure) {
	if err := c.limiter.Acquire(ctx); err != nil {
		return policy.Response{}, &failure{err: c.canceled(ctx, err), canceled: true}
	}
	defer c.limiter.Release()
	c.requests.Add(1)

	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return policy.Response{}, &failure{err: &Error{Class: policy.ErrFatal, Message: "build request: " + c.redact.apply(err.Error())}}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.key)
	}

	hresp, err := c.http.Do(hreq)
	if err != nil {
		return policy.Response{}, c.transportFailure(ctx, actx, err)
	}
	data, err := io.ReadAll(io.LimitReader(hresp.Body, maxResponseBytes+1))
	hresp.Body.Close()
	if err != nil {
		return policy.Response{}, c.transportFailure(ctx, actx, err)
	}
	status := hresp.StatusCode
	if len(data) > maxResponseBytes {
		// No completion a model can write comes near the cap: this is a
		// proxy or server fault, not the model's answer. The episode got no
		// model answer, so it is an infrastructure error (kept in errors/
		// and retried on resume), not retried within the request.
		return policy.Response{}, &failure{err: &Error{Class: policy.ErrInfra, StatusCode: status,
			Message: fmt.Sprintf("response larger than %d bytes: not a completion (check proxies between antidrift and the server)", maxResponseBytes)}}
	}

	if status >= 200 && status < 300 {
		resp, err := decodeResponse(data, seed)
		if err == nil {
			c.limiter.Succeeded()
			if resp.FinishReason == policy.FinishError {
				// An answer cut by a server or provider error: half an
				// answer, or half a call. Asked again once; twice cut, it
				// is the model's error for this episode, never a final
				// answer or a call to run.
				return policy.Response{}, &failure{err: &Error{Class: policy.ErrModel, StatusCode: status,
					Message: "the server ended the answer with finish_reason \"error\" (cut by a server or provider error)"}, retry: true, once: true}
			}
			return resp, nil
		}
		return policy.Response{}, c.badSuccess(status, data, err)
	}

	apiErr := parseAPIError(data)
	v := classify(status, apiErr)
	if v.throttled {
		c.rateLimited.Add(1)
		c.limiter.Throttled()
	}
	f := &failure{err: c.serverError(v, status, apiErr), retry: v.retry, once: v.once, loading: v.loading, tokens: v.tokens, choice: v.choice}
	if status == http.StatusInternalServerError && len(bytes.TrimSpace(data)) > 0 && !isGenericTransient(apiErr) {
		f.sig = string(data)
	}
	if v.retry {
		f.wait, f.hasWait = retryAfter(hresp.Header, c.now())
	}
	return policy.Response{}, f
}

func (c *Client) serverError(v verdict, status int, e apiError) *Error {
	msg := e.Message
	if v.hint != "" {
		msg = v.hint + ": " + msg
	}
	return &Error{
		Class:      v.class,
		StatusCode: status,
		Type:       c.redact.apply(clip(e.Type)),
		Code:       c.redact.apply(clip(e.Code)),
		Message:    c.redact.apply(strings.TrimSuffix(msg, ": ")),
	}
}

// badSuccess handles a 2xx answer that is not a usable completion.
func (c *Client) badSuccess(status int, data []byte, err error) *failure {
	switch {
	case errors.Is(err, errNoChoices):
		var withErr struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &withErr) == nil && len(withErr.Error) > 0 && string(withErr.Error) != "null" {
			// Some gateways answer 200 with an error object: judge it by
			// the HTTP status its code names, else as a 400.
			apiErr := parseAPIError(data)
			s, ok := parseStatus(apiErr.Code)
			if !ok {
				s = http.StatusBadRequest
			}
			v := classify(s, apiErr)
			return &failure{err: c.serverError(v, status, apiErr), retry: v.retry}
		}
		// A 200 with "choices": [] and no error: the server produced no
		// completion (an aborted request, an overloaded gateway). The model
		// never answered, so it is an infrastructure failure, retried.
		return &failure{err: &Error{Class: policy.ErrInfra, StatusCode: status, Message: err.Error() + " (200 with an empty choices list)"}, retry: true}
	case errors.Is(err, errFiltered):
		// A content filter's verdict on this prompt: the same every time.
		return &failure{err: &Error{Class: policy.ErrModel, StatusCode: status, Message: err.Error()}}
	case errors.Is(err, errBadMessage):
		// The model answered, but not in a shape we can record.
		return &failure{err: &Error{Class: policy.ErrModel, StatusCode: status, Message: c.redact.apply(err.Error())}}
	}
	// Not JSON at all: a proxy's page or a truncated body. Transient.
	return &failure{err: &Error{Class: policy.ErrInfra, StatusCode: status,
		Message: c.redact.apply(err.Error() + ": " + clip(string(data)))}, retry: true}
}

// parseStatus reads an error code such as "429" or 503 as an HTTP status.
func parseStatus(code string) (int, bool) {
	n, err := strconv.Atoi(code)
	if err != nil || n < 400 || n > 599 {
		return 0, false
	}
	return n, true
}

// transportFailure classifies an error from sending or reading: the
// caller's cancellation stops at once, a timeout or a connection error is
// retried.
func (c *Client) transportFailure(ctx, actx context.Context, err error) *failure {
	if ctx.Err() != nil {
		return &failure{err: c.canceled(ctx, err), canceled: true}
	}
	msg := "connection error: " + strings.ReplaceAll(c.redact.apply(err.Error()), c.endpoint, secret.URL(c.endpoint))
	if actx.Err() != nil {
		// The server did not answer within one attempt's limit: a retry
		// asks it the same again, so a server that is merely slow needs a
		// longer limit, not more retries.
		msg = fmt.Sprintf("request timed out after %s (--request-timeout): a server slower than that for one completion (a long generation, a busy queue) needs a larger --request-timeout; one that never answers needs checking", c.timeout)
		err = actx.Err()
	}
	return &failure{err: &Error{Class: policy.ErrInfra, Message: msg, cause: err}, retry: true}
}
