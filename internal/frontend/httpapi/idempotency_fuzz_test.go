package httpapi

import (
	"errors"
	"testing"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// FuzzIdempotencyKey: any header value is a key of 1..255 printable ASCII
// characters or a 400 naming the header; never a panic.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"k", `"quoted"`, `""`, "", "clé", "a\x00b", string(make([]byte, 300)), "\"", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := parseIdempotencyKey([]string{v})
		if err != nil {
			var se *service.Error
			if !errors.As(err, &se) || se.Kind != service.KindInvalid || se.Field != service.IdempotencyField {
				t.Fatalf("%q: %v is not a 400 about the header", v, err)
			}
			return
		}
		if k == "" || len(k) > service.MaxIdempotencyKey {
			t.Fatalf("%q: accepted key of %d bytes", v, len(k))
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				t.Fatalf("%q: accepted byte 0x%02x", v, k[i])
			}
		}
		if fingerprint("POST", "/api/v1/tasks", []byte(v)) == fingerprint("POST", "/api/v1/tasks/batch", []byte(v)) {
			t.Fatal("the path is part of the fingerprint")
		}
	})
}

// FuzzDecodeBatch: any batch body decodes or is a client error.
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range []string{`{"tasks":[]}`, `{"tasks":[{"task_type":"noop","unique_key":"k","unique_for":60}]}`, `{"tasks":{}}`,
		`{"tasks":[1]}`, `{"tasks":[{"unique_for":"x"}]}`, `{"tasks":null}`, `[]`, `{"tasks":[{}],"x":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var in batchRequest
		err := decodeJSON([]byte(body), &in)
		if err == nil {
			return
		}
		var se *service.Error
		if !errors.As(err, &se) || (se.Kind != service.KindInvalid && se.Kind != service.KindUnprocessable) {
			t.Fatalf("body %q: %v is not a client error", body, err)
		}
	})
}
