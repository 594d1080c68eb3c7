// Package hostile is a black-box suite over issue 29's thirteen findings: each
// test generates its hostile module, drives a built openhuman-core only through
// surfaces that 3656465 already had (the CLI, `mcp` over stdio with raw
// JSON-RPC frames, config.toml, policy.toml, tools/ and the audit log under a
// temporary OPENHUMAN_HOME), and asserts the limit by time and by the child's
// resident size (/proc/<pid>/status, sampled, and VmHWM), and the reason a
// reviewer reads.
//
// Every child runs under RLIMIT_AS (prlimit --as) and is killed when its
// resident size passes 1.5 GiB or its time limit, so a binary that misbehaves
// fails the test instead of taking the machine down.
//
// By default the binary is built from this tree. To run the suite against
// another build (the base of issue 29, say):
//
//	git worktree add --detach /tmp/base3656 3656465
//	(cd /tmp/base3656 && go build -o /tmp/ohc-base ./cmd/openhuman-core)
//	OPENHUMAN_HOSTILE_BIN=/tmp/ohc-base go test ./internal/e2e/hostile -count=1 -v
package hostile
