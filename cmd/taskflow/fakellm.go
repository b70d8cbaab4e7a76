package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
)

func init() {
	register("fake-llm", func(m *Main) *cobra.Command {
		var addr, ratio, apiKey string
		var seed uint64
		var maxHang time.Duration
		cmd := &cobra.Command{
			Use:   "fake-llm",
			Short: "Serve a local fake OpenAI-compatible chat-completions API (for tests and demos)",
			Long: `fake-llm answers POST .../chat/completions like OpenRouter would, without a network.
Point a worker at it with OPENROUTER_BASE_URL=<printed URL> and any OPENROUTER_API_KEY.

Each answer comes from, in order: a marker in the prompt, the --ratio, else success.
Markers: [[llmfake:503]] always 503; [[llmfake:429*2 retry-after=1]] the first two
requests with this prompt get 429 with Retry-After: 1, then success;
[[llmfake:hang]] never answers; [[llmfake:ok delay=2s]] answers after 2 s.
Outcomes: ok 400 401 403 404 429 500 502 503 504 hang malformed.`,
			Example: `  taskflow fake-llm --addr 127.0.0.1:8089 --ratio "ok=0.8,429:2=0.1,503=0.1"`,
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				r, err := llmfake.ParseRatio(ratio)
				if err != nil {
					return fmt.Errorf("--ratio: %w", err)
				}
				fake := llmfake.New(llmfake.Options{APIKey: apiKey, Ratio: r, Seed: seed, MaxHang: maxHang})
				base, err := fake.Start(addr)
				if err != nil {
					return err
				}
				fmt.Fprintf(m.Stdout, "fake LLM listening: OPENROUTER_BASE_URL=%s\n", base)
				<-cmd.Context().Done()
				st := fake.Stats()
				if err := fake.Close(); err != nil {
					return err
				}
				fmt.Fprintf(m.Stdout, "fake LLM stopped after %d requests: %v\n", st.Requests, st.ByKind)
				return nil
			},
		}
		cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8089", "listen address")
		cmd.Flags().StringVar(&ratio, "ratio", "", `outcome weights for prompts without a marker, e.g. "ok=0.9,429:2=0.05,503=0.05" (429:S sends Retry-After: S)`)
		cmd.Flags().StringVar(&apiKey, "api-key", "", "require this bearer key (401 otherwise); empty accepts any")
		cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the ratio's random choice")
		cmd.Flags().DurationVar(&maxHang, "max-hang", 10*time.Minute, "longest a hang outcome holds a request")
		return cmd
	})
}
