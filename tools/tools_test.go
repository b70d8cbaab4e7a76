// Package tools holds the repository's helper scripts; this file tests them.
package tools

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// check-test-servers answers within its first second: silent and 0 when
// both servers answer, and naming the variable to set when one does not.
func TestCheckTestServers(t *testing.T) {
	run := func(env ...string) (string, int, time.Duration) {
		cmd := exec.Command("./check-test-servers")
		cmd.Env = append(cmd.Environ(), env...)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code, time.Since(t0)
	}
	out, code, _ := run()
	if code != 0 || out != "" {
		t.Fatalf("with the test servers up: exit %d, %q", code, out)
	}
	// port 1 on loopback refuses at once; user:p@ss@ in the URL is skipped
	out, code, took := run("TASKFLOW_TEST_REDIS_URL=redis://u:p@ss@127.0.0.1:1/0")
	if code != 1 || !strings.Contains(out, "no Redis answers at 127.0.0.1:1 (TASKFLOW_TEST_REDIS_URL=") || strings.Contains(out, "no PostgreSQL") {
		t.Fatalf("exit %d, %q", code, out)
	}
	if took > time.Second {
		t.Fatalf("took %s, want under a second", took)
	}
	out, code, _ = run("TASKFLOW_TEST_DATABASE_URL=postgres://postgres@[::1]:1/postgres?sslmode=disable")
	if code != 1 || !strings.Contains(out, "no PostgreSQL answers at ::1:1 (TASKFLOW_TEST_DATABASE_URL=") {
		t.Fatalf("exit %d, %q", code, out)
	}
}
