package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStoreURL: no URL by default (the embedded store); [store] url in the file,
// and OPENHUMAN_STORE_URL over it.
func TestStoreURL(t *testing.T) {
	home := t.TempDir()
	cfg, _, err := Load("", envMap(map[string]string{"OPENHUMAN_HOME": home}))
	if err != nil || cfg.Store.URL != "" {
		t.Fatalf("default store URL = %q, %v; want none", cfg.Store.URL, err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[store]\nurl = \"postgres://a@db:5432/m\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err = Load("", envMap(map[string]string{"OPENHUMAN_HOME": home}))
	if err != nil || cfg.Store.URL != "postgres://a@db:5432/m" {
		t.Fatalf("file store URL = %q, %v", cfg.Store.URL, err)
	}
	cfg, _, err = Load("", envMap(map[string]string{"OPENHUMAN_HOME": home, "OPENHUMAN_STORE_URL": " postgres://b@other/m "}))
	if err != nil || cfg.Store.URL != "postgres://b@other/m" {
		t.Fatalf("environment store URL = %q, %v", cfg.Store.URL, err)
	}
}
