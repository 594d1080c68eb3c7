package config

import (
	"slices"
	"strings"
	"testing"
)

func TestServerAllowedHosts(t *testing.T) {
	home := t.TempDir()
	env := envMap(map[string]string{"OPENHUMAN_HOME": home})
	cfg, _, err := Load(writeFile(t, home, "[server]\nallowed_hosts = [\"myhost.local\", \"box:8000\"]\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Server.AllowedHosts, []string{"myhost.local", "box:8000"}) {
		t.Errorf("allowed_hosts = %q", cfg.Server.AllowedHosts)
	}
	if cfg, _, _ := Load("", envMap(map[string]string{"OPENHUMAN_HOME": t.TempDir()})); len(cfg.Server.AllowedHosts) != 0 {
		t.Errorf("default allowed_hosts = %q, want none", cfg.Server.AllowedHosts)
	}
	_, _, err = Load(writeFile(t, home, "[server]\nallowed_hosts = [\"http://evil.example/\"]\n"), env)
	if err == nil || !strings.Contains(err.Error(), "server.allowed_hosts") {
		t.Errorf("a URL in allowed_hosts: err = %v, want one naming server.allowed_hosts", err)
	}
}
