package preflight

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// reloadProblem returns preflight's line for a MySQL source whose user lacks RELOAD, which the
// copy's snapshots need (FLUSH TABLES WITH READ LOCK, held while each snapshot starts), empty when
// the user holds it. It reads the user's grants with those of its active roles; when they cannot
// be read it says nothing, and the copy's own error names the privilege if it is missing.
func reloadProblem(ctx context.Context, src *sql.DB) string {
	conn, err := src.Conn(ctx)
	if err != nil {
		return ""
	}
	defer conn.Close()
	var user string
	if err := conn.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&user); err != nil {
		return ""
	}
	stmt := "SHOW GRANTS FOR CURRENT_USER()"
	var roles sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT CURRENT_ROLE()").Scan(&roles); err == nil && roles.Valid &&
		roles.String != "" && !strings.EqualFold(roles.String, "NONE") {
		stmt += " USING " + roles.String // the server's own list: `r1`@`%`,`r2`@`%`
	}
	rows, err := conn.QueryContext(ctx, stmt)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var grants []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return ""
		}
		grants = append(grants, g)
	}
	if rows.Err() != nil || hasGlobalPrivilege(grants, "RELOAD") {
		return ""
	}
	return fmt.Sprintf("source: user %s lacks the RELOAD privilege, which the copy needs on MySQL for the brief FLUSH TABLES WITH READ LOCK of each snapshot: GRANT RELOAD ON *.* TO %s",
		user, accountSQL(user))
}

// hasGlobalPrivilege reports whether grants, the lines of SHOW GRANTS, give priv (in upper case)
// on *.*, by name or as ALL [PRIVILEGES].
func hasGlobalPrivilege(grants []string, priv string) bool {
	for _, g := range grants {
		rest, ok := strings.CutPrefix(strings.ToUpper(strings.TrimSpace(g)), "GRANT ")
		if !ok {
			continue
		}
		privs, target, ok := strings.Cut(rest, " ON ")
		if !ok {
			continue // a role granted: GRANT `r`@`%` TO ...
		}
		if on, _, _ := strings.Cut(strings.TrimSpace(target), " "); on != "*.*" {
			continue
		}
		for p := range strings.SplitSeq(privs, ",") {
			switch strings.TrimSpace(p) {
			case priv, "ALL", "ALL PRIVILEGES":
				return true
			}
		}
	}
	return false
}

// accountSQL renders CURRENT_USER()'s user@host as an account name in SQL: 'user'@'host'.
func accountSQL(user string) string {
	name, host := user, "%"
	if i := strings.LastIndexByte(user, '@'); i >= 0 {
		name, host = user[:i], user[i+1:]
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	return quote(name) + "@" + quote(host)
}
