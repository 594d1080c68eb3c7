package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindMattermost forces the Mattermost bulk export reader.
const KindMattermost = "mattermost"

// mmFlushMessages bounds the messages the Mattermost reader gathers before it
// hands them on (an export of a whole server is read as a stream).
const mmFlushMessages = 20000

// MattermostReader reads Mattermost's bulk export (mmctl export, one JSON object
// a line, a "version" line first): "user" lines name people (username, first and
// last name, nickname, email), "channel" lines the channels, "post" lines a
// channel's messages and "direct_post" lines direct and group messages, each
// with its replies (a thread) and attachments. A channel becomes one source per
// month under "mattermost:<team>/<channel>"; a direct chat under
// "mattermost:dm/<members>". Authors are named by their full name and addressed
// by their email, so contacts and mail of the same people join them. Times are
// UTC (create_at, epoch ms).
type MattermostReader struct{}

func (MattermostReader) Kind() string { return KindMattermost }

func (MattermostReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".jsonl", ".json", ".ndjson":
	default:
		return false
	}
	h := bytes.TrimLeft(readkit.TrimUTF8BOM(head), " \t\r\n")
	first, _, _ := bytes.Cut(h, []byte{'\n'})
	var v struct {
		Type    string `json:"type"`
		Version *int   `json:"version"`
	}
	return json.Unmarshal(first, &v) == nil && v.Type == "version" && v.Version != nil
}

type mmPost struct {
	Team        string          `json:"team"`
	Channel     string          `json:"channel"`
	Members     []string        `json:"channel_members"`
	User        string          `json:"user"`
	Message     string          `json:"message"`
	CreateAt    int64           `json:"create_at"`
	Replies     []mmPost        `json:"replies"`
	Attachments []mmAttachment  `json:"attachments"`
	Props       json.RawMessage `json:"props"`
}

type mmAttachment struct {
	Path string `json:"path"`
}

func (MattermostReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	f, ok := readkit.OpenInput(path, rep)
	if !ok {
		return
	}
	defer f.Close()
	sc := readkit.NewLineScanner(f)
	type user struct{ name, email string }
	users := map[string]user{}
	titles := map[string]string{}
	type conv struct {
		id, title string
		msgs      []memtree.MessageInput
	}
	convs := map[string]*conv{}
	var order []string
	other := 0
	msg := func(p mmPost, key string, seq int, replyTo string) (memtree.MessageInput, error) {
		if !readkit.ChatTimeOK(p.CreateAt) {
			return memtree.MessageInput{}, fmt.Errorf("create_at %d is missing or before 1980: message not ingested", p.CreateAt)
		}
		u := users[p.User]
		mi := memtree.MessageInput{
			Ref: fmt.Sprintf("mattermost:%s:%d:%s:%d", key, p.CreateAt, p.User, seq), Author: readkit.FirstNonEmpty(u.name, p.User),
			AuthorAddr: readkit.FirstNonEmpty(u.email, p.User), TimestampMS: p.CreateAt, Text: readkit.CleanText(p.Message), ReplyTo: replyTo,
		}
		for _, a := range p.Attachments {
			if name := readkit.ExportFileName(a.Path); name != "" {
				mi.Attachments = append(mi.Attachments, readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0))
				mi.Text = strings.TrimSpace(mi.Text + "\n[attachment " + name + "]")
			}
		}
		if mi.Text == "" && len(mi.Attachments) == 0 {
			return mi, readkit.ErrEmpty
		}
		return mi, nil
	}
	empty, nposts, buffered := 0, 0, 0
	addPost := func(key string, post mmPost, line int) {
		c := convs[key]
		if c == nil {
			title := titles[key]
			if strings.HasPrefix(key, "dm/") {
				var names []string
				for _, m := range post.Members {
					names = append(names, readkit.FirstNonEmpty(users[m].name, m))
				}
				title = strings.Join(names, ", ")
			}
			c = &conv{id: key, title: readkit.FirstNonEmpty(title, key)}
			convs[key] = c
			order = append(order, key)
		}
		root, err := msg(post, key, 0, "")
		switch {
		case errors.Is(err, readkit.ErrEmpty):
			empty++
		case err != nil:
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", line), Err: err})
			return
		default:
			c.msgs = append(c.msgs, root)
			buffered++
		}
		for k, r := range post.Replies {
			mi, err := msg(r, key, k+1, root.Ref)
			switch {
			case errors.Is(err, readkit.ErrEmpty):
				empty++
			case err != nil:
				rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d, reply %d", line, k+1), Err: err})
			default:
				c.msgs = append(c.msgs, mi)
				buffered++
			}
		}
	}
	// flush writes what is gathered: a conversation's months are Merge sources,
	// which the runner joins with the same months written before
	flush := func() {
		for _, k := range order {
			c := convs[k]
			if len(c.msgs) == 0 {
				continue
			}
			sort.SliceStable(c.msgs, func(i, j int) bool { return c.msgs[i].TimestampMS < c.msgs[j].TimestampMS })
			readkit.WriteChat(out, path, "mattermost", c.id, c.title, c.msgs)
			c.msgs = nil
		}
		buffered = 0
	}
	line := 0
	for sc.Scan() {
		line++
		if line%1024 == 0 && ctx.Err() != nil {
			return
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l struct {
			Type       string          `json:"type"`
			User       json.RawMessage `json:"user"`
			Channel    json.RawMessage `json:"channel"`
			Post       json.RawMessage `json:"post"`
			DirectPost json.RawMessage `json:"direct_post"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", line), Err: readkit.DecodeErr(err)})
			continue
		}
		switch l.Type {
		case "user":
			var u struct {
				Username  string `json:"username"`
				Email     string `json:"email"`
				FirstName string `json:"first_name"`
				LastName  string `json:"last_name"`
				Nickname  string `json:"nickname"`
			}
			if json.Unmarshal(l.User, &u) == nil && u.Username != "" {
				name := strings.TrimSpace(u.FirstName + " " + u.LastName)
				users[u.Username] = user{name: readkit.FirstNonEmpty(name, u.Nickname, u.Username), email: strings.TrimSpace(u.Email)}
			}
		case "channel":
			var c struct {
				Team        string `json:"team"`
				Name        string `json:"name"`
				DisplayName string `json:"display_name"`
			}
			if json.Unmarshal(l.Channel, &c) == nil {
				titles[c.Team+"/"+c.Name] = readkit.FirstNonEmpty(c.DisplayName, c.Name)
			}
		case "post", "direct_post":
			raw := l.Post
			if l.Type == "direct_post" {
				raw = l.DirectPost
			}
			var p mmPost
			if err := json.Unmarshal(raw, &p); err != nil {
				rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", line), Err: readkit.DecodeErr(err)})
				continue
			}
			key := p.Team + "/" + p.Channel
			if l.Type == "direct_post" {
				ms := append([]string(nil), p.Members...)
				sort.Strings(ms)
				key = "dm/" + strings.Join(ms, ",")
			}
			addPost(key, p, line)
			nposts++
			if buffered >= mmFlushMessages {
				flush()
			}
		default:
			other++
		}
	}
	if err := sc.Err(); err != nil {
		rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", line+1), Err: fmt.Errorf("%w; the lines after it are not read", err)})
	}
	rep.WarnCount(path, other, "%d version, team, membership, emoji or other line(s) that hold no message")
	rep.WarnCount(path, empty, "%d post(s) with no text and no attachment not kept")
	if nposts == 0 {
		rep.Warn(path, "", "no posts: nothing to ingest")
	}
	flush()
}
