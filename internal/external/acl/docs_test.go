package acl

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
)

// TestRulesAreTheDocumented: the ACL SETUSER lines of docs/notifications.md,
// which operators paste, are the rules of this package for the default
// namespace, word for word.
func TestRulesAreTheDocumented(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../docs/notifications.md")
	require.NoError(t, err)
	line := func(user string) []string {
		m := regexp.MustCompile(`(?m)^ACL SETUSER ` + regexp.QuoteMeta(user) + ` on >PASSWORD (.*)$`).FindStringSubmatch(string(raw))
		require.NotNil(t, m, "the line of user %s", user)
		var words []string
		for _, w := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(m[1], -1) {
			words = append(words, strings.Trim(w, `"`))
		}
		return words
	}
	require.Equal(t, ProcessRules(keyspace.Default, 1), line("taskflow"))
	require.Equal(t, ProcessRules(keyspace.Default, 3), line("taskflow-3"))
	require.Equal(t, ServiceRules(keyspace.Default), line("report-service"))
}
