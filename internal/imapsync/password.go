package imapsync

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PasswordEnv is the environment variable the IMAP password may come from.
const PasswordEnv = "OPENHUMAN_IMAP_PASSWORD"

// Password finds the password for t: from passwordFile when given (which must
// not be readable by group or others), else from OPENHUMAN_IMAP_PASSWORD, else
// from ~/.netrc (machine HOST login USER password …). It is never taken from a
// command line or written to a log. An app password (Gmail, Fastmail) is a
// password like any other.
func Password(t Target, passwordFile string, getenv func(string) string, home string) (string, error) {
	if passwordFile != "" {
		st, err := os.Stat(passwordFile)
		if err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("--password-file %s: mode %04o lets others read it; chmod 600 %s", passwordFile, st.Mode().Perm(), passwordFile)
		}
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
		p := strings.TrimRight(string(b), "\r\n")
		if p == "" {
			return "", fmt.Errorf("--password-file %s is empty", passwordFile)
		}
		return p, nil
	}
	if p := getenv(PasswordEnv); p != "" {
		return p, nil
	}
	if home != "" {
		p, err := netrcPassword(filepath.Join(home, ".netrc"), t.Host, t.User)
		if err != nil {
			return "", err
		}
		if p != "" {
			return p, nil
		}
	}
	return "", fmt.Errorf("imap %s: no password: set %s, give --password-file (mode 0600), or add \"machine %s login %s password …\" to ~/.netrc", t, PasswordEnv, t.Host, t.User)
}

// netrcPassword reads the password of machine host (login user, or any login
// when the entry names none) from a .netrc file; "" when there is none.
func netrcPassword(path, host, user string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("~/.netrc: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s: mode %04o lets others read it; chmod 600 %s", path, st.Mode().Perm(), path)
	}
	var toks []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		toks = append(toks, strings.Fields(line)...)
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	type entry struct{ machine, login, password string }
	var cur *entry
	var found []entry
	for i := 0; i < len(toks); i++ {
		next := func() string {
			if i+1 < len(toks) {
				i++
				return toks[i]
			}
			return ""
		}
		switch toks[i] {
		case "machine":
			if cur != nil {
				found = append(found, *cur)
			}
			cur = &entry{machine: next()}
		case "default":
			if cur != nil {
				found = append(found, *cur)
			}
			cur = &entry{machine: ""}
		case "login":
			if cur != nil {
				cur.login = next()
			}
		case "password":
			if cur != nil {
				cur.password = next()
			}
		case "account", "macdef":
			next()
		}
	}
	if cur != nil {
		found = append(found, *cur)
	}
	for _, e := range found {
		if e.machine == host && (e.login == "" || e.login == user) && e.password != "" {
			return e.password, nil
		}
	}
	return "", nil
}
