package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `taskflow version` and `taskflow --version` print the module version,
// the commit (or "commit unknown") and the Go toolchain.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out bytes.Buffer
		m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Logger: NewMain().Logger}
		require.NoError(t, m.Run(context.Background(), args))
		require.Regexp(t, `^taskflow \S+ commit \S+.* go1\.\d+`, out.String(), args)
	}
}
