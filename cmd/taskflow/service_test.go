package main

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestServiceCommandErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"UnknownService": {[]string{"service", "nope"}, map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0"}, `unknown service "nope"`},
		"NoRedis":        {[]string{"service", "report"}, nil, "REDIS_URL"},
		"BadRedisURL":    {[]string{"service", "report"}, map[string]string{"REDIS_URL": "http://x"}, "REDIS_URL"},
		"OrchNoRedis":    {[]string{"orchestrator"}, nil, "REDIS_URL"},
		"OrchBadBackoff": {[]string{"orchestrator"}, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_EXTERNAL_BACKOFF_JITTER": "1.5"}, "TASKFLOW_EXTERNAL_BACKOFF_JITTER"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := testMain(c.env, &out).Run(context.Background(), c.args)
			var ee *ExitError
			require.True(t, errors.As(err, &ee), "err = %v", err)
			require.Equal(t, 2, ee.Code)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestExternalTypes(t *testing.T) {
	t.Parallel()
	def := externalTypes(testMain(nil, nil))
	require.Contains(t, def, "report.generate")
	require.Contains(t, def, "text.wordcount")
	require.Equal(t, config.Lookup("TASKFLOW_EXTERNAL_TYPES").Default, strings.Join(def, ","),
		"the configuration table documents the binary's default")
	got := externalTypes(testMain(map[string]string{"TASKFLOW_EXTERNAL_TYPES": " a.b , c "}, nil))
	require.Equal(t, []string{"a.b", "c"}, got)

	// A type both in-process and external is refused.
	_, err := newTaskMux(testMain(map[string]string{"TASKFLOW_EXTERNAL_TYPES": "summarize"}, nil))
	require.ErrorContains(t, err, "already an in-process task type")
	_, err = taskTypes(testMain(map[string]string{"TASKFLOW_EXTERNAL_TYPES": "summarize"}, nil), nil, nil, keyspace.Default)
	require.ErrorContains(t, err, "already an in-process task type")
}

// TestRegistryMatchesWorkers: the types the API accepts (the registry the
// packages declare) are exactly the types a worker handles, for the
// default external types and for a configured list; every in-process
// type has a description.
func TestRegistryMatchesWorkers(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{nil, {"TASKFLOW_EXTERNAL_TYPES": "x.one,y.two"}} {
		m := testMain(env, nil)
		mux, err := newTaskMux(m)
		require.NoError(t, err)
		reg, err := taskTypes(m, nil, nil, keyspace.Default)
		require.NoError(t, err)
		want := mux.Types()
		sort.Strings(want)
		require.Equal(t, want, reg.Names())
		for _, tt := range reg.List(context.Background()) {
			if !tt.External {
				require.NotEmpty(t, tt.Description, tt.Name)
			}
		}
	}
}
