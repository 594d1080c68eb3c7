package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/principal"
)

// newTokensCmd is `openhuman-core tokens`: the bearer tokens of serve's
// principals (internal/principal), each reading only the sources its scope
// allows.
func newTokensCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "Mint, list and revoke the bearer tokens of serve's principals (people, agents), each with its own scope",
		Long: `A principal is a person or an agent reading the memory tree through serve (/mcp and /rpc)
with its own bearer token, which sees only the sources its scope allows: search, recall,
browse, chunk, entities and sources of every tool answer as if the other sources did not
exist (the store's queries carry the scope, on SQLite and PostgreSQL alike). The operator
token (OPENHUMAN_CORE_TOKEN or <workspace>/core.token) keeps full access.

Patterns: a glob over source ids, where * is any run of characters ('doc:*', 'email:*',
'slack:#eng*'), or a kind (kind:email, kind:chat, kind:document). A chunk is readable when
its source matches an --allow pattern and no --deny pattern.

Tokens are stored hashed (SHA-256) in <workspace>/principals.json (mode 0600), one place for
both store backends; a running serve sees a change at its next request. Quote globs in the
shell.`,
	}
	var allow, deny []string
	add := &cobra.Command{
		Use:   "add NAME --allow GLOB [--allow GLOB]... [--deny GLOB]...",
		Short: "Mint a token for principal NAME (printed once, on the last line of stdout)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(setupLogging(cmd.ErrOrStderr()))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			path := principal.Path(cfg.Workspace)
			token, err := principal.Add(path, args[0], allow, deny, time.Now())
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("tokens add: %w", err)}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "principal %s: allow %s", args[0], strings.Join(allow, ", "))
			if len(deny) > 0 {
				fmt.Fprintf(out, "; deny %s", strings.Join(deny, ", "))
			}
			fmt.Fprintf(out, "\nstored hashed in %s; the token is shown only now (send it as Authorization: Bearer <token>):\n%s\n", path, token)
			return nil
		},
	}
	add.Flags().StringArrayVar(&allow, "allow", nil, "a source-id glob ('doc:*') or kind (kind:email) the principal may read; repeatable; '*' for everything")
	add.Flags().StringArrayVar(&deny, "deny", nil, "a source-id glob or kind the principal may not read, even when allowed; repeatable")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the principals and their scopes (never their tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(setupLogging(cmd.ErrOrStderr()))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			rs, err := principal.Load(principal.Path(cfg.Workspace))
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("tokens list: %w", err)}
			}
			if len(rs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no principals: only the operator token reaches serve (openhuman-core tokens add NAME --allow GLOB mints one)")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tALLOW\tDENY\tCREATED")
			for _, r := range rs {
				d := strings.Join(r.Deny, " ")
				if d == "" {
					d = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, strings.Join(r.Allow, " "), d, r.Created.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke principal NAME's token (refused from serve's next request on)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(setupLogging(cmd.ErrOrStderr()))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := principal.Revoke(principal.Path(cfg.Workspace), args[0]); err != nil {
				return &exitError{code: 2, err: fmt.Errorf("tokens revoke: %w", err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "principal %s revoked\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(add, list, revoke)
	return cmd
}

// checkPrincipals is doctor's check of the principals file: it reads, and how
// many tokens serve accepts besides the operator's.
func checkPrincipals(cfg *config.Config) (string, string, string, string) {
	path := principal.Path(cfg.Workspace)
	rs, err := principal.Load(path)
	switch {
	case err != nil:
		return "principals", checkFail, err.Error() + "; serve accepts only the operator token meanwhile", "restore the file, or move it aside and mint the tokens again (openhuman-core tokens add)"
	case len(rs) == 0:
		return "principals", checkSkip, "none (serve takes the operator token only; optional: openhuman-core tokens add NAME --allow GLOB)", ""
	}
	return "principals", checkOK, fmt.Sprintf("%d scoped tokens in %s (openhuman-core tokens list)", len(rs), path), ""
}
