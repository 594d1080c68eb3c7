package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// isSlackExport reports whether dir looks like a Slack export folder.
func isSlackExport(dir string) bool {
	for _, f := range []string{"users.json", "channels.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

type slackUserJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	RealName string `json:"real_name"`
	IsBot    bool   `json:"is_bot"`
	Profile  struct {
		RealName    string `json:"real_name"`
		DisplayName string `json:"display_name"`
		Email       string `json:"email"`
	} `json:"profile"`
}

type slackChannelJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type slackMsgJSON struct {
	Type     string          `json:"type"`
	Subtype  string          `json:"subtype"`
	Text     string          `json:"text"`
	User     string          `json:"user"`
	Username string          `json:"username"`
	BotID    string          `json:"bot_id"`
	TS       json.RawMessage `json:"ts"`
	Profile  *struct {
		RealName string `json:"real_name"`
		Name     string `json:"name"`
	} `json:"user_profile"`
	Files []struct {
		Name     string `json:"name"`
		Mimetype string `json:"mimetype"`
		Size     int    `json:"size"`
	} `json:"files"`
}

// slackNoise are message subtypes that carry no conversation.
var slackNoise = map[string]bool{
	"channel_join": true, "channel_leave": true, "channel_topic": true, "channel_purpose": true,
	"channel_name": true, "channel_archive": true, "channel_unarchive": true, "group_join": true,
	"group_leave": true, "group_topic": true, "group_purpose": true, "group_name": true,
	"pinned_item": true, "unpinned_item": true, "tombstone": true, "reminder_add": true,
	"bot_add": true, "bot_remove": true, "channel_convert_to_private": true,
}

// slackUser is what a user id resolves to.
type slackUser struct{ name, handle string }

// readSlackExport parses a Slack export folder into one source per channel. rel
// names files relative to the ingest root for error messages. Per-file problems
// are returned as FileErrors; the rest of the channel is still ingested.
func readSlackExport(dir string, rel func(string) string) ([]memtree.SourceInput, []FileError, int, error) {
	var errs []FileError
	files := 0
	users := map[string]slackUser{}
	var ul []slackUserJSON
	if err := readJSONFile(filepath.Join(dir, "users.json"), &ul); err != nil {
		return nil, nil, 1, fmt.Errorf("users.json: %w", err)
	}
	files++
	for _, u := range ul {
		name := firstNonEmpty(u.Profile.RealName, u.RealName, u.Profile.DisplayName, u.Name, u.ID)
		users[u.ID] = slackUser{name: name, handle: firstNonEmpty(u.Name, u.Profile.DisplayName, u.ID)}
	}
	var cl []slackChannelJSON
	if err := readJSONFile(filepath.Join(dir, "channels.json"), &cl); err != nil {
		return nil, nil, files + 1, fmt.Errorf("channels.json: %w", err)
	}
	files++
	chans := map[string]string{}
	var names []string
	for _, c := range cl {
		if c.Name == "" || strings.ContainsAny(c.Name, `/\`) || c.Name == "." || c.Name == ".." {
			continue
		}
		chans[c.ID] = c.Name
		names = append(names, c.Name)
	}
	sort.Strings(names)
	var out []memtree.SourceInput
	for _, ch := range names {
		cdir := filepath.Join(dir, ch)
		entries, err := os.ReadDir(cdir)
		if err != nil {
			if !os.IsNotExist(err) {
				errs = append(errs, FileError{Path: rel(cdir), Err: fmt.Errorf("read channel folder: %w", err)})
			}
			continue
		}
		src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: "slack:#" + ch, Title: "#" + ch, Provider: "slack", Origin: rel(cdir)}
		type tsMsg struct {
			ts  float64
			key string
			m   memtree.MessageInput
		}
		var msgs []tsMsg
		for _, e := range entries {
			if e.Type()&os.ModeSymlink != 0 || !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(cdir, e.Name())
			files++
			var day []slackMsgJSON
			if err := readJSONFile(p, &day); err != nil {
				errs = append(errs, FileError{Path: rel(p), Err: err})
				continue
			}
			var bad []string
			for i, jm := range day {
				if jm.Type != "" && jm.Type != "message" || slackNoise[jm.Subtype] {
					continue
				}
				tsStr, ts, ok := slackTS(jm.TS)
				if !ok {
					what := "no ts"
					if len(jm.TS) > 0 && string(jm.TS) != `""` && string(jm.TS) != "null" {
						what = "ts " + string(jm.TS) + " is not a number"
					}
					bad = append(bad, fmt.Sprintf("message %d (%s)", i+1, what))
					continue
				}
				text := slackText(jm.Text, users, chans)
				m := memtree.MessageInput{
					Ref:         "slack:" + ch + ":" + tsStr,
					TimestampMS: int64(ts*1000 + 0.5),
					Text:        text,
				}
				if u, ok := users[jm.User]; ok {
					m.Author, m.AuthorAddr = u.name, u.handle
				} else if jm.Profile != nil && jm.Profile.RealName != "" {
					m.Author, m.AuthorAddr = jm.Profile.RealName, jm.Profile.Name
				} else {
					m.Author = firstNonEmpty(jm.Username, jm.User, jm.BotID)
				}
				for _, f := range jm.Files {
					m.Attachments = append(m.Attachments, attachmentOf(f.Name, f.Mimetype, f.Size))
				}
				if strings.TrimSpace(text) == "" && len(m.Attachments) == 0 {
					continue
				}
				msgs = append(msgs, tsMsg{ts: ts, key: tsStr, m: m})
			}
			if len(bad) > 0 {
				errs = append(errs, FileError{Path: rel(p),
					Err: fmt.Errorf("%d message(s) skipped without a usable ts: %s; the rest of channel #%s is kept", len(bad), strings.Join(bad, ", "), ch)})
			}
		}
		if len(msgs) == 0 {
			continue
		}
		sort.SliceStable(msgs, func(i, j int) bool {
			if msgs[i].ts != msgs[j].ts {
				return msgs[i].ts < msgs[j].ts
			}
			return msgs[i].key < msgs[j].key
		})
		seen := map[string]bool{}
		for _, m := range msgs {
			if seen[m.m.Ref] {
				continue
			}
			seen[m.m.Ref] = true
			src.Messages = append(src.Messages, m.m)
		}
		out = append(out, src)
	}
	return out, errs, files, nil
}

// slackTS reads a Slack ts ("1767703815.204114", as a string or a number).
func slackTS(raw json.RawMessage) (string, float64, bool) {
	if len(raw) == 0 {
		return "", 0, false
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", 0, false
		}
	} else {
		s = string(raw)
	}
	s = strings.TrimSpace(s)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || s == "" {
		return "", 0, false
	}
	return s, f, true
}

// slackText turns Slack's stored markup into readable text: mentions become names,
// links "label (url)", channel links "#name", and &amp; &lt; &gt; are unescaped.
func slackText(s string, users map[string]slackUser, chans map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '<' {
			if j := strings.IndexByte(s[i:], '>'); j > 0 {
				inner := s[i+1 : i+j]
				label := ""
				if k := strings.IndexByte(inner, '|'); k >= 0 {
					inner, label = inner[:k], inner[k+1:]
				}
				switch {
				case strings.HasPrefix(inner, "@"):
					id := inner[1:]
					if u, ok := users[id]; ok {
						b.WriteString(u.name)
					} else if label != "" {
						b.WriteString(label)
					} else {
						b.WriteString("@" + id)
					}
				case strings.HasPrefix(inner, "#"):
					name := label
					if name == "" {
						name = chans[inner[1:]]
					}
					if name == "" {
						name = inner[1:]
					}
					b.WriteString("#" + name)
				case strings.HasPrefix(inner, "!"):
					cmd := inner[1:]
					if label != "" {
						b.WriteString(label)
					} else {
						if k := strings.IndexByte(cmd, '^'); k >= 0 {
							cmd = cmd[:k]
						}
						b.WriteString("@" + cmd)
					}
				case strings.HasPrefix(inner, "mailto:"):
					if label != "" {
						b.WriteString(label)
					} else {
						b.WriteString(strings.TrimPrefix(inner, "mailto:"))
					}
				default:
					u := inner
					if label != "" && label != u {
						b.WriteString(label + " (" + u + ")")
					} else {
						b.WriteString(u)
					}
				}
				i += j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	r := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
	return stripControls(sanitizeUTF8([]byte(r.Replace(b.String()))))
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}
