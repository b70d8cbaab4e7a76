package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// replayedHeader marks an answer replayed from an Idempotency-Key's record.
const replayedHeader = "Idempotent-Replayed"

// idempotencyOf reads the request's Idempotency-Key (none: the zero
// Idempotency) and fingerprints the request: its method, path and body, so
// the same key with another body, or on another endpoint, is told apart.
// The body is read here (at most maxBytes+1: the decoder refuses a larger
// one) and put back for the decoder.
func idempotencyOf(r *http.Request, maxBytes int64) (service.Idempotency, error) {
	vals := r.Header.Values(service.IdempotencyField)
	if len(vals) == 0 {
		return service.Idempotency{}, nil
	}
	key, err := parseIdempotencyKey(vals)
	if err != nil {
		return service.Idempotency{}, err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return service.Idempotency{}, service.Invalid("invalid_body", "", "reading the request body failed: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return service.Idempotency{Key: key, Fingerprint: fingerprint(r.Method, strings.TrimSuffix(r.URL.Path, "/"), body)}, nil
}

// parseIdempotencyKey checks the header's values: exactly one, 1..255
// printable ASCII characters. The draft's structured-field form (a quoted
// string, "abc") is accepted and unquoted.
func parseIdempotencyKey(vals []string) (string, error) {
	if len(vals) != 1 {
		return "", &service.Error{Kind: service.KindInvalid, Code: "invalid_idempotency_key", Field: service.IdempotencyField,
			Message: "give one Idempotency-Key header"}
	}
	k := vals[0]
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	if err := service.ValidIdempotencyKey(k); err != nil {
		return "", err
	}
	return k, nil
}

// fingerprint is the hash of what a request asks: method, path, body.
func fingerprint(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
