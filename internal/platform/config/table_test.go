package config

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/worker"

	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
)

// README.md's configuration table is the one Markdown generates from the
// table: edit Settings, then run the generator.
func TestReadmeTableIsGenerated(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	_, err = ReplaceTable(b)
	require.NoError(t, err)
	s := string(b)
	table := s[strings.Index(s, TableBegin)+len(TableBegin)+1 : strings.Index(s, TableEnd)]
	require.Equal(t, Markdown(), table,
		"README.md's configuration table is not internal/platform/config's Settings: run `go run ./internal/platform/config/gen` (or `make generate`)")
}

// Each entry is complete: a variable named once, a flag named once, a
// default and a meaning to document, a rule; a flag has its help.
func TestTableIsWellFormed(t *testing.T) {
	t.Parallel()
	envs, flags := map[string]bool{}, map[string]bool{}
	for _, s := range Settings {
		require.NotEmpty(t, s.Env)
		require.False(t, envs[s.Env], "%s twice", s.Env)
		envs[s.Env] = true
		require.NotEmpty(t, s.Doc, s.Env)
		require.NotNil(t, s.into, s.Env)
		require.NotEqual(t, "", s.Default+s.DefaultDoc, "%s: what is its default?", s.Env)
		require.NotContains(t, s.Doc+s.DefaultDoc, "|", "%s: a | would split the README's row", s.Env)
		if s.Flag != "" {
			require.False(t, flags[s.Flag], "--%s twice", s.Flag)
			flags[s.Flag] = true
			require.NotEmpty(t, s.Usage, s.Env)
			require.NotContains(t, []string{"value"}, s.into.kind(), "%s: a flag of a type pflag can show", s.Env)
		}
	}
	for _, f := range append(append([]string{}, ServerFlags...), ClientFlags...) {
		require.True(t, flags[f], "--%s is in the table", f)
	}
}

// effective is what a configuration means once every package has filled
// in its defaults: two configurations that mean the same are equal.
func effective(c Config) Config {
	c.given = nil
	c.Engine.Store = c.Engine.Store.WithDefaults()
	w := c.Engine.Worker.WithDefaults()
	w.ID, w.Retry.Rand = "", nil // per process, a func
	c.Engine.Worker = w
	c.Engine.Scheduler = c.Engine.Scheduler.WithDefaults()
	c.Summarize.LLM = c.Summarize.LLM.WithDefaults()
	c.Summarize.LLM.Now = nil
	if c.Summarize.RateLimit == nil {
		c.Summarize.RateLimit = new(summarize.DefaultRateLimit)
	}
	if c.Summarize.RateInterval == 0 {
		c.Summarize.RateInterval = summarize.DefaultRateInterval
	}
	if c.Plans.Deadline == 0 {
		c.Plans.Deadline = planapi.Config{}.WithDefaults().DefaultDeadline
	}
	c.ArchiveSchema = archive.Config{Schema: c.ArchiveSchema}.WithDefaults().Schema
	return c
}

// The default the table documents is the one the code applies: setting a
// variable to its documented default changes nothing. (The external
// types' default is the binary's: cmd/taskflow checks it.)
func TestDocumentedDefaultsAreTheCodes(t *testing.T) {
	t.Parallel()
	base, err := Load(func(string) string { return "" })
	require.NoError(t, err)
	n := 0
	for _, s := range Settings {
		if s.Default == "" || s.Env == "TASKFLOW_EXTERNAL_TYPES" {
			continue
		}
		n++
		c, err := Load(func(k string) string {
			if k == s.Env {
				return s.Default
			}
			return ""
		})
		require.NoError(t, err, s.Env)
		require.Equal(t, effective(base), effective(c), "%s=%s is not the default", s.Env, s.Default)
	}
	require.Greater(t, n, 40)
}

// Each flag reads its text as its variable does.
func TestFlagAndVariableAgree(t *testing.T) {
	t.Parallel()
	values := map[string]string{"string": "127.0.0.1:7", "int": "2048", "bool": "true", "duration": "90"}
	for _, s := range Settings {
		if s.Flag == "" {
			continue
		}
		v := values[s.into.kind()]
		fromEnv, err := Load(func(k string) string {
			if k == s.Env {
				return v
			}
			return ""
		})
		require.NoError(t, err, s.Env)
		fromFlag, err := Load(func(string) string { return "" })
		require.NoError(t, err)
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fromFlag.BindFlags(fs, s.Flag)
		require.NoError(t, fs.Parse([]string{"--" + s.Flag + "=" + v}), s.Flag)
		fromEnv.given, fromFlag.given = nil, nil
		fromFlag.Engine.Store.Namespace = fromFlag.Namespace // app.Open does it after the flags
		if s.Env == "TASKFLOW_MAX_BODY_BYTES" {
			fromFlag.MaxContentBytes = fromEnv.MaxContentBytes // clamped at Load, before the flags
		}
		require.Equal(t, fromEnv, fromFlag, "--%s and %s", s.Flag, s.Env)
		require.True(t, strings.HasSuffix(fs.Lookup(s.Flag).Usage, "("+s.Env+")"), s.Flag)
	}
}

// FuzzQueueVars: TASKFLOW_QUEUES and TASKFLOW_TYPE_QUEUES load or are
// refused naming the variable, never a panic.
func FuzzQueueVars(f *testing.F) {
	for _, s := range []string{"emails", "emails:3:2, bulk:1", "a:b", "A", "x:1:2:3", "a,a", "t=q", "t=", "=q", "t=Q Q", ":::", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, name := range []string{"TASKFLOW_QUEUES", "TASKFLOW_TYPE_QUEUES"} {
			_, err := Load(func(k string) string {
				if k == name {
					return v
				}
				return ""
			})
			if err != nil {
				require.ErrorContains(t, err, name)
			}
		}
	})
}

func TestQueueVars(t *testing.T) {
	t.Parallel()
	c, err := Load(func(k string) string {
		return map[string]string{"TASKFLOW_QUEUES": "critical:5:2, default", "TASKFLOW_QUEUES_STRICT": "true",
			"TASKFLOW_TYPE_QUEUES": "email.send=emails, report=bulk"}[k]
	})
	require.NoError(t, err)
	require.Equal(t, []worker.QueueConfig{{Name: "critical", Weight: 5, Concurrency: 2}, {Name: "default"}}, c.Engine.Worker.Queues)
	require.True(t, c.Engine.Worker.StrictOrder)
	require.Equal(t, map[string]string{"email.send": "emails", "report": "bulk"}, c.TypeQueues)
	for _, bad := range []string{"x:0", "Q", "a,a", "a:1:-1"} {
		_, err := Load(func(k string) string {
			if k == "TASKFLOW_QUEUES" {
				return bad
			}
			return ""
		})
		require.ErrorContains(t, err, "TASKFLOW_QUEUES", bad)
	}
}
