package retrieval

import "github.com/openhuman/openhuman-core/sdk/abi"

// Evidence levels: the candidates stage gives every hit the level it was found at,
// and fusion reads them to know which hits are literal evidence. Level 0 is a hit
// saying all of the query's rarer words; 1, 2, … say fewer of them (coordination).
const (
	// OrLevel is the level of the hits that say one of several rarer query words.
	OrLevel = 500
	// RecentLevel is the level of the newest chunks under a restriction (a person
	// or a date the query names) that say none of its words.
	RecentLevel = 900
	// FillLevel is the level of the first hits found only through words too common
	// to rank; hits at FillLevel and beyond (and hits without a level: chunks that
	// follow a hit in its conversation) are not literal evidence.
	FillLevel = 1000
)

// LiteralLead splits search's hits (in search's order) into the prefix that ends
// with its last hit carrying literal evidence (a level below FillLevel: the hit
// says one of the query's rarer words, or the person or date the query names) and
// the rest (chunks saying only common words, the chunks that follow a hit in its
// conversation). Recall returns the prefix as it is, so that its first cited refs
// are exactly search's wherever search has literal evidence.
func LiteralLead(hits []abi.ChunkHit, level map[string]int) (lead, rest []abi.ChunkHit) {
	end := 0
	for i, h := range hits {
		if l, ok := level[h.ID]; ok && l < FillLevel {
			end = i + 1
		}
	}
	return hits[:end], hits[end:]
}
