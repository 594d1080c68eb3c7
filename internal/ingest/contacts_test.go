package ingest

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// contactLine renders a contact for comparison.
func contactLine(c memtree.ContactInput) string {
	return strings.Join([]string{c.Name, c.Given, c.Family, strings.Join(c.Names, ","), strings.Join(c.Nicknames, ","),
		strings.Join(c.Emails, ","), strings.Join(c.Phones, ","), strings.Join(c.Handles, ",")}, "|")
}

// TestContactFormats reads one address book per pattern: vCard 4.0, 3.0 (Apple,
// grouped properties, folded lines, escaped values), 2.1 (bare types,
// quoted-printable in a charset), several cards in one file, a card without a
// name; Google Contacts CSV (current and older headers, several values in one
// cell) and Outlook CSV.
func TestContactFormats(t *testing.T) {
	for _, c := range []struct {
		name, file, content string
		want                []string
		warn                bool
	}{
		{name: "vcard 4.0", file: "micah.vcf",
			content: "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Micah Stubbs\r\nN:Stubbs;Micah;;;\r\nNICKNAME:Mick,M.S.\r\nEMAIL;TYPE=work:micah@work.example\r\n" +
				"EMAIL;PREF=1:micah.stubbs@mail.example\r\nTEL;VALUE=uri;TYPE=\"voice,cell\":tel:+1-555-123-4567\r\nIMPP:xmpp:micah@jabber.example\r\nEND:VCARD\r\n",
			want: []string{"Micah Stubbs|Micah|Stubbs||Mick,M.S.|micah@work.example,micah.stubbs@mail.example,micah@jabber.example|+1-555-123-4567|micah@jabber.example"}},
		{name: "vcard 3.0 apple with groups and folds", file: "apple.vcf",
			content: "BEGIN:VCARD\nVERSION:3.0\nPRODID:-//Apple Inc.//macOS 14.0//EN\nN:O'Neil;Ann\\, Marie;;Dr.;\nFN:Dr. Ann\\, Marie O'Neil\n" +
				"item1.EMAIL;type=INTERNET;type=pref:ann@post\n .example\nitem1.X-ABLabel:_$!<Other>!$_\nTEL;type=CELL;type=VOICE:(555) 987-6543\n" +
				"X-SOCIALPROFILE;type=twitter;x-user=annmo:http://twitter.com/annmo\nPHOTO;ENCODING=b;TYPE=JPEG:/9j/4AAQSkZJRgABAQAAAQABAAD\n  /2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL\nEND:VCARD\n",
			want: []string{"Dr. Ann, Marie O'Neil|Ann Marie|O'Neil|||ann@post.example|(555) 987-6543|annmo"}},
		{name: "vcard 2.1 quoted-printable latin-1", file: "old.vcf",
			content: "BEGIN:VCARD\nVERSION:2.1\nN;CHARSET=ISO-8859-1;ENCODING=QUOTED-PRINTABLE:M=FCller;J=FCrgen\nFN;CHARSET=ISO-8859-1;ENCODING=QUOTED-PRINTABLE:J=FCrgen M=\n=FCller\n" +
				"TEL;CELL;PREF:+49 171 2345678\nEMAIL;INTERNET:juergen@mail.example\nEND:VCARD\n",
			want: []string{"Jürgen Müller|Jürgen|Müller|||juergen@mail.example|+49 171 2345678|"}},
		{name: "several cards and one without a name", file: "all.vcf",
			content: "BEGIN:VCARD\nVERSION:3.0\nFN:One\nEMAIL:one@x.example\nEND:VCARD\nBEGIN:VCARD\nVERSION:3.0\nNOTE:nothing else\nEND:VCARD\n" +
				"BEGIN:VCARD\nVERSION:3.0\nN:Two;;;;\nTEL:12345\nEND:VCARD\n",
			want: []string{"One|||||one@x.example||", "||Two||||12345|"}, warn: true},
		{name: "google contacts csv, current header", file: "contacts.csv",
			content: "First Name,Middle Name,Last Name,Phonetic First Name,Nickname,File As,E-mail 1 - Label,E-mail 1 - Value,E-mail 2 - Label,E-mail 2 - Value,Phone 1 - Label,Phone 1 - Value\n" +
				"Micah,,Stubbs,,Mick,,* Home,micah@home.example ::: micah@old.example,Work,micah@work.example,Mobile,+1 555 123 4567\n" +
				",,,,,,,,,,,\n",
			want: []string{"Micah Stubbs|Micah|Stubbs||Mick|micah@home.example,micah@old.example,micah@work.example|+1 555 123 4567|"}, warn: true},
		{name: "google contacts csv, older header", file: "google.csv",
			content: "Name,Given Name,Additional Name,Family Name,Yomi Name,Given Name Yomi,Nickname,E-mail 1 - Type,E-mail 1 - Value,Phone 1 - Type,Phone 1 - Value,IM 1 - Type,IM 1 - Value\n" +
				"\"Stubbs, Micah\",Micah,,Stubbs,,,,* ,micah@home.example,Mobile,555-0100,Skype,micah.s\n",
			want: []string{"Stubbs, Micah|Micah|Stubbs|||micah@home.example|555-0100|micah.s"}},
		{name: "outlook csv", file: "outlook.csv",
			content: "First Name,Middle Name,Last Name,Title,Suffix,Nickname,E-mail Address,E-mail 2 Address,Mobile Phone,Business Phone\n" +
				"Lee,,Wong,,,,lee@corp.example,,,+44 20 7946 0000\n",
			want: []string{"Lee Wong|Lee|Wong|||lee@corp.example|+44 20 7946 0000|"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := readertest.WriteFile(t, c.file, c.content)
			out, rep := readertest.Run(t, notes.ContactsReader{}, p)
			var got []string
			for _, x := range out.People {
				got = append(got, contactLine(x))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("contacts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if len(out.Sources) != 0 || rep.Sum.Failures != 0 {
				t.Errorf("a contact is no document: %d sources, errors %v", len(out.Sources), rep.Sum.Errors)
			}
			if (rep.Sum.Warnings > 0) != c.warn {
				t.Errorf("warnings %v", rep.Sum.Notes)
			}
		})
	}
}

// TestContactsAsPeople ingests an address book, mail and chat from the same
// people into a real store: every name, nickname, address and handle of one
// contact resolves to that person, and entity_ids ["Micah"] finds what Micah
// wrote under each of them — and says which entities it was read as.
func TestContactsAsPeople(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"people.vcf": "BEGIN:VCARD\nVERSION:4.0\nFN:Micah Stubbs\nN:Stubbs;Micah;;;\nNICKNAME:Mick\nEMAIL:micah@home.example\nEMAIL:mstubbs@work.example\n" +
			"TEL:+1 555 123 4567\nEND:VCARD\nBEGIN:VCARD\nVERSION:4.0\nFN:Dana Ruiz\nEMAIL:dana@home.example\nEND:VCARD\n",
		"mail.mbox": "From micah@home.example Mon Jan  5 10:00:00 2026\nFrom: M. Stubbs <mstubbs@work.example>\nTo: Dana Ruiz <dana@home.example>\n" +
			"Subject: budget\nDate: Mon, 05 Jan 2026 10:00:00 +0000\nMessage-ID: <m1@work.example>\n\nThe quarterly budget is attached.\n\n" +
			"From dana@home.example Mon Jan  5 11:00:00 2026\nFrom: Dana Ruiz <dana@home.example>\nTo: mstubbs@work.example\n" +
			"Subject: Re: budget\nDate: Mon, 05 Jan 2026 11:00:00 +0000\nMessage-ID: <d1@home.example>\nIn-Reply-To: <m1@work.example>\n\nThanks, reading it now.\n",
		"WhatsApp Chat with Mick.txt": "[05/01/2026, 12:00:00] Mick: lunch at the harbour?\n[05/01/2026, 12:01:00] Dana Ruiz: yes\n" +
			"[05/01/2026, 12:02:00] +1 555-123-4567: from my other phone: running late\n",
	})
	st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	sum, err := Run(ctx, st, []string{dir}, Options{})
	if err != nil || sum.Failures != 0 || sum.Contacts != 2 {
		t.Fatalf("run: %v, failures %v, contacts %d", err, sum.Errors, sum.Contacts)
	}
	if !strings.Contains(sum.Line(), "2 contacts") {
		t.Errorf("summary line: %s", sum.Line())
	}
	texts := func(ids ...string) (map[string]bool, []abi.Resolution) {
		res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{EntityIDs: ids, K: 50})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, h := range res.Chunks {
			for _, w := range []string{"quarterly budget", "lunch at the harbour", "running late", "reading it now", "yes"} {
				if strings.Contains(h.Snippet, w) {
					got[w] = true
				}
			}
		}
		return got, res.Resolved
	}
	for _, v := range []string{"Micah", "micah", "Mick", "M. Stubbs", "mstubbs@work.example", "micah@home.example", "Micah Stubbs", "person:mick", "+1 555 123 4567"} {
		got, resolved := texts(v)
		for _, w := range []string{"quarterly budget", "lunch at the harbour"} {
			if !got[w] {
				t.Errorf("entity_ids [%q] misses what Micah wrote (%q): got %v, resolved %+v", v, w, got, resolved)
			}
		}
		to := map[string]bool{}
		for _, r := range resolved {
			for _, id := range r.To {
				to[id] = true
			}
		}
		for _, id := range []string{"person:m. stubbs", "email:mstubbs@work.example", "person:mick", "person:+1 555-123-4567"} {
			if !to[id] {
				t.Errorf("entity_ids [%q] not read as %s: %+v", v, id, resolved)
			}
		}
		if to["person:dana ruiz"] || to["email:dana@home.example"] {
			t.Errorf("entity_ids [%q] read as Dana: %+v", v, resolved)
		}
	}
	// Dana's own entity stays hers: the contact does not pull Micah in
	got, _ := texts("dana@home.example")
	if !got["reading it now"] {
		t.Errorf("dana: %v", got)
	}
	// a contact is no document
	srcs, err := memory.Default(st).ListSources(ctx, abi.SourcesListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs.Sources {
		if strings.Contains(s.SourceID, "people.vcf") {
			t.Errorf("contact stored as a source: %s", s.SourceID)
		}
	}
}

// TestContactsTwoMicahs: a first name two contacts share resolves to both, and
// the hint says so; a full name picks one.
func TestContactsTwoMicahs(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"people.vcf": "BEGIN:VCARD\nVERSION:3.0\nFN:Micah Stubbs\nN:Stubbs;Micah;;;\nEMAIL:stubbs@x.example\nEND:VCARD\n" +
			"BEGIN:VCARD\nVERSION:3.0\nFN:Micah Jones\nN:Jones;Micah;;;\nEMAIL:jones@x.example\nEND:VCARD\n",
		"a.eml": "From: Micah Stubbs <stubbs@x.example>\nSubject: one\nDate: Mon, 05 Jan 2026 10:00:00 +0000\nMessage-ID: <s@x.example>\n\nstubbs wrote this\n",
		"b.eml": "From: jones@x.example\nSubject: two\nDate: Mon, 05 Jan 2026 11:00:00 +0000\nMessage-ID: <j@x.example>\n\njones wrote this\n",
	})
	st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if sum, err := Run(ctx, st, []string{dir}, Options{}); err != nil || sum.Failures != 0 {
		t.Fatalf("run: %v %v", err, sum.Errors)
	}
	count := func(v string) ([]string, string) {
		res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{EntityIDs: []string{v}, K: 50})
		if err != nil {
			t.Fatal(err)
		}
		var who []string
		for _, h := range res.Chunks {
			for _, w := range []string{"stubbs wrote", "jones wrote"} {
				if strings.Contains(h.Snippet, w) {
					who = append(who, w)
				}
			}
		}
		sort.Strings(who)
		return who, res.Hint
	}
	if who, hint := count("Micah"); strings.Join(who, ",") != "jones wrote,stubbs wrote" || !strings.Contains(hint, "2 contacts") {
		t.Errorf("Micah: %v, hint %q", who, hint)
	}
	if who, _ := count("Micah Jones"); strings.Join(who, ",") != "jones wrote" {
		t.Errorf("Micah Jones: %v", who)
	}
}
