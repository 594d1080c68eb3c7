package imapsync

import (
	"context"
	"fmt"
	"time"

	"github.com/emersion/go-imap/client"
)

// Follow keeps the mirror in dir current until ctx ends: a sync, then a wait for
// the next one — with IDLE where the server offers it (a new message starts a
// sync at once; the wait is renewed every interval), else the interval. changed
// is called after each sync that wrote or removed messages. It returns the first
// error (the caller retries after a pause).
func Follow(ctx context.Context, t Target, dir string, opt Options, interval time.Duration, changed func()) error {
	for {
		res, err := Sync(ctx, t, dir, opt)
		if res.Fetched+res.Removed > 0 {
			changed()
		}
		if err != nil {
			return err
		}
		if opt.Log != nil && res.Fetched+res.Removed > 0 {
			opt.Log.Info("imap: synced", "mailbox", t.String(), "fetched", res.Fetched, "removed", res.Removed,
				"uidvalidity_changed", res.Revalidated, "seconds", fmt.Sprintf("%.2f", res.Seconds))
		}
		if err := waitForMail(ctx, t, opt, interval); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// waitForMail returns when the mailbox may hold new mail: at a change IDLE
// reports, or after interval.
func waitForMail(ctx context.Context, t Target, opt Options, interval time.Duration) error {
	c, err := Connect(ctx, t, opt)
	if err != nil {
		return err
	}
	defer c.Logout()
	ok, err := c.Support("IDLE")
	if err != nil || !ok {
		c.Logout()
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
		return nil
	}
	updates := make(chan client.Update, 16)
	c.Updates = updates
	// Once this function stops reading them, updates are drained until the
	// connection is gone, so that the client never blocks on one.
	defer func() {
		go func() {
			for {
				select {
				case <-updates:
				case <-c.LoggedOut():
					return
				}
			}
		}()
	}()
	if _, err := c.Select(t.Mailbox, true); err != nil {
		return fmt.Errorf("imap %s: EXAMINE %q: %w", t, t.Mailbox, err)
	}
	stop := make(chan struct{})
	idled := make(chan error, 1)
	go func() { idled <- c.Idle(stop, &client.IdleOptions{LogoutTimeout: 0, PollInterval: interval}) }()
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			close(stop)
			<-idled
			return nil
		case <-timer.C:
			close(stop)
			return <-idled
		case err := <-idled:
			return err
		case u := <-updates:
			switch u.(type) {
			case *client.MailboxUpdate, *client.ExpungeUpdate:
				close(stop)
				return <-idled
			}
		}
	}
}
