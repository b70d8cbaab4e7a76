package llmfake

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind is how the fake answers one request.
type Kind string

// The outcomes the fake can produce. The HTTP kinds are named by status.
const (
	OK             Kind = "ok"
	BadRequest     Kind = "400"
	Unauthorized   Kind = "401"
	Forbidden      Kind = "403"
	NotFound       Kind = "404"
	RateLimited    Kind = "429"
	ServerError    Kind = "500"
	BadGateway     Kind = "502"
	Unavailable    Kind = "503"
	GatewayTimeout Kind = "504"
	// Hang answers nothing until the client gives up (or the fake is closed).
	Hang Kind = "hang"
	// Malformed answers 200 with a body that is not chat-completions JSON.
	Malformed Kind = "malformed"
)

// Kinds lists every kind, in a stable order.
var Kinds = []Kind{OK, BadRequest, Unauthorized, Forbidden, NotFound, RateLimited, ServerError, BadGateway, Unavailable, GatewayTimeout, Hang, Malformed}

// ParseKind accepts a kind's name ("ok", "429", "hang", ...).
func ParseKind(s string) (Kind, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("llmfake: unknown outcome %q (want one of %v)", s, Kinds)
}

// Status is the HTTP status of k (0 for Hang).
func (k Kind) Status() int {
	switch k {
	case OK, Malformed:
		return 200
	case Hang:
		return 0
	}
	n, _ := strconv.Atoi(string(k))
	return n
}

// Outcome is one scripted answer.
type Outcome struct {
	Kind Kind
	// RetryAfter is sent as a Retry-After header in whole seconds (rounded
	// up) when > 0; meaningful for 429 and 503.
	RetryAfter time.Duration
	// Delay is waited before answering (bounded by the request's context).
	Delay time.Duration
}

// Weighted is one entry of a ratio: Kind chosen with probability
// Weight / sum of weights.
type Weighted struct {
	Outcome
	Weight float64
}

// ParseRatio reads "ok=0.8,429=0.1,503=0.1" (weights need not sum to 1).
// A 429 entry may carry a Retry-After in seconds: "429:2=0.1".
func ParseRatio(s string) ([]Weighted, error) {
	var out []Weighted
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("llmfake: ratio entry %q: want kind=weight", part)
		}
		kindName, ra, hasRA := strings.Cut(name, ":")
		k, err := ParseKind(kindName)
		if err != nil {
			return nil, err
		}
		weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || weight < 0 || weight > 1e6 || weight != weight {
			return nil, fmt.Errorf("llmfake: ratio entry %q: weight must be a number ≥ 0", part)
		}
		o := Weighted{Outcome: Outcome{Kind: k}, Weight: weight}
		if hasRA {
			secs, err := strconv.Atoi(ra)
			if err != nil || secs < 0 || secs > 86400 {
				return nil, fmt.Errorf("llmfake: ratio entry %q: retry-after must be whole seconds", part)
			}
			o.RetryAfter = time.Duration(secs) * time.Second
		}
		out = append(out, o)
	}
	var sum float64
	for _, o := range out {
		sum += o.Weight
	}
	if sum <= 0 {
		return nil, errors.New("llmfake: ratio weights sum to zero")
	}
	return out, nil
}

// A marker in a prompt scripts the answers to that prompt:
//
//	[[llmfake:503]]                       always 503
//	[[llmfake:429*2 retry-after=1]]       the first 2 requests with this prompt get 429 + Retry-After: 1, then ok
//	[[llmfake:hang*1]]                    the first request hangs, the next succeeds
//	[[llmfake:ok delay=50ms]]             succeed after 50 ms
//
// Counting is per distinct prompt text, so give each task its own text.
var markerRE = regexp.MustCompile(`\[\[llmfake:([^\]]{1,200})\]\]`)

// Marker is a parsed prompt marker.
type Marker struct {
	Outcome
	// Times is how many requests with this prompt get Outcome; 0 = all.
	Times int
}

// ParseMarker finds the first marker in text. ok is false when there is
// none; err says what is wrong with a malformed one.
func ParseMarker(text string) (m Marker, ok bool, err error) {
	sub := markerRE.FindStringSubmatch(text)
	if sub == nil {
		return Marker{}, false, nil
	}
	fields := strings.Fields(sub[1])
	if len(fields) == 0 {
		return Marker{}, true, errors.New("llmfake: empty marker")
	}
	kindName, times, hasTimes := strings.Cut(fields[0], "*")
	k, err := ParseKind(kindName)
	if err != nil {
		return Marker{}, true, err
	}
	m.Kind = k
	if hasTimes {
		n, err := strconv.Atoi(times)
		if err != nil || n < 1 || n > 1_000_000 {
			return Marker{}, true, fmt.Errorf("llmfake: marker count %q: want a whole number ≥ 1", times)
		}
		m.Times = n
	}
	for _, f := range fields[1:] {
		key, val, _ := strings.Cut(f, "=")
		switch key {
		case "retry-after":
			secs, err := strconv.Atoi(val)
			if err != nil || secs < 0 || secs > 86400 {
				return Marker{}, true, fmt.Errorf("llmfake: marker retry-after %q: want whole seconds", val)
			}
			m.RetryAfter = time.Duration(secs) * time.Second
		case "delay":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 || d > time.Hour {
				return Marker{}, true, fmt.Errorf("llmfake: marker delay %q: want a duration up to 1h", val)
			}
			m.Delay = d
		default:
			return Marker{}, true, fmt.Errorf("llmfake: marker option %q: want retry-after= or delay=", f)
		}
	}
	return m, true, nil
}

// StripMarkers removes every marker from text.
func StripMarkers(text string) string {
	return strings.TrimSpace(markerRE.ReplaceAllString(text, ""))
}
