package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
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
	got := externalTypes(testMain(map[string]string{EnvExternalTypes: " a.b , c "}, nil))
	require.Equal(t, []string{"a.b", "c"}, got)

	// A type both in-process and external is refused.
	_, err := newTaskMux(testMain(map[string]string{EnvExternalTypes: "summarize"}, nil))
	require.ErrorContains(t, err, "already an in-process task type")
}
