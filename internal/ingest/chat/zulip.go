package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindZulip forces the Zulip organization export reader.
const KindZulip = "zulip"

// ZulipReader reads a Zulip organization export (unpacked): each
// messages-NNNNNN.json ({"zerver_message": [{"sender", "recipient", "subject",
// "content", "date_sent"}]}) with the realm.json beside it, which names the
// users (full name and email), streams, and recipients (a stream, a person or
// a group). A stream becomes one source per month, each topic a thread; direct
// messages a conversation of their people. realm.json itself is named as read
// with the messages. Times are UTC (date_sent, or pub_date in older exports).
type ZulipReader struct{}

func (ZulipReader) Kind() string { return KindZulip }

// ReasonZulipRealm is the skip reason of a Zulip export's realm.json.
const ReasonZulipRealm = "Zulip realm metadata: its users and streams are read with the messages-*.json beside it"

func (ZulipReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	_, msgs := h.Keys["zerver_message"]
	_, realm := h.Keys["zerver_realm"]
	_, users := h.Keys["zerver_userprofile"]
	return h.Object && (msgs || realm || users)
}

type zulipRealm struct {
	Users []struct {
		ID       int64  `json:"id"`
		FullName string `json:"full_name"`
		Email    string `json:"email"`
		Delivery string `json:"delivery_email"`
	} `json:"zerver_userprofile"`
	Streams []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"zerver_stream"`
	Recipients []struct {
		ID     int64 `json:"id"`
		Type   int   `json:"type"`
		TypeID int64 `json:"type_id"`
	} `json:"zerver_recipient"`
	Subscriptions []struct {
		UserProfile int64 `json:"user_profile"`
		Recipient   int64 `json:"recipient"`
	} `json:"zerver_subscription"`
}

func (ZulipReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	b, ok := readkit.ReadJSONExport(path, rep)
	if !ok {
		return
	}
	var ms struct {
		Messages *[]json.RawMessage `json:"zerver_message"`
	}
	if err := json.Unmarshal(b, &ms); err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: readkit.DecodeErr(err)})
		return
	}
	if ms.Messages == nil {
		rep.Skip(path, ReasonZulipRealm)
		return
	}
	realmPath := filepath.Join(filepath.Dir(path), "realm.json")
	var realm zulipRealm
	if rb, err := readkit.ReadFileLimited(realmPath); err != nil {
		rep.Warn(path, "", "no realm.json beside it ("+err.Error()+"): people and streams named by their numbers")
	} else if err := json.Unmarshal(readkit.TrimUTF8BOM(rb), &realm); err != nil {
		rep.Warn(path, "", "realm.json beside it cannot be read ("+readkit.DecodeErr(err).Error()+"): people and streams named by their numbers")
	}
	type user struct{ name, email string }
	users := map[int64]user{}
	for _, u := range realm.Users {
		users[u.ID] = user{name: u.FullName, email: readkit.FirstNonEmpty(u.Delivery, u.Email)}
	}
	streams := map[int64]string{}
	for _, s := range realm.Streams {
		streams[s.ID] = s.Name
	}
	type recip struct {
		typ    int
		typeID int64
	}
	recips := map[int64]recip{}
	for _, r := range realm.Recipients {
		recips[r.ID] = recip{r.Type, r.TypeID}
	}
	members := map[int64][]int64{} // a group's (or a person's) recipient → users subscribed
	for _, s := range realm.Subscriptions {
		members[s.Recipient] = append(members[s.Recipient], s.UserProfile)
	}
	nameOf := func(id int64) string {
		if u, ok := users[id]; ok && u.name != "" {
			return u.name
		}
		return "user " + strconv.FormatInt(id, 10)
	}
	type conv struct {
		id, title string
		msgs      []memtree.MessageInput
	}
	convs := map[string]*conv{}
	var order []string
	topicRoot := map[string]string{}
	for i, raw := range *ms.Messages {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		var m struct {
			ID        int64    `json:"id"`
			Sender    int64    `json:"sender"`
			Recipient int64    `json:"recipient"`
			Subject   string   `json:"subject"`
			Content   string   `json:"content"`
			DateSent  *float64 `json:"date_sent"`
			PubDate   *float64 `json:"pub_date"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message %d", i+1), Err: readkit.DecodeErr(err)})
			continue
		}
		secs := m.DateSent
		if secs == nil {
			secs = m.PubDate
		}
		var msTime int64
		if secs != nil && !math.IsNaN(*secs) && !math.IsInf(*secs, 0) {
			msTime = int64(*secs * 1000)
		}
		if !readkit.ChatTimeOK(msTime) {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message id %d", m.ID), Err: fmt.Errorf("date_sent missing or before 1980: message not ingested")})
			continue
		}
		r := recips[m.Recipient]
		var key, title string
		switch r.typ {
		case 2:
			name := readkit.FirstNonEmpty(streams[r.typeID], "stream "+strconv.FormatInt(r.typeID, 10))
			key, title = "stream/"+name, "#"+name
		default:
			ids := append([]int64{m.Sender}, members[m.Recipient]...)
			if r.typ == 1 {
				ids = append(ids, r.typeID)
			}
			sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
			var names []string
			var keys []string
			for k, id := range ids {
				if k > 0 && ids[k-1] == id {
					continue
				}
				names = append(names, nameOf(id))
				keys = append(keys, strconv.FormatInt(id, 10))
			}
			key, title = "dm/"+strings.Join(keys, ","), strings.Join(names, ", ")
		}
		c := convs[key]
		if c == nil {
			c = &conv{id: key, title: title}
			convs[key] = c
			order = append(order, key)
		}
		u := users[m.Sender]
		mi := memtree.MessageInput{Ref: "zulip:" + strconv.FormatInt(m.ID, 10), Author: nameOf(m.Sender), AuthorAddr: u.email,
			Subject: m.Subject, TimestampMS: msTime, Text: strings.TrimSpace(m.Content)}
		if r.typ == 2 && m.Subject != "" {
			tk := key + "\x00" + m.Subject
			if root, ok := topicRoot[tk]; ok {
				mi.ReplyTo = root
			} else {
				topicRoot[tk] = mi.Ref
				mi.Text = "[" + m.Subject + "] " + mi.Text // a topic's first message names it
			}
		}
		if mi.Text == "" {
			continue
		}
		c.msgs = append(c.msgs, mi)
	}
	for _, k := range order {
		c := convs[k]
		sort.SliceStable(c.msgs, func(i, j int) bool { return c.msgs[i].TimestampMS < c.msgs[j].TimestampMS })
		readkit.WriteChat(out, path, "zulip", c.id, c.title, c.msgs)
	}
}
