package param

import (
	"encoding/json"
	"testing"
)

func TestJSONSchema(t *testing.T) {
	s := Schema{Fields: []Field{
		{Name: "quarter", Kind: String, Required: true, Enum: []string{"Q1", "Q2"}, Description: "the quarter"},
		{Name: "year", Kind: Integer, Required: true, Min: 1900, Max: 2200},
		{Name: "rows", Kind: Array, Items: Object, MaxLen: 10},
		{Name: "title", Kind: String, MaxLen: 200},
	}}
	b, err := json.Marshal(s.JSONSchema())
	if err != nil {
		t.Fatal(err)
	}
	// properties in the declared order
	want := `{"additionalProperties":false,"properties":{"quarter":{"description":"the quarter","enum":["Q1","Q2"],"type":"string"},` +
		`"year":{"maximum":2200,"minimum":1900,"type":"integer"},"rows":{"items":{"type":"object"},"maxItems":10,"type":"array"},` +
		`"title":{"maxLength":200,"type":"string"}},"required":["quarter","year"],"type":"object"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	if got := (Schema{AllowUnknown: true}).JSONSchema()["additionalProperties"]; got != true {
		t.Fatalf("AllowUnknown: additionalProperties %v", got)
	}
}
