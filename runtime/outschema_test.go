package runtime

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidateOutputNamesFirstViolation(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"total":{"type":"integer"},
		"items":{"type":"array","items":{"type":"object","properties":{"title":{"type":"string"},"at ms":{"type":"integer","minimum":0}},"required":["title"]}}
	},"required":["total","items"],"additionalProperties":false}`)
	cases := []struct {
		result, path, problem string
	}{
		{`{"total":1,"items":[{"title":"a"}]}`, "", ""},
		{`{"total":"1","items":[]}`, "$.total", `has type "string", want "integer"`},
		{`{"total":1,"items":[{"title":"a"},{"title":2}]}`, "$.items[1].title", `want "string"`},
		{`{"total":1,"items":[{"title":"a","at ms":-1}]}`, `$.items[0]["at ms"]`, "minimum"},
		{`{"total":1,"items":[{}]}`, "$.items[0]", "required"},
		{`{"total":1}`, "$", "required"},
		{`{"total":1,"items":[],"extra":true}`, "$.extra", "does not declare"},
	}
	for _, c := range cases {
		err := ValidateOutput("demo.tool", "demo.wasm", schema, json.RawMessage(c.result))
		if c.path == "" {
			if err != nil {
				t.Errorf("%s: %v", c.result, err)
			}
			continue
		}
		var se *OutputSchemaError
		if !errors.As(err, &se) || !errors.Is(err, ErrOutputSchema) {
			t.Fatalf("%s: err = %v", c.result, err)
		}
		if se.Path != c.path || !strings.Contains(se.Problem, c.problem) || strings.Contains(se.Problem, "validating") {
			t.Errorf("%s: path %q problem %q, want %q mentioning %q", c.result, se.Path, se.Problem, c.path, c.problem)
		}
		if msg := se.Error(); !strings.Contains(msg, "demo.tool") || !strings.Contains(msg, "demo.wasm") || !strings.Contains(msg, c.path) {
			t.Errorf("message: %s", msg)
		}
	}
	if err := ValidateOutput("t", "m", nil, json.RawMessage(`{"x":1}`)); err != nil {
		t.Errorf("no schema: %v", err)
	}
}
