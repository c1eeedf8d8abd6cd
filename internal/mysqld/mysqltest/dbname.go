package mysqltest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// maxIdent is MySQL's limit on a database name, in characters.
const maxIdent = 64

// DBName returns a database name for the test: "t_" and t.Name() lowercased, with every
// character outside [a-z0-9_] replaced by '_'. A name longer than 64 characters is cut and ends
// with '_' and 8 hex digits of a hash of t.Name(), so distinct tests keep distinct names.
func DBName(t testing.TB) string {
	return dbName(t.Name())
}

func dbName(testName string) string {
	var b strings.Builder
	b.WriteString("t_")
	for _, r := range strings.ToLower(testName) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= maxIdent {
		return name
	}
	sum := sha256.Sum256([]byte(testName))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:maxIdent-len(suffix)] + suffix
}
