package main

// Shell completion: cobra's `taskflow completion bash|zsh|fish|powershell`
// prints the script; these functions fill in what only the API knows (task
// ids, schedule ids, task types). A completion that cannot reach the API
// offers nothing rather than an error: the shell is not the place for it.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/task"
)

// completionClient is the client a completion uses: the environment's
// TASKFLOW_URL/TASKFLOW_TOKEN, overridden by --url/--token when given.
func completionClient(m *Main, cmd *cobra.Command) *apiClient {
	cfg, _ := m.config()
	if f := cmd.Flags().Lookup("url"); f != nil && f.Changed {
		cfg.APIURL = f.Value.String()
	}
	if f := cmd.Flags().Lookup("token"); f != nil && f.Changed {
		cfg.Token = f.Value.String()
	}
	return &apiClient{base: strings.TrimRight(cfg.APIURL, "/"), token: cfg.ClientToken(), http: &http.Client{Timeout: 2 * time.Second}}
}

// completeTaskIDs offers the ids of the newest tasks the caller may see
// that start with what was typed.
func completeTaskIDs(m *Main) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		q := url.Values{"summary": {"true"}, "page_size": {"100"}, "sort_by": {"updated_at"}, "sort_order": {"desc"}}
		var out struct {
			Tasks []taskDoc `json:"tasks"`
		}
		if completionClient(m, cmd).do(ctx, "GET", "/api/v1/tasks?"+q.Encode(), nil, &out) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []cobra.Completion
		for _, t := range out.Tasks {
			if strings.HasPrefix(t.ID, toComplete) {
				ids = append(ids, cobra.CompletionWithDesc(t.ID, t.Type+" "+t.State))
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeScheduleIDs offers the caller's schedule ids.
func completeScheduleIDs(m *Main) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		var out struct {
			Schedules []struct {
				ID       string `json:"schedule_id"`
				Cron     string `json:"cron"`
				TaskType string `json:"task_type"`
			} `json:"schedules"`
		}
		if completionClient(m, cmd).do(ctx, "GET", "/api/v1/schedules", nil, &out) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []cobra.Completion
		for _, s := range out.Schedules {
			if strings.HasPrefix(s.ID, toComplete) {
				ids = append(ids, cobra.CompletionWithDesc(s.ID, s.TaskType+" "+s.Cron))
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTaskTypes offers the task types the deployment accepts
// (GET /api/v1/task-types), else the types the live workers run.
func completeTaskTypes(m *Main) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		c := completionClient(m, cmd)
		seen := map[string]bool{}
		var types struct {
			TaskTypes []struct {
				Name string `json:"name"`
			} `json:"task_types"`
		}
		if c.do(ctx, "GET", "/api/v1/task-types", nil, &types) == nil {
			for _, t := range types.TaskTypes {
				seen[t.Name] = true
			}
		} else {
			var raw json.RawMessage
			if c.do(ctx, "GET", "/api/v1/workers", nil, &raw) == nil {
				if ws, err := decodeWorkers(raw); err == nil {
					for _, w := range ws {
						for _, t := range w.TaskTypes {
							seen[t] = true
						}
					}
				}
			}
		}
		var out []cobra.Completion
		for t := range seen {
			if strings.HasPrefix(t, toComplete) {
				out = append(out, t)
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// stateNames are the task states, for --status.
func stateNames() []cobra.Completion {
	var out []cobra.Completion
	for _, s := range task.States {
		out = append(out, string(s))
	}
	return out
}

func sortStrings(s []string) { sort.Strings(s) }
