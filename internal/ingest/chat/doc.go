// Package chat reads chat exports: Slack export folders, Telegram Desktop (JSON
// and HTML), WhatsApp "Export chat" text (its many timestamp layouts: wastamp.go),
// DiscordChatExporter (JSON, CSV, HTML), Signal, iMessage, LINE, Hangouts, Google
// Chat, Teams/Skype, Mattermost, Zulip, Matrix/Element, IRC logs and Facebook and
// Instagram Messenger. One file per platform, named after it; each conversation
// becomes one source per month (readkit.ChatSources) that a later export of the
// same conversation adds to.
package chat
