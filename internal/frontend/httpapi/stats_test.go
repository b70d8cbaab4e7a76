package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
	"github.com/taskflow/taskflow/internal/frontend/stats"
)

// seriesServer starts another API server on b's service that follows the
// event stream (Run), on the store's clock.
func seriesServer(t *testing.T, b *testBundle) *httptest.Server {
	t.Helper()
	au, err := auth.New(b.st.Client(), auth.Config{Namespace: keyspace.MustParse(b.ns), AdminKey: adminKey})
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Service: b.svc, Auth: au, Clock: b.clock})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = api.Run(ctx); close(done) }()
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return srv
}

func getSeries(t *testing.T, srv *httptest.Server) stats.Series {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/stats/series", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var s stats.Series
	require.NoError(t, json.NewDecoder(res.Body).Decode(&s))
	return s
}

func TestSeries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.session()
	live := seriesServer(t, b)
	for i := 0; i < 3; i++ {
		r := b.do("POST", "/api/v1/tasks", s.Token, map[string]any{"task_type": "noop"})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	}
	// the running server counts them as they happen and samples the depth
	require.Eventually(t, func() bool {
		ser := getSeries(t, live)
		last := len(ser.At) - 1
		d := ser.Depth["primary"]
		return ser.Window.Enqueued == 3 && ser.Enqueued[last] == 3 && d != nil && d[last] != nil && *d[last] == 3
	}, 10*time.Second, 20*time.Millisecond)

	// a server started afterwards rebuilds the window from the stream
	later := seriesServer(t, b)
	require.Eventually(t, func() bool { return getSeries(t, later).Window.Enqueued == 3 }, 10*time.Second, 20*time.Millisecond)

	ser := getSeries(t, later)
	require.Equal(t, 5.0, ser.StepSeconds)
	require.Len(t, ser.At, 180, "15 minutes of 5 s steps")
	require.Equal(t, b.clock.Now().Truncate(5*time.Second).Unix(), ser.At[len(ser.At)-1])

	// operators only
	r := b.do("GET", "/api/v1/stats/series", s.Token, nil)
	require.Equal(t, http.StatusForbidden, r.code)
}
