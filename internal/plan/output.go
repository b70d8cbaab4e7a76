package plan

import (
	"strconv"
	"unicode/utf8"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// AppendOutput appends the reference's success line (without newline):
// {"request_id":…,"engine_request_id":…,"candidates":[{"id":…,"fields":{…}},…]}.
// fields holds the float columns in ascending key id, then the string
// columns in ascending key id, non-null values only, by registry name.
func AppendOutput(buf []byte, requestID, engineRequestID string, outputs []batch.RowSet, reg *registry.Registry) []byte {
	buf = append(buf, `{"request_id":`...)
	buf = appendString(buf, requestID)
	buf = append(buf, `,"engine_request_id":`...)
	buf = appendString(buf, engineRequestID)
	buf = append(buf, `,"candidates":`...)
	buf = AppendCandidates(buf, outputs, reg)
	return append(buf, '}')
}

// AppendCandidates appends the candidates array alone.
func AppendCandidates(buf []byte, outputs []batch.RowSet, reg *registry.Registry) []byte {
	buf = append(buf, '[')
	first := true
	for _, rs := range outputs {
		b := rs.Batch
		fkeys, skeys := b.FloatKeys(), b.StringKeys()
		fnames, snames := names(fkeys, reg), names(skeys, reg)
		for i := 0; i < rs.Len(); i++ {
			r := rs.Row(i)
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = append(buf, `{"id":`...)
			buf = strconv.AppendInt(buf, b.IDs[r], 10)
			buf = append(buf, `,"fields":{`...)
			nf := 0
			for k, key := range fkeys {
				col := b.Floats[key]
				if fnames[k] == "" || !col.Valid[r] {
					continue
				}
				if nf > 0 {
					buf = append(buf, ',')
				}
				nf++
				buf = appendString(buf, fnames[k])
				buf = append(buf, ':')
				buf = AppendFloat(buf, col.Vals[r])
			}
			for k, key := range skeys {
				col := b.Strings[key]
				if snames[k] == "" || !col.Valid[r] {
					continue
				}
				if nf > 0 {
					buf = append(buf, ',')
				}
				nf++
				buf = appendString(buf, snames[k])
				buf = append(buf, ':')
				buf = appendString(buf, col.Vals[r])
			}
			buf = append(buf, "}}"...)
		}
	}
	return append(buf, ']')
}

func names(keys []int, reg *registry.Registry) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		if key := reg.Keys[k]; key != nil {
			out[i] = key.Name
		}
	}
	return out
}

// AppendFloat formats f as the reference does: the shortest digits that
// round-trip, in plain notation when the decimal exponent is in (-4, 15]
// (integral values get ".0"), otherwise d.ddde±XX.
func AppendFloat(buf []byte, f float64) []byte {
	if f == 0 {
		if 1/f < 0 {
			return append(buf, "-0.0"...)
		}
		return append(buf, "0.0"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	// e is d[.ddd]e±XX
	var digits []byte
	i := 0
	for ; i < len(e) && e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits = append(digits, e[i])
		}
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	n := exp + 1 // position of the decimal point
	k := len(digits)
	if neg {
		buf = append(buf, '-')
	}
	switch {
	case k <= n && n <= 15:
		buf = append(buf, digits...)
		for j := k; j < n; j++ {
			buf = append(buf, '0')
		}
		return append(buf, ".0"...)
	case 0 < n && n <= 15:
		buf = append(buf, digits[:n]...)
		buf = append(buf, '.')
		return append(buf, digits[n:]...)
	case -4 < n && n <= 0:
		buf = append(buf, "0."...)
		for j := n; j < 0; j++ {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	buf = append(buf, digits[0])
	if k > 1 {
		buf = append(buf, '.')
		buf = append(buf, digits[1:]...)
	}
	buf = append(buf, 'e')
	x := n - 1
	if x < 0 {
		buf = append(buf, '-')
		x = -x
	} else {
		buf = append(buf, '+')
	}
	if x < 10 {
		buf = append(buf, '0')
	}
	return strconv.AppendInt(buf, int64(x), 10)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control
// characters escaped, other characters as UTF-8 (invalid bytes as U+FFFD).
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\ufffd"...)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"':
			buf = append(buf, `\"`...)
		case '\\':
			buf = append(buf, `\\`...)
		case '\b':
			buf = append(buf, `\b`...)
		case '\f':
			buf = append(buf, `\f`...)
		case '\n':
			buf = append(buf, `\n`...)
		case '\r':
			buf = append(buf, `\r`...)
		case '\t':
			buf = append(buf, `\t`...)
		default:
			if c < 0x20 {
				buf = append(buf, `\u00`...)
				buf = append(buf, hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				buf = append(buf, c)
			}
		}
		i++
	}
	return append(buf, '"')
}
