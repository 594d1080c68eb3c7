package memtree

import "github.com/openhuman/openhuman-core/internal/retrieval"

// knobs are the ranking tunables search and recall read (internal/retrieval's
// params.go; their reasons in its RATIONALE.md).
var knobs = &retrieval.Default
