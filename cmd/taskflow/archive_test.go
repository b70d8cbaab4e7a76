package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// testDatabaseURL is the test PostgreSQL: TASKFLOW_TEST_DATABASE_URL or the
// local default. A missing server fails the test.
func testDatabaseURL() string {
	if u := os.Getenv("TASKFLOW_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// TestDevArchiveReadBack: `taskflow dev` with DATABASE_URL creates its
// archive schema, archives a finished external task, and once the task and
// its task:{id}:result cache have left Redis, get_task_result and
// list_user_tasks answer from PostgreSQL — to the owner only.
func TestDevArchiveReadBack(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	schema := "tftest_dev_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, testDatabaseURL())
		if err == nil {
			_, _ = c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			_ = c.Close(ctx)
		}
	})
	const admin = "dev-archive-admin-key-0123456789"
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin,
		"DATABASE_URL": testDatabaseURL(), "TASKFLOW_ARCHIVE_SCHEMA": schema}
	base, printed := startDev(t, env)
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svcDone := make(chan error, 1)
	go func() {
		svcDone <- testMain(env, io.Discard).Run(svcCtx, []string{"service", "analysis", "--output-dir", t.TempDir()})
	}()
	t.Cleanup(func() {
		stopSvc()
		select {
		case err := <-svcDone:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("the service did not stop")
		}
	})
	do := func(method, path, token, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	session := func() string {
		code, body := do("POST", "/api/v1/sessions", "", "")
		require.Equal(t, http.StatusCreated, code, body)
		var s struct {
			Token string `json:"token"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &s))
		return s.Token
	}
	owner, other := session(), session()
	code, body := do("POST", "/api/v1/tasks", owner, `{"task_type":"data.analyze","params":{"csv":"n\n1\n2\n3\n"}}`)
	require.Equal(t, http.StatusCreated, code, body)
	var sub struct {
		ID string `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sub))
	id := sub.ID

	// The archive the program created, read by the test on its own.
	ctx := context.Background()
	arc, err := archive.Open(ctx, archive.Config{DatabaseURL: testDatabaseURL(), Schema: schema})
	require.NoError(t, err, "PostgreSQL at %s (set TASKFLOW_TEST_DATABASE_URL)", testDatabaseURL())
	defer arc.Close()
	require.Eventually(t, func() bool {
		a, err := arc.Get(ctx, id)
		return err == nil && a.State == "COMPLETED"
	}, 30*time.Second, 50*time.Millisecond, "never archived\n%s", printed.String())

	// The task and its result cache leave Redis (retention, here at once).
	code, body = do("DELETE", "/api/v1/tasks/"+id, owner, "")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, rdb.Del(ctx, resultview.NewKeys(keyspace.MustParse(ns)).Cache(id)).Err())
	code, _ = do("GET", "/api/v1/tasks/"+id, owner, "")
	require.Equal(t, http.StatusNotFound, code, "gone from Redis")

	code, body = do("GET", "/api/v1/results/"+id, owner, "")
	require.Equal(t, http.StatusOK, code, body)
	var v struct {
		Status string `json:"status"`
		Source string `json:"source"`
		Result struct {
			Summary string `json:"summary"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	require.Equal(t, "completed", v.Status)
	require.Equal(t, "archive", v.Source)
	require.Contains(t, v.Result.Summary, "3 rows", body)

	code, body = do("GET", "/api/v1/results?status_filter=completed", owner, "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, id)
	require.Contains(t, body, `"archived":true`)

	code, body = do("GET", "/api/v1/results/"+id, other, "")
	require.Equal(t, http.StatusNotFound, code, "another session: %s", body)
	code, body = do("GET", "/api/v1/results", other, "")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, id)
}
