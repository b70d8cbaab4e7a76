package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// decodeBody reads the JSON request body into dst: at most maxBytes (413
// beyond), one JSON object, no unknown fields, no trailing data. Every
// failure is a *service.Error naming the field where there is one.
func decodeBody(r *http.Request, maxBytes int64, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &service.Error{Kind: service.KindInvalid, Code: "unsupported_media_type",
				Message: fmt.Sprintf("Content-Type %q is not JSON: send application/json", ct)}
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return service.Invalid("invalid_body", "", "reading the request body failed: %v", err)
	}
	if int64(len(body)) > maxBytes {
		return service.TooLarge("body_too_large", "", "request body exceeds %d bytes", maxBytes)
	}
	return decodeJSON(body, dst)
}

// decodeJSON is decodeBody without the HTTP parts (fuzzed on its own).
func decodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return service.Invalid("invalid_json", "", "request body is empty: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return service.Invalid("invalid_json", "", "request body has data after the JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return service.Invalid("invalid_json", "", "request body has data after the JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return service.Invalid("invalid_json", "", "malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return service.Invalid("invalid_json", "", "request body must be a JSON object, not %s", typ.Value)
		}
		want := jsonKind(typ.Type.Kind().String())
		got := typ.Value // "number 2.5", "string", "array", ...
		if n, isNum := strings.CutPrefix(got, "number "); isNum {
			if want == "a number" { // a number that does not fit the field
				kind := "a number in range"
				if k := typ.Type.Kind().String(); strings.HasPrefix(k, "int") || strings.HasPrefix(k, "uint") {
					kind = "a whole number in range"
				}
				return service.Invalid("invalid_type", field, "field %s must be %s, not %s", field, kind, n)
			}
			got = n
		} else {
			got = jsonKind(got)
		}
		return service.Invalid("invalid_type", field, "field %s must be %s, not %s", field, want, got)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return service.Invalid("invalid_json", "", "malformed JSON: unexpected end of body")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return service.Invalid("unknown_field", f, "unknown field %q", f)
	}
	return service.Invalid("invalid_json", "", "malformed JSON: %s", strings.TrimPrefix(msg, "json: "))
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64", "float64", "number":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr", "object":
		return "an object"
	}
	return k
}
