package llmfake_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskflow/taskflow/internal/tasktypes/llm"
	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
)

// A test scripts the fake per prompt with a marker: here the first two
// calls with this text are rate-limited, the third succeeds.
func Example() {
	fake := llmfake.New(llmfake.Options{})
	base, err := fake.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer fake.Close()

	client, err := llm.New(llm.Config{APIKey: "any", BaseURL: base}, nil)
	if err != nil {
		panic(err)
	}
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "Otters hold hands. [[llmfake:429*2 retry-after=3]]"}}}
	for range 3 {
		resp, err := client.Complete(context.Background(), req)
		var ae *llm.APIError
		if errors.As(err, &ae) {
			fmt.Println(ae.StatusCode, ae.RetryAfter)
			continue
		}
		fmt.Println(resp.Content)
	}
	// Output:
	// 429 3s
	// 429 3s
	// Fake summary: Otters hold hands.
}
