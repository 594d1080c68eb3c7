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
//
// Against 3656465 (2026-12-02, a loaded 2-core machine) every finding's test
// fails, as follows; on this tree each passes (the default run, ~40 s):
//
//	 1 re-entrant oh_alloc    base: the first calls answered after 7.5 s or not within 10 s (1 s
//	                                deadline); 0.6–1.0 GiB and growing (two runs)
//	                          now:  5 calls each < 2 s, failed; audit and log name oh_alloc; +0.7 MiB
//	 2 start fn + oh_alloc    base: tools list killed at 1.5 GiB after 3.7–4.7 s, mcp with no call after 1.8 s;
//	                                audit exit 0
//	                          now:  refused for its start function by tools list (10 ms) and audit; mcp 24 MiB
//	 3 1.5 M globals/elems    base: audit exit 0; 8 calls grew mcp by 745 MiB
//	                          now:  refused naming the limit; growth 0.0 MiB
//	 4 unpinned 60 MB file    base: mcp +110 MiB over a run without it; audit of 64 MiB + 1 KiB exits 1
//	                                without naming the size
//	                          now:  +57 MiB (the file read once); audit exits 2 naming the size, 17 MiB
//	 5 egress via embedder    base: 3,000 embedder requests from one call; audit names no egress
//	                          now:  256 (the host-call budget); audit lists egress to the embedder
//	 6 audit log flushed      base: 12 calls with 450 KB names and ids erased another client's line
//	                          now:  the line is kept; lines ≤ 16 KiB with original lengths recorded
//	 7 failed call's reads    base: host_calls {}          now: memory_search: 1
//	 8 control sequences      base: ESC in the text report now: none, both imports named
//	 9 audit vs loader        base: 5 feature modules WOULD LOAD but fail to compile; a WASI import of
//	                                the wrong type, start→capability and 10,001 globals served
//	                          now:  all 9 cases refused by both
//	10 FIFO *.wasm            base: initialize unanswered after 10 s
//	                          now:  answered; the FIFO refused as not a regular file
//	11 0666 policy, 0777 dir  base: module ready, nothing said
//	                          now:  refused, "writable by others" named
//	12 300 modules            base: initialize unanswered after 20 s
//	                          now:  initialize, tools/list and a call to the 300th module
//	13 per-call budget        base: 3,000 recalls served   now: 256
//	   50 pipelined calls     base: none refused, none answered in 30 s
//	                          now:  the 18 beyond 32 in flight refused at once with -32001
//	   instance memory        tree only: 3656465's serve had no /mcp and stdio has one session per
//	                          process, so no two sessions could share an instance from outside (the
//	                          test skips such a binary); TestInstancesNotSharedBetweenClients covers
//	                          the runtime
//
// Issue 39 (the fourth review, at ecfd484: availability and accounting) adds
// issue39_test.go and issue39_own_test.go. Against ecfd484 each fails; on this
// tree each passes except the .enex one, which waits for issue 40's reader
// (2026-12-06, the same loaded machine; the whole suite ~85 s):
//
//	 1 /mcp per token       base: 512 calls of 1 MiB over 64 sessions: serve +738 MiB, none refused
//	                        now:  +113 MiB; 163 refused at once with 429 naming the token's bound
//	 2 80 MiB .enex note    base: 455–488 MiB, still reading after 20 s (44 s, 36,664 chunks)
//	                        now:  issue 40's reader (not on this branch)
//	 3 unclosed front matter base: 470 KB in 18.9 s (700 KB > 60 s)   now: 0.27 s
//	 4 functions × types    base: audit exit 0; tools list compiled it for 8.7 s
//	                        now:  refused by both (68 ms), naming the function-type pairs
//	 5 split zip bomb       base: 16 members of 1 MiB ingested (7,478 chunks)
//	                        now:  refused for its total ratio, 0 chunks
//	 6 abandoned sessions   base: "too many MCP sessions (64)"   now: the idle-longest one evicted
//	 7 /mcp audit ids       base: request_id "", no session id  now: both
//	 8 over audit budget    base: 400 calls: 72 lines, 0 counted   now: 72 lines + 328 counted
//	 9 install same file    base: exit 0, agents inherited    now: refused without --replace
//	   audit memory         base: 10.5 MB of types: 671 MiB    now: 29 MiB, never loadable
//	   embedder egress      base: 256 requests of the module's own text   now: 0 (the client's: 256)
//	own: core.token → /dev/zero (base: killed at 1.5 GiB; now refused, 17 MiB); config.toml or
//	policy.toml a FIFO (base: hung; now named, 10 ms); URL passwords (base: printed by doctor and
//	status; now redacted); forged /mcp audit id (base: took _meta's; now the JSON-RPC id); 24 GET
//	streams on one token (base: all held; now 16, 8 refused); a 48 KB control-character session
//	id (held on both).
//
// wave_test.go: hostile inputs of this suite's own against what the fourth
// wave added (watch, IMAP sync, MCP resources, issue 40's readers), at 3c73318
// and after (2026-12-06, the same machine; the whole suite ~60 s):
//
//	IMAP greeting never ends  base: sync hung, SIGTERM ignored (> 5 s)   now: ends 17–90 ms after
//	                                SIGTERM naming the greeting (which has the read timeout too)
//	IMAP literal {4000000000} base: killed at 1.5 GiB after 1.3–2.0 s    now: refused naming it, 24 MiB
//	IMAP 100 MB SEARCH line   base: killed at 1.5 GiB after 3.9–4.2 s    now: refused over 8 MiB, 255–296 MiB
//	IMAP 100 MiB message      base: fetched (exit 1 here)  now: named, skipped by its RFC822.SIZE, exit 0
//	UIDVALIDITY every EXAMINE held on both: 3 syncs, 1 source, 1 chunk, 1 mirror file
//	watch over traps          base: a FIFO or /dev/zero given as a path hung past SIGTERM; traps in
//	                                a folder skipped unsaid   now: each named as skipped; a burst of
//	                                2,000 files read, each once, 43 MiB
//	resources/read, /list     base: a 1 MiB URI left its request unanswered (id null); ESC, BEL
//	                                and NUL echoed in error messages   now: answered with its id,
//	                                escaped; 14 URIs, 6 forged cursors, 64 reads in flight, 38 MiB
//	new readers               base: a vCard folded over 100,000 lines took 16.6 s (quadratic)
//	                                now: 0.05 s; a 10,000-column contacts CSV 0.2 s; a 60 MiB-line
//	                                .log named as skipped
package hostile
