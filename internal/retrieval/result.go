package retrieval

import "github.com/openhuman/openhuman-core/sdk/abi"

// ScoreMeaning is what a hit's score says, as the tools' output schemas describe it.
const ScoreMeaning = "Relevance of the hit within this result (higher is better), never higher than the score of the hit above it: the evidence score of the stage that placed the hit (bm25 of its best turn, message or chunk; for memory.recall hits found only through expansions, associations, summaries or vectors, their reciprocal-rank fusion score), capped by the hit above, since a hit saying more of the query's words ranks first whatever its bm25. Compare scores within one result only; absent when nothing at or above the hit was ranked."

// Monotone makes hits' scores non-increasing down the list, in place: each hit's
// score is capped by the score of the hit above it. Stages order hits by more than
// their evidence score (all of the query's words before fewer, literal evidence
// before expansions, a restriction's hits before the relaxed ones), so a hit ranked
// lower can carry a higher raw score; the list's order is the ranking's answer, and
// the score must not contradict it. A negative score becomes 0 (absent).
func Monotone(hits []abi.ChunkHit) {
	for i := range hits {
		if hits[i].Score < 0 {
			hits[i].Score = 0
		}
		if i > 0 && hits[i].Score > hits[i-1].Score {
			hits[i].Score = hits[i-1].Score
		}
	}
}
