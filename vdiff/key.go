package vdiff

import "github.com/vplayer/vplayer/tabledef"

// keyKind names id, a table's row identity, for TableResult.KeyKind.
func keyKind(id tabledef.Identity) string {
	switch id.Kind {
	case tabledef.KeyPrimary:
		return KeyPrimary
	case tabledef.KeyUnique:
		return KeyUnique + " " + id.Index
	}
	return KeyNone
}
