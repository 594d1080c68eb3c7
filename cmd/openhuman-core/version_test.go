package main

import (
	"runtime/debug"
	"testing"
)

// Every way of building one commit gives one version string.
func TestVersionFromBuildInfo(t *testing.T) {
	const rev = "b8e824c0a64d44c52878ee757168c46fee6b3c0f"
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-02T01:04:08Z"}}
	noGit := func() (string, string) { return "", "" }
	checkout := func() (string, string) { return "", rev[:12] }
	taggedCheckout := func() (string, string) { return "v0.2.0", rev[:12] }
	want := "0.1.0-dev+b8e824c0a64d"
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		git  func() (string, string)
		want string
	}{
		{"go build in a clone", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202010408-b8e824c0a64d"}, Settings: vcs}, noGit, want},
		{"go build, uncommitted changes", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202010408-b8e824c0a64d+dirty"}, Settings: vcs}, noGit, want},
		{"go install ./cmd in a clone", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202010408-b8e824c0a64d"}, Settings: vcs}, noGit, want},
		{"go install module@commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202010408-b8e824c0a64d"}}, noGit, want},
		{"go install after a tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.1-0.20261202010408-b8e824c0a64d"}}, noGit, want},
		{"go run (no VCS stamp)", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, checkout, want},
		{"-buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, checkout, want},
		{"go install module@v0.2.0", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, noGit, "0.2.0"},
		{"go build of the tagged commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}, Settings: vcs}, noGit, "0.2.0"},
		{"go run of the tagged commit", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, taggedCheckout, "0.2.0"},
		{"nothing known", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, noGit, "0.1.0-dev"},
		{"no build info", nil, noGit, "0.1.0-dev"},
	} {
		if got := versionFrom(c.bi, c.git); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
