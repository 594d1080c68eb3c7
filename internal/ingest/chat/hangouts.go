package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindHangouts forces the Google Hangouts reader.
const KindHangouts = "hangouts"

// HangoutsReader reads Google Hangouts from Google Takeout (Hangouts.json): the
// current {"conversations": [{"conversation", "events"}]} and the older
// {"conversation_state": [{"conversation_state": {"conversation", "event"}}]}.
// The file is streamed one conversation at a time (an account's Hangouts.json
// is often larger than the per-document bound). Participants are named by
// their fallback_name; a chat message's text is its segments (text, links,
// line breaks) and its photos named as attachments; calls, membership and
// rename events are counted. Times are UTC (microseconds).
type HangoutsReader struct{}

func (HangoutsReader) Kind() string { return KindHangouts }

func (HangoutsReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	_, cs := h.Keys["conversations"]
	_, st := h.Keys["conversation_state"]
	return h.Object && (cs || st) && (bytes.Contains(head, []byte(`"conversation_id"`)) || bytes.Contains(head, []byte(`"participant_data"`)))
}

type hoParticipant struct {
	ID struct {
		GaiaID string `json:"gaia_id"`
		ChatID string `json:"chat_id"`
	} `json:"id"`
	FallbackName string `json:"fallback_name"`
}

type hoConversation struct {
	ID struct {
		ID string `json:"id"`
	} `json:"id"`
	Name            string          `json:"name"`
	ParticipantData []hoParticipant `json:"participant_data"`
}

type hoEvent struct {
	SenderID struct {
		GaiaID string `json:"gaia_id"`
		ChatID string `json:"chat_id"`
	} `json:"sender_id"`
	Timestamp   string `json:"timestamp"`
	EventID     string `json:"event_id"`
	EventType   string `json:"event_type"`
	ChatMessage *struct {
		MessageContent struct {
			Segment []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"segment"`
			Attachment []struct {
				EmbedItem struct {
					PlusPhoto *struct {
						URL string `json:"url"`
					} `json:"plus_photo"`
				} `json:"embed_item"`
			} `json:"attachment"`
		} `json:"message_content"`
	} `json:"chat_message"`
}

func (HangoutsReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	f, ok := readkit.OpenInput(path, rep)
	if !ok {
		return
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		rep.Fail(readkit.FileError{Path: path, Err: errors.New("not a JSON object: not a Hangouts export, nothing ingested")})
		return
	}
	n, other := 0, 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("byte %d", dec.InputOffset()), Err: readkit.DecodeErr(err)})
			return
		}
		key, _ := tok.(string)
		if key != "conversations" && key != "conversation_state" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("byte %d", dec.InputOffset()), Err: readkit.DecodeErr(err)})
				return
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			rep.Fail(readkit.FileError{Path: path, Where: key, Err: errors.New("not an array: nothing ingested")})
			return
		}
		for dec.More() {
			if ctx.Err() != nil {
				return
			}
			n++
			where := fmt.Sprintf("conversation %d", n)
			var c struct {
				Conversation struct {
					Conversation hoConversation `json:"conversation"`
				} `json:"conversation"`
				Events []hoEvent `json:"events"`
				// the older layout
				State struct {
					Conversation hoConversation `json:"conversation"`
					Event        []hoEvent      `json:"event"`
				} `json:"conversation_state"`
			}
			if err := dec.Decode(&c); err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
					rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("file ends inside it: %w", err)})
					return
				}
				rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("%w; the conversations after it are not read", readkit.DecodeErr(err))})
				return
			}
			conv, events := c.Conversation.Conversation, c.Events
			if key == "conversation_state" {
				conv, events = c.State.Conversation, c.State.Event
			}
			other += hoConversationSources(conv, events, path, where, out, rep)
		}
		if _, err := dec.Token(); err != nil {
			rep.Fail(readkit.FileError{Path: path, Err: readkit.DecodeErr(err)})
			return
		}
	}
	rep.WarnCount(path, other, "%d call, membership or rename event(s) not stored as messages")
	if n == 0 {
		rep.Warn(path, "", "no conversations: nothing to ingest")
	}
}

// hoConversationSources writes one conversation's messages; it returns the
// events that are no chat message.
func hoConversationSources(conv hoConversation, events []hoEvent, path, where string, out readkit.Output, rep *readkit.Report) int {
	names := map[string]string{}
	for _, p := range conv.ParticipantData {
		if p.FallbackName != "" {
			names[p.ID.GaiaID] = p.FallbackName
		}
	}
	title := conv.Name
	if title == "" {
		var ns []string
		for _, p := range conv.ParticipantData {
			ns = append(ns, readkit.FirstNonEmpty(p.FallbackName, p.ID.GaiaID))
		}
		title = strings.Join(ns, ", ")
	}
	id := readkit.FirstNonEmpty(conv.ID.ID, title)
	other := 0
	var msgs []memtree.MessageInput
	for k, ev := range events {
		if ev.ChatMessage == nil {
			other++
			continue
		}
		us, err := strconv.ParseInt(ev.Timestamp, 10, 64)
		ms := us / 1000
		if err != nil || !readkit.ChatTimeOK(ms) {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("%s, event %d", where, k+1), Err: fmt.Errorf("timestamp %q is not microseconds after 1980: message not ingested", ev.Timestamp)})
			continue
		}
		var b strings.Builder
		for _, s := range ev.ChatMessage.MessageContent.Segment {
			if s.Type == "LINE_BREAK" {
				b.WriteByte('\n')
				continue
			}
			b.WriteString(s.Text)
		}
		var atts []abi.Attachment
		for _, a := range ev.ChatMessage.MessageContent.Attachment {
			if ph := a.EmbedItem.PlusPhoto; ph != nil {
				name := readkit.FirstNonEmpty(readkit.ExportFileName(dcURLBase(ph.URL)), "photo")
				atts = append(atts, readkit.AttachmentOf(name, readkit.MimeType(name, "image/jpeg"), 0))
			}
		}
		text := strings.TrimSpace(b.String())
		if text == "" && len(atts) > 0 {
			text = "[photo]"
		}
		if text == "" {
			other++
			continue
		}
		ref := "hangouts:" + id + ":" + ev.EventID
		if ev.EventID == "" {
			ref = fmt.Sprintf("hangouts:%s:@%d", id, k)
		}
		msgs = append(msgs, memtree.MessageInput{Ref: ref, Author: readkit.FirstNonEmpty(names[ev.SenderID.GaiaID], ev.SenderID.GaiaID), AuthorAddr: ev.SenderID.GaiaID,
			TimestampMS: ms, Text: text, Attachments: atts})
	}
	if len(msgs) == 0 {
		return other
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
	readkit.WriteChat(out, path+" "+where, "hangouts", id, title, msgs)
	return other
}
