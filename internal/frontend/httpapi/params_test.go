package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc/tools"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// publishSpec writes what the example service's registration publishes
// about taskType (its params as JSON Schema), as extsvc.Server does.
func publishSpec(t *testing.T, b *testBundle, taskType string) {
	t.Helper()
	sch, err := json.Marshal(tools.ParamSchemas[taskType].JSONSchema())
	require.NoError(t, err)
	spec, err := json.Marshal(protocol.TypeSpec{Service: "tools", Description: tools.Descriptions[taskType], Params: sch})
	require.NoError(t, err)
	require.NoError(t, b.st.Client().HSet(context.Background(), protocol.NewKeys(keyspace.MustParse(b.ns)).TaskTypes(), taskType, spec).Err())
}

// TestParamsValidatedBeforePublishing: an external task
// type's params are checked against the schema its service published when
// it registered (extsvc/tools') before anything is created or published;
// the 422 names the parameter.
func TestParamsValidatedBeforePublishing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	publishSpec(t, b, "report.generate")
	publishSpec(t, b, "data.export")
	tok := b.session().Token
	for name, tc := range map[string]struct {
		typ    string
		params any
		field  string
	}{
		"MissingQuarter": {"report.generate", map[string]any{"year": 2024}, "params.quarter"},
		"NoParams":       {"report.generate", nil, "params.quarter"},
		"BadQuarter":     {"report.generate", map[string]any{"quarter": "Q5", "year": 2024}, "params.quarter"},
		"QuarterNumber":  {"report.generate", map[string]any{"quarter": 4, "year": 2024}, "params.quarter"},
		"YearString":     {"report.generate", map[string]any{"quarter": "Q4", "year": "2024"}, "params.year"},
		"YearFraction":   {"report.generate", map[string]any{"quarter": "Q4", "year": 2024.5}, "params.year"},
		"YearRange":      {"report.generate", map[string]any{"quarter": "Q4", "year": 3000}, "params.year"},
		"BadFormat":      {"report.generate", map[string]any{"quarter": "Q4", "year": 2024, "format": "docx"}, "params.format"},
		"Misspelt":       {"report.generate", map[string]any{"quarter": "Q4", "year": 2024, "data": map[string]any{}, "fromat": "pdf"}, "params.fromat"},
		"NoData":         {"report.generate", map[string]any{"quarter": "Q4", "year": 2024, "format": "pdf"}, "params.data"},
		"RowNotObject":   {"data.export", map[string]any{"rows": []any{map[string]any{"a": 1}, 2}}, "params.rows[1]"},
		"NoRows":         {"data.export", map[string]any{"format": "csv"}, "params.rows"},
	} {
		r := b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": tc.typ, "params": tc.params})
		require.Equal(t, http.StatusUnprocessableEntity, r.code, "%s: %s", name, r.raw)
		require.Equal(t, "validation_failed", r.errCode(), name)
		require.Equal(t, tc.field, r.errField(), "%s: %s", name, r.raw)
	}
	// Nothing was created (so nothing can be published).
	r := b.do("GET", "/api/v1/tasks", tok, nil)
	require.EqualValues(t, 0, r.body["total"], string(r.raw))

	// Accepted as the service accepts it: case-insensitive quarter and format.
	r = b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "report.generate",
		"params": map[string]any{"quarter": "q4", "year": 2024, "format": "PDF", "data": map[string]any{"revenue": []int{1, 2}}}})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))

	// Schedules and dependent tasks are checked the same way.
	r = b.do("POST", "/api/v1/schedules", tok, map[string]any{"cron": "@daily", "task_type": "report.generate", "params": map[string]any{"quarter": "Q1"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
	require.Equal(t, "params.year", r.errField())
	r = b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "data.export", "params": map[string]any{"rows": "x"}, "depends_on": []string{"whatever"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
	require.Equal(t, "params.rows", r.errField(), "params are checked before dependencies")
}

// TestSummarizeTextInParams: POST /api/v1/tasks takes a summarize task's
// text in params.content as docs/summarize.md says; the task keeps it there
// (the handler reads it from there).
func TestSummarizeTextInParams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	r := b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "summarize",
		"params": map[string]any{"content": "Text in the params. A second sentence.", "max_sentences": 1}})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/tasks/"+r.body["task_id"].(string), tok, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "Text in the params. A second sentence.", r.body["params"].(map[string]any)["content"])
}

// TestOpenAPISubmitByType: /openapi.json's submit body is a oneOf by
// task_type with each type's params schema, including what an external
// service published, so a generated client knows every type's params.
func TestOpenAPISubmitByType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	publishSpec(t, b, "report.generate")
	r := b.do("GET", "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.code)
	schemas := r.body["components"].(map[string]any)["schemas"].(map[string]any)
	by := schemas["SubmitByType"].(map[string]any)
	mapping := by["discriminator"].(map[string]any)["mapping"].(map[string]any)
	for _, typ := range []string{"noop", "sleep", "summarize", "plan", "report.generate", "data.export"} {
		require.Equal(t, "#/components/schemas/Submit."+typ, mapping[typ])
		require.Contains(t, schemas, "Submit."+typ)
	}
	params := func(typ string) map[string]any {
		v := schemas["Submit."+typ].(map[string]any)["allOf"].([]any)[1].(map[string]any)
		return v["properties"].(map[string]any)["params"].(map[string]any)
	}
	require.ElementsMatch(t, []any{"quarter", "year", "data"}, params("report.generate")["required"], "published by the service")
	require.Contains(t, params("sleep")["properties"], "duration_ms")
	require.ElementsMatch(t, []any{"plan_name", "user_id"}, params("plan")["required"])
	require.Equal(t, "object", params("data.export")["type"], "not published here: any object")
	post := r.body["paths"].(map[string]any)["/api/v1/tasks"].(map[string]any)["post"].(map[string]any)
	raw, _ := json.Marshal(post["requestBody"])
	require.Contains(t, string(raw), "#/components/schemas/SubmitByType")
}
