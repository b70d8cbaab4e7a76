package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFake(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := NewFake(start)
	require.Equal(t, start, f.Now())
	f.Advance(90 * time.Second)
	require.Equal(t, start.Add(90*time.Second), f.Now())
	f.Set(start)
	require.Equal(t, start, f.Now())
}

func TestReal(t *testing.T) {
	t.Parallel()
	before := time.Now()
	got := Real{}.Now()
	require.False(t, got.Before(before))
}
