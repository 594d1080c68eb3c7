package imapsync

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tg, err := ParseURL("imaps://me@gmail.com@imap.gmail.com/%5BGmail%5D%2FAll%20Mail")
	if err != nil {
		t.Fatal(err)
	}
	if tg.User != "me@gmail.com" || tg.Host != "imap.gmail.com" || tg.Port != "993" || !tg.TLS || tg.Mailbox != "[Gmail]/All Mail" {
		t.Errorf("parsed %+v", tg)
	}
	tg, err = ParseURL("imap://bob@127.0.0.1:1143")
	if err != nil || tg.TLS || tg.Port != "1143" || tg.Mailbox != "INBOX" {
		t.Errorf("imap:// with a port and no mailbox: %+v %v", tg, err)
	}
	for _, bad := range []string{"imaps://u:secret@host/INBOX", "http://u@host/INBOX", "imaps://host/INBOX", "imaps://u@host:99999/INBOX"} {
		_, err := ParseURL(bad)
		if err == nil {
			t.Errorf("%s: accepted", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error repeats the password: %v", bad, err)
		}
	}
	d := Target{User: "me@x.org", Host: "imap.x.org", Port: "993", TLS: true, Mailbox: ".hidden/../up"}.MirrorDir("/base")
	if filepath.Dir(filepath.Dir(d)) != "/base" || strings.HasPrefix(filepath.Base(d), ".") {
		t.Errorf("mirror dir %s escapes or hides", d)
	}
}

func TestPasswordSources(t *testing.T) {
	dir := t.TempDir()
	tg := Target{User: "alice", Host: "mail.example.org", Port: "993", TLS: true, Mailbox: "INBOX"}
	noenv := func(string) string { return "" }
	pf := filepath.Join(dir, "pw")
	if err := os.WriteFile(pf, []byte("app-pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Password(tg, pf, noenv, dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a password file others can read: %v", err)
	}
	os.Chmod(pf, 0o600)
	if p, err := Password(tg, pf, noenv, dir); err != nil || p != "app-pass" {
		t.Errorf("password file: %q %v", p, err)
	}
	env := func(k string) string {
		if k == PasswordEnv {
			return "from-env"
		}
		return ""
	}
	if p, err := Password(tg, "", env, dir); err != nil || p != "from-env" {
		t.Errorf("environment: %q %v", p, err)
	}
	if _, err := Password(tg, "", noenv, dir); err == nil || !strings.Contains(err.Error(), PasswordEnv) {
		t.Errorf("no password anywhere: %v", err)
	}
	netrc := "machine other.org login alice password wrong\nmachine mail.example.org\n  login alice\n  password from-netrc\n"
	if err := os.WriteFile(filepath.Join(dir, ".netrc"), []byte(netrc), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := Password(tg, "", noenv, dir); err != nil || p != "from-netrc" {
		t.Errorf(".netrc: %q %v", p, err)
	}
}

// TestConnectRefusesPlaintextOffLoopback: --insecure never sends a password in
// the clear to another machine (refused before any connection).
func TestConnectRefusesPlaintextOffLoopback(t *testing.T) {
	dialed := false
	_, err := Connect(context.Background(), Target{User: "a", Host: "192.0.2.7", Port: "143", Mailbox: "INBOX", Insecure: true},
		Options{Password: "x", Dial: func(context.Context, string, string) (c net.Conn, err error) { dialed = true; return nil, os.ErrClosed }})
	if err == nil || !strings.Contains(err.Error(), "loopback") || dialed {
		t.Errorf("plaintext to 192.0.2.7: err %v, dialed %v", err, dialed)
	}
}
