package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// OutputSchemaError is the error of a call whose result does not match the
// output_schema of the tool's manifest. The mistake is the module author's: the
// text names the tool, the JSON path of the first violation and what to fix, and
// is meant for the client as is (it carries no host path). MCP clients would
// otherwise reject the result as "Structured content does not match the tool's
// output schema", which reads like a bad argument.
type OutputSchemaError struct {
	Tool    string
	Module  string // the module's file name
	Path    string // JSON path of the first violation: "$", "$.sources", "$.items[2].title"
	Problem string // what is wrong there, as the JSON Schema validator says it
	// Result is the result that broke the schema, for tools that show it to the
	// author (`tools call`); it is not part of the message.
	Result json.RawMessage
	// Usage is what the call did through host functions.
	Usage Usage
}

func (e *OutputSchemaError) Error() string {
	return fmt.Sprintf("%s returned a result that does not match its output_schema: at %s: %s; the author of %s must make the result match the output_schema in its manifest (or correct the schema), then pack and install it again",
		e.Tool, e.Path, e.Problem, e.Module)
}

// ErrOutputSchema is matched (errors.Is) by an *OutputSchemaError.
var ErrOutputSchema = errors.New("result does not match the output schema")

// Is makes errors.Is(err, ErrOutputSchema) true for an *OutputSchemaError.
func (e *OutputSchemaError) Is(target error) bool { return target == ErrOutputSchema }

// resolvedOutputs caches compiled output schemas by their text: each distinct
// schema compiles once per process (a module's schemas are fixed by its digest).
var resolvedOutputs sync.Map // string -> *jsonschema.Resolved, or error

func resolveSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	key := string(raw)
	if v, ok := resolvedOutputs.Load(key); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*jsonschema.Resolved), nil
	}
	var s jsonschema.Schema
	var rs *jsonschema.Resolved
	err := json.Unmarshal(raw, &s)
	if err == nil {
		rs, err = s.Resolve(nil)
	}
	if err != nil {
		err = fmt.Errorf("the output_schema does not compile: %w", err)
		resolvedOutputs.Store(key, err)
		return nil, err
	}
	resolvedOutputs.Store(key, rs)
	return rs, nil
}

// ValidateOutput checks result (a JSON object) against a tool's output schema. It
// returns nil when it matches or when there is no schema, and an
// *OutputSchemaError naming the first violation otherwise.
func ValidateOutput(tool, module string, schema, result json.RawMessage) error {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	rs, err := resolveSchema(schema)
	if err != nil { // the manifest was checked when the module loaded: not expected
		return &OutputSchemaError{Tool: tool, Module: module, Path: "$", Problem: err.Error()}
	}
	var inst any
	if err := json.Unmarshal(result, &inst); err != nil {
		return &OutputSchemaError{Tool: tool, Module: module, Path: "$", Problem: "the result is not JSON: " + err.Error()}
	}
	verr := rs.Validate(inst)
	if verr == nil {
		return nil
	}
	path, problem := firstViolation(rs.Schema(), inst, "$", verr)
	return &OutputSchemaError{Tool: tool, Module: module, Path: path, Problem: problem}
}

// checkOutput validates a third-party tool's result against its manifest's
// output_schema. First-party results are not checked here: their tests check
// every result shape against the output schema (internal/builtin's
// conforms, internal/e2e), and they are on every call's hot path.
func checkOutput(st *servedTool, outcome *Outcome, cs *callState) error {
	if st.module.info.Origin == OriginBuiltin || outcome == nil || outcome.Result == nil {
		return nil
	}
	if err := ValidateOutput(st.tool.Name, st.module.info.Name, st.spec.OutputSchema, outcome.Result); err != nil {
		se := err.(*OutputSchemaError)
		se.Result = outcome.Result
		cs.mu.Lock()
		se.Usage = cs.usage
		cs.mu.Unlock()
		return &CallFailure{ModuleSHA256: st.module.info.SHA256, Err: se}
	}
	return nil
}

// firstViolation descends from a value that fails schema into the first member or
// item that fails its own subschema, and returns that value's JSON path and the
// validator's complaint about it. Subschemas that do not compile on their own
// ($ref into the root) end the descent where they are.
func firstViolation(s *jsonschema.Schema, inst any, path string, err error) (string, string) {
	switch v := inst.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := s.Properties[k]
			if sub == nil {
				sub = s.AdditionalProperties
				if b, _ := json.Marshal(sub); sub != nil && string(b) == "false" {
					return path + memberPath(k), "a property the output_schema does not declare (its additionalProperties is false)"
				}
			}
			if p, msg, ok := childViolation(sub, v[k], path+memberPath(k)); ok {
				return p, msg
			}
		}
	case []any:
		for i, item := range v {
			var sub *jsonschema.Schema
			switch {
			case i < len(s.PrefixItems):
				sub = s.PrefixItems[i]
			case s.Items != nil:
				sub = s.Items
			}
			if p, msg, ok := childViolation(sub, item, path+"["+strconv.Itoa(i)+"]"); ok {
				return p, msg
			}
		}
	}
	return path, problemText(err)
}

func childViolation(sub *jsonschema.Schema, inst any, path string) (string, string, bool) {
	if sub == nil || sub.Ref != "" || sub.DynamicRef != "" {
		return "", "", false
	}
	rs, err := sub.CloneSchemas().Resolve(nil)
	if err != nil {
		return "", "", false
	}
	verr := rs.Validate(inst)
	if verr == nil {
		return "", "", false
	}
	p, msg := firstViolation(rs.Schema(), inst, path, verr)
	return p, msg, true
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func memberPath(k string) string {
	if identRE.MatchString(k) {
		return "." + k
	}
	b, _ := json.Marshal(k)
	return "[" + string(b) + "]"
}

var validatingRE = regexp.MustCompile(`^(validating [^:]*: )+`)

// problemText is the validator's message without its "validating <schema>: "
// prefixes, cut to a line.
func problemText(err error) string {
	msg := validatingRE.ReplaceAllString(err.Error(), "")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:299]) + "…"
	}
	return msg
}
