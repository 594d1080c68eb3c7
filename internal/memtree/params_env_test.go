package memtree_test

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/retrieval"
)

// envParams are the ranking parameters the quality evaluations rank with
// (evalAPI): retrieval.DefaultParams with MEMTREE_PARAMS applied.
var envParams = retrieval.DefaultParams()

// evalAPI is the read API over st ranking with envParams.
func evalAPI(st memory.Store) *memory.API { return memory.New(st, envParams) }

// setParamsFromEnv applies MEMTREE_PARAMS ("CiteShare=0.5,ChunkShare=0": fields of
// retrieval.Params) to envParams for this test binary, so a value chosen on the
// LoCoMo folds can be checked on the generated corpus without editing params.go.
// It fails on an unknown field or a value of the wrong kind.
func setParamsFromEnv() error {
	return applyParams(&envParams, os.Getenv("MEMTREE_PARAMS"))
}

// applyParams sets the fields spec names ("A=1,B=0.5") in p.
func applyParams(p *retrieval.Params, spec string) error {
	if spec == "" {
		return nil
	}
	v := reflect.ValueOf(p).Elem()
	for _, kv := range strings.Split(spec, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		f := v.FieldByName(name)
		if !ok || !f.IsValid() {
			return fmt.Errorf("MEMTREE_PARAMS: %q is not name=value of a retrieval.Params field", kv)
		}
		switch f.Kind() {
		case reflect.Int:
			n, err := strconv.Atoi(val)
			if err != nil {
				return fmt.Errorf("MEMTREE_PARAMS: %s: %w", name, err)
			}
			f.SetInt(int64(n))
		case reflect.Float64:
			x, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return fmt.Errorf("MEMTREE_PARAMS: %s: %w", name, err)
			}
			f.SetFloat(x)
		default:
			return fmt.Errorf("MEMTREE_PARAMS: %s has kind %s", name, f.Kind())
		}
	}
	return nil
}
