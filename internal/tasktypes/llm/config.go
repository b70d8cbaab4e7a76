package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// Defaults of settings.
const (
	DefaultBaseURL = "https://openrouter.ai/api/v1"
	DefaultModel   = "meta-llama/llama-3.2-90b-text-preview"
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes bounds how much of a response body is read.
	DefaultMaxResponseBytes = 4 << 20
)

// Environment variable names (the original).
const (
	EnvAPIKey  = "OPENROUTER_API_KEY"
	EnvBaseURL = "OPENROUTER_BASE_URL"
	EnvModel   = "OPENROUTER_MODEL"
	EnvTimeout = "OPENROUTER_TIMEOUT"
)

// Config configures a Client. The zero value plus an APIKey is usable after
// WithDefaults.
type Config struct {
	// APIKey is sent as a bearer token. It never appears in logs or error
	// strings (String redacts it). Required by Validate.
	APIKey string
	// BaseURL is the API root; the client POSTs to BaseURL + "/chat/completions".
	// Default DefaultBaseURL (https://openrouter.ai/api/v1).
	BaseURL string
	// Model is the model id sent with each request. Default DefaultModel.
	Model string
	// Timeout bounds one call, from sending the request to reading the whole
	// response. Default DefaultTimeout (30 s).
	Timeout time.Duration
	// MaxResponseBytes bounds the response body read. Default 4 MiB.
	MaxResponseBytes int64
	// Referer and Title are OpenRouter's optional attribution headers
	// (HTTP-Referer, X-Title). Default empty: not sent.
	Referer string
	Title   string
	// Now is the clock used to read an HTTP-date Retry-After. Default time.Now.
	Now func() time.Time
}

// ErrNoAPIKey is returned by Validate when no API key is configured.
var ErrNoAPIKey = errors.New("llm: no API key (set " + EnvAPIKey + ")")

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate says in words what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	if strings.TrimSpace(c.APIKey) == "" {
		return ErrNoAPIKey
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("llm: %s %q is not an http(s) URL", EnvBaseURL, c.BaseURL)
	}
	if u.User != nil {
		return fmt.Errorf("llm: %s must not carry credentials", EnvBaseURL)
	}
	if strings.TrimSpace(c.Model) == "" {
		return fmt.Errorf("llm: %s is empty", EnvModel)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("llm: %s %s is negative", EnvTimeout, c.Timeout)
	}
	if c.MaxResponseBytes < 0 {
		return fmt.Errorf("llm: MaxResponseBytes %d is negative", c.MaxResponseBytes)
	}
	return nil
}

// String describes c without the API key.
func (c Config) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("llm.Config{BaseURL:%s Model:%s Timeout:%s APIKey:%s}", c.BaseURL, c.Model, c.Timeout, key)
}

// GoString keeps %#v from printing the API key.
func (c Config) GoString() string { return c.String() }

// LogValue keeps log/slog from printing the API key.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }
