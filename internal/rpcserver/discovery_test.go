package rpcserver

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: not JSON: %v\n%s", url, err, b)
	}
	return resp.StatusCode
}

// GET / describes the server without a token; GET /schema is an OpenRPC document
// of every method /rpc answers, with the params and results of the tool manifests.
func TestIndexAndOpenRPCSchema(t *testing.T) {
	e := newTestEnv(t, false)
	var idx struct {
		OK      bool              `json:"ok"`
		Name    string            `json:"name"`
		Version string            `json:"version"`
		Routes  map[string]string `json:"routes"`
		Methods []string          `json:"methods"`
	}
	if code := getJSON(t, e.http.URL+"/", &idx); code != 200 || !idx.OK || idx.Name != "openhuman-core" || idx.Version != "9.9.9-test" ||
		idx.Routes["GET /schema"] == "" || len(idx.Methods) != len(methodNames()) {
		t.Fatalf("GET /: %d %+v", code, idx)
	}
	var nf map[string]any
	if code := getJSON(t, e.http.URL+"/nope", &nf); code != 404 {
		t.Errorf("GET /nope: %d", code)
	}

	var doc struct {
		OpenRPC string `json:"openrpc"`
		Info    struct{ Title, Version string }
		Methods []struct {
			Name           string `json:"name"`
			ParamStructure string `json:"paramStructure"`
			Params         []struct {
				Name     string          `json:"name"`
				Required bool            `json:"required"`
				Schema   json.RawMessage `json:"schema"`
			} `json:"params"`
			Result struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"result"`
		} `json:"methods"`
	}
	if code := getJSON(t, e.http.URL+"/schema", &doc); code != 200 || doc.OpenRPC != OpenRPCVersion || doc.Info.Version != "9.9.9-test" {
		t.Fatalf("GET /schema: %d %+v", code, doc)
	}
	var names []string
	for _, m := range doc.Methods {
		names = append(names, m.Name)
	}
	want := methodNames()
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("schema methods %v, want every method %v", names, want)
	}
	reg := map[string]Entry{}
	for _, en := range e.srv.Registry() {
		reg[en.Route.Method] = en
	}
	for _, m := range doc.Methods {
		if m.ParamStructure != "by-name" || len(m.Result.Schema) == 0 {
			t.Errorf("%s: %+v", m.Name, m)
		}
		en, ok := reg[m.Name]
		if !ok || en.Transport != TransportJSONRPC {
			continue
		}
		// The params are the input schema's properties, required as it says.
		var in struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		json.Unmarshal(en.InputSchema, &in)
		if len(m.Params) != len(in.Properties) {
			t.Errorf("%s: %d params, input schema has %d properties", m.Name, len(m.Params), len(in.Properties))
		}
		req := 0
		for _, p := range m.Params {
			if string(p.Schema) != string(in.Properties[p.Name]) {
				t.Errorf("%s.%s: schema %s, manifest says %s", m.Name, p.Name, p.Schema, in.Properties[p.Name])
			}
			if p.Required {
				req++
			}
		}
		if req != len(in.Required) {
			t.Errorf("%s: %d required params, schema requires %v", m.Name, req, in.Required)
		}
		if string(m.Result.Schema) != string(en.OutputSchema) {
			t.Errorf("%s: result schema differs from the registry's output schema", m.Name)
		}
	}
	// memory_tree_search needs query; tools_web_search is there (disabled, said so).
	for _, m := range doc.Methods {
		if m.Name == "openhuman.memory_tree_search" && (len(m.Params) == 0 || !containsParam(m.Params, "query", true)) {
			t.Errorf("memory_tree_search params: %+v", m.Params)
		}
	}
}

func containsParam(ps []struct {
	Name     string          `json:"name"`
	Required bool            `json:"required"`
	Schema   json.RawMessage `json:"schema"`
}, name string, required bool) bool {
	for _, p := range ps {
		if p.Name == name && p.Required == required {
			return true
		}
	}
	return false
}
