package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The data of task.create and task.completed is decoded by hand when it
// is in the plain form the SDKs write (keys as the schema spells them,
// strings without escapes, integers where integers go): encoding/json's
// reflection was most of the cost of reading an event. Anything else —
// an escape, a key in another case, a value of another type, invalid
// JSON — goes to encoding/json, so the result is always what
// json.Unmarshal gives (decode_test.go's fuzz target compares them).

// decodeFast fills v (a *CreateData or *CompletedData) from data (known
// to be valid JSON when valid) and reports whether it could; false leaves
// v for encoding/json.
func decodeFast(data []byte, valid bool, v any) bool {
	if !valid && !json.Valid(data) {
		return false
	}
	var d dec
	d.b = data
	switch x := v.(type) {
	case *CreateData:
		var out CreateData
		if !d.object(func(key []byte) bool { return out.field(&d, key) }) {
			return false
		}
		*x = out
	case *CompletedData:
		var out CompletedData
		if !d.object(func(key []byte) bool { return out.field(&d, key) }) {
			return false
		}
		*x = out
	default:
		return false
	}
	return true
}

func (c *CreateData) field(d *dec, key []byte) bool {
	switch string(key) {
	case "task_id":
		return d.str(&c.TaskID)
	case "task_type":
		return d.str(&c.TaskType)
	case "params":
		return d.raw(&c.Params)
	case "session_id":
		return d.str(&c.SessionID)
	case "timeout":
		return d.float(&c.Timeout)
	case "priority":
		return d.str(&c.Priority)
	case "created_by":
		return d.str(&c.CreatedBy)
	case "attempt":
		var n int64
		if !d.integer(&n) {
			return false
		}
		c.Attempt = int(n)
		return true
	case "token":
		return d.str(&c.Token)
	case "traceparent":
		return d.str(&c.Traceparent)
	}
	return d.other(key, "task_id", "task_type", "params", "session_id", "timeout", "priority", "created_by",
		"attempt", "token", "traceparent")
}

func (c *CompletedData) field(d *dec, key []byte) bool {
	switch string(key) {
	case "task_id":
		return d.str(&c.TaskID)
	case "status":
		return d.str(&c.Status)
	case "result":
		return d.raw(&c.Result)
	case "duration_ms":
		return d.integer(&c.DurationMS)
	case "completed_by":
		return d.str(&c.CompletedBy)
	case "token":
		return d.str(&c.Token)
	case "traceparent":
		return d.str(&c.Traceparent)
	}
	return d.other(key, "task_id", "status", "result", "duration_ms", "completed_by", "token", "traceparent")
}

// dec reads one valid JSON value (json.Valid said so) from b at i.
type dec struct {
	b []byte
	i int
}

func (d *dec) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// object reads an object whose values field reads, one key at a time.
func (d *dec) object(field func(key []byte) bool) bool {
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return false
	}
	d.i++
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return true
	}
	for {
		d.space()
		key, ok := d.plain()
		if !ok {
			return false
		}
		d.space()
		d.i++ // ':' (valid JSON)
		d.space()
		if !field(key) {
			return false
		}
		d.space()
		if d.i >= len(d.b) {
			return false
		}
		c := d.b[d.i]
		d.i++
		if c == '}' {
			return true
		}
	}
}

// plain reads a string without escapes and returns its bytes (false for
// anything else, or for a string that is not valid UTF-8).
func (d *dec) plain() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	start := d.i + 1
	end := bytes.IndexByte(d.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	s := d.b[start : start+end]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, false
	}
	d.i = start + end + 1
	return s, true
}

// null reads a null (which leaves a field as it was).
func (d *dec) null() bool {
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

func (d *dec) str(dst *string) bool {
	if d.null() {
		return true
	}
	s, ok := d.plain()
	if !ok {
		return false
	}
	*dst = string(s)
	return true
}

// raw reads any value into dst (its bytes; null as "null", as
// json.RawMessage keeps it).
func (d *dec) raw(dst *json.RawMessage) bool {
	start := d.i
	if !d.skip() {
		return false
	}
	*dst = json.RawMessage(d.b[start:d.i:d.i])
	return true
}

// number returns the literal of a number.
func (d *dec) number() []byte {
	start := d.i
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			d.i++
			continue
		}
		break
	}
	return d.b[start:d.i]
}

func (d *dec) float(dst *float64) bool {
	if d.null() {
		return true
	}
	lit := d.number()
	if len(lit) == 0 {
		return false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

func (d *dec) integer(dst *int64) bool {
	if d.null() {
		return true
	}
	lit := d.number()
	if len(lit) == 0 {
		return false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// other skips the value of a key none of known names exactly; a key
// that names one of them in another case goes to encoding/json, which
// matches keys regardless of case.
func (d *dec) other(key []byte, known ...string) bool {
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return d.skip()
}

// skip passes one value (valid JSON: strings, nesting and literals need
// only be delimited).
func (d *dec) skip() bool {
	if d.i >= len(d.b) {
		return false
	}
	switch d.b[d.i] {
	case '"':
		return d.skipString()
	case '{', '[':
		depth := 0
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '"':
				if !d.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					d.i++
					return true
				}
			}
			d.i++
		}
		return false
	default: // number, true, false, null
		start := d.i
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return d.i > start
			}
			d.i++
		}
		return d.i > start
	}
}

func (d *dec) skipString() bool {
	d.i++ // the opening quote
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case '\\':
			d.i += 2
			continue
		case '"':
			d.i++
			return true
		}
		d.i++
	}
	return false
}
