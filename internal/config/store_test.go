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

// TestStoreReplicas: [store] replicas in the file, and OPENHUMAN_STORE_REPLICAS
// (comma-separated, blanks dropped) over it.
func TestStoreReplicas(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[store]\nurl = \"postgres://a@db/m\"\nreplicas = [\"postgres://a@r1/m\", \"postgres://a@r2/m\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load("", envMap(map[string]string{"OPENHUMAN_HOME": home}))
	if err != nil || len(cfg.Store.Replicas) != 2 || cfg.Store.Replicas[1] != "postgres://a@r2/m" {
		t.Fatalf("file replicas = %q, %v", cfg.Store.Replicas, err)
	}
	cfg, _, err = Load("", envMap(map[string]string{"OPENHUMAN_HOME": home, "OPENHUMAN_STORE_REPLICAS": " postgres://a@r3/m ,, postgres://a@r4/m"}))
	if err != nil || len(cfg.Store.Replicas) != 2 || cfg.Store.Replicas[0] != "postgres://a@r3/m" || cfg.Store.Replicas[1] != "postgres://a@r4/m" {
		t.Fatalf("environment replicas = %q, %v", cfg.Store.Replicas, err)
	}
}
