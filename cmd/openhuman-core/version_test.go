package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
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

// readGitRevision reads the same commit and release tag as git does, for loose,
// packed, lightweight and annotated tags and for a linked worktree.
func TestReadGitRevisionMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed; the direct reader has nothing to be compared with")
	}
	dir := t.TempDir()
	git := func(d string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", d}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.example", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.example", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	repo := filepath.Join(dir, "repo")
	sub := filepath.Join(repo, "cmd", "x")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	commit := func(msg string) string {
		if err := os.WriteFile(filepath.Join(sub, "f"), []byte(msg), 0o644); err != nil {
			t.Fatal(err)
		}
		git(repo, "add", ".")
		git(repo, "commit", "-q", "-m", msg)
		return git(repo, "rev-parse", "HEAD")
	}
	check := func(name, d, wantTag, wantRev string) {
		t.Helper()
		tag, rev, ok := readGitRevision(d)
		if !ok || tag != wantTag || rev != wantRev[:12] {
			t.Errorf("%s: readGitRevision = %q, %q, %v; want %q, %q", name, tag, rev, ok, wantTag, wantRev[:12])
		}
	}
	first := commit("one")
	check("untagged", sub, "", first)
	git(repo, "tag", "-a", "-m", "release", "v0.1.0")
	check("annotated loose tag at HEAD", sub, "v0.1.0", first)
	second := commit("two")
	check("annotated loose tag of an older commit", sub, "", second)
	git(repo, "tag", "v0.2.0")
	check("lightweight tag at HEAD", sub, "v0.2.0", second)
	git(repo, "pack-refs", "--all")
	check("packed tags", sub, "v0.2.0", second)
	third := commit("three")
	git(repo, "tag", "-a", "-m", "r", "v0.3.0")
	git(repo, "pack-refs", "--all")
	check("packed annotated tag (peeled line)", sub, "v0.3.0", third)
	wt := filepath.Join(dir, "wt")
	git(repo, "worktree", "add", "-q", "-b", "side", wt, first)
	check("linked worktree", wt, "v0.1.0", first)
	if _, _, ok := readGitRevision(t.TempDir()); ok {
		// A temp dir may sit inside some checkout on an odd machine; only a
		// found revision that git disagrees with would be wrong.
		t.Log("temp dir is inside a git checkout")
	}
}
