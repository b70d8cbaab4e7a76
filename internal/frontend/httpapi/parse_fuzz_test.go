package httpapi

import (
	"errors"
	"testing"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// FuzzDecodeJSON: any body either decodes or yields a client error (4xx
// kind) — never a panic, never an internal error.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"content":"x"}`, `{"content":1}`, `{"x":1}`, `[`, `{"content":"a"} x`, ``, `null`, `"s"`, `{"timeout":1e999}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var in service.SubmitInput
		err := decodeJSON([]byte(body), &in)
		if err == nil {
			return
		}
		var se *service.Error
		if !errors.As(err, &se) || (se.Kind != service.KindInvalid && se.Kind != service.KindUnprocessable) {
			t.Fatalf("body %q: %v is not a client error", body, err)
		}
		if se.Code == "" || se.Message == "" {
			t.Fatalf("body %q: error without code or message", body)
		}
	})
}
