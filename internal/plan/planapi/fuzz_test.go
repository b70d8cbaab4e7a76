package planapi_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/planapi"
)

// FuzzParseInput: any body is either accepted with a positive user and a
// positive deadline, or refused as invalid, naming a field.
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{`{"user_id":1}`, `{"user_id":"9","deadline_ms":12.5,"node_timeout_ms":3}`, `{"user_id":1,"deadline_ms":null}`,
		`{"user_id":1,"param_overrides":{"weight":null}}`, `{`, `null`, `{"user_id":1,"deadline_ms":1e300}`} {
		f.Add([]byte(s))
	}
	eng, err := plan.New(plan.Config{})
	require.NoError(f, err)
	svc, err := planapi.New(eng, planapi.Config{})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := svc.ParseInput(body)
		if err != nil {
			var pe *planapi.Error
			if !errors.As(err, &pe) || pe.Kind != planapi.KindInvalid || pe.Field == "" {
				t.Fatalf("not an invalid-request error naming a field: %#v", err)
			}
			return
		}
		if in.Request.UserID <= 0 || in.Deadline <= 0 || in.Request.RequestID == "" {
			t.Fatalf("accepted a bad input: %+v", in)
		}
	})
}
