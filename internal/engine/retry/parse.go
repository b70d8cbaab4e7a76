package retry

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSchedules reads retry schedules written as
// "RateLimitError=60,120,300,600; Default=5,15,60,300": per error type a
// list of delays, each plain seconds ("2.5") or a Go duration ("90s").
// The types given replace theirs in DefaultSchedules; the others keep
// the original. An error says which type and which delay is wrong.
func ParseSchedules(s string) (map[string][]time.Duration, error) {
	out := DefaultSchedules()
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, list, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("retry schedules: %q is not ErrorType=d1,d2,...", part)
		}
		var ds []time.Duration
		for _, f := range strings.Split(list, ",") {
			f = strings.TrimSpace(f)
			d, err := parseDelay(f)
			if err != nil {
				return nil, fmt.Errorf("retry schedules: %s: %w", name, err)
			}
			ds = append(ds, d)
		}
		out[name] = ds
	}
	return out, nil
}

// maxDelay bounds one scheduled delay (a typo like 36000000 is caught).
const maxDelay = 7 * 24 * time.Hour

func parseDelay(f string) (time.Duration, error) {
	if f == "" {
		return 0, fmt.Errorf("an empty delay")
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(f, 64); err == nil {
		if secs < 0 || secs > maxDelay.Seconds() {
			return 0, fmt.Errorf("delay %q must be within 0 and %s", f, maxDelay)
		}
		d = time.Duration(secs * float64(time.Second))
	} else if d, err = time.ParseDuration(f); err != nil {
		return 0, fmt.Errorf("delay %q is not seconds or a duration like 90s", f)
	}
	if d < 0 || d > maxDelay {
		return 0, fmt.Errorf("delay %q must be within 0 and %s", f, maxDelay)
	}
	return d, nil
}
