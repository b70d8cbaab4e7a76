package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// The data of the two events every external task carries, task.create
// and task.completed, is encoded by hand (New): encoding/json's
// reflection, and its re-validation of the raw params and result, were
// a tenth of the external path's Go CPU. The output is what json.Marshal
// gives for the same struct (fields in declaration order, omitempty
// honoured, strings escaped alike), except that a raw JSON value is
// compacted without escaping <, > and & inside its strings — the same
// value to any JSON reader. encode_test.go compares the two.

// errBadRaw is what a raw field that is not one JSON value gives.
var errBadRaw = errors.New("json: raw field is not valid JSON")

// appendData returns the JSON of data when it is one of the hand-encoded
// types (ok false otherwise: the caller uses encoding/json).
func appendData(b []byte, data any) (out []byte, ok bool, err error) {
	switch d := data.(type) {
	case CreateData:
		out, err = d.appendJSON(b)
	case *CreateData:
		out, err = d.appendJSON(b)
	case CompletedData:
		out, err = d.appendJSON(b)
	case *CompletedData:
		out, err = d.appendJSON(b)
	default:
		return b, false, nil
	}
	return out, true, err
}

func (d *CreateData) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"task_id":`...)
	b = appendString(b, d.TaskID)
	b = append(b, `,"task_type":`...)
	b = appendString(b, d.TaskType)
	b = append(b, `,"params":`...)
	if b, err = appendRaw(b, d.Params); err != nil {
		return nil, err
	}
	b = append(b, `,"session_id":`...)
	b = appendString(b, d.SessionID)
	b = append(b, `,"timeout":`...)
	if b, err = appendFloat(b, d.Timeout); err != nil {
		return nil, err
	}
	b = append(b, `,"priority":`...)
	b = appendString(b, d.Priority)
	b = append(b, `,"created_by":`...)
	b = appendString(b, d.CreatedBy)
	if d.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(d.Attempt), 10)
	}
	if d.Token != "" {
		b = append(b, `,"token":`...)
		b = appendString(b, d.Token)
	}
	if d.Traceparent != "" {
		b = append(b, `,"traceparent":`...)
		b = appendString(b, d.Traceparent)
	}
	return append(b, '}'), nil
}

func (d *CompletedData) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"task_id":`...)
	b = appendString(b, d.TaskID)
	b = append(b, `,"status":`...)
	b = appendString(b, d.Status)
	b = append(b, `,"result":`...)
	if b, err = appendRaw(b, d.Result); err != nil {
		return nil, err
	}
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, d.DurationMS, 10)
	b = append(b, `,"completed_by":`...)
	b = appendString(b, d.CompletedBy)
	if d.Token != "" {
		b = append(b, `,"token":`...)
		b = appendString(b, d.Token)
	}
	if d.Traceparent != "" {
		b = append(b, `,"traceparent":`...)
		b = appendString(b, d.Traceparent)
	}
	return append(b, '}'), nil
}

// appendRaw appends raw compacted, null when it is empty (as a nil
// json.RawMessage; encoding/json refuses an empty non-nil one).
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, errBadRaw
	}
	return buf.Bytes(), nil
}

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string escaped as encoding/json
// escapes it (HTML characters, U+2028 and U+2029 as \u escapes, invalid
// UTF-8 as U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
