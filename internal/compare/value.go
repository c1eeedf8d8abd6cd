package compare

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
)

// showLimit is how many bytes of a value a difference shows.
const showLimit = 32

// sameValue reports whether two values read in the same form are the same: bytes equal, floats
// with equal bits (so 0 and -0 differ, and so does every last bit), NULL equal only to NULL.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	default:
		return a == b
	}
}

// show renders a value read in form f for a difference's description: text quoted, bytes in hex,
// a float as its shortest decimal and its bits.
func show(f form, v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float32:
		return fmt.Sprintf("%s (bits 0x%08x)", strconv.FormatFloat(float64(x), 'g', -1, 32), math.Float32bits(x))
	case float64:
		return fmt.Sprintf("%s (bits 0x%016x)", strconv.FormatFloat(x, 'g', -1, 64), math.Float64bits(x))
	case []byte:
		switch f {
		case formHex:
			// Already hex text: two characters a byte.
			if len(x) > 2*showLimit {
				return "0x" + string(x[:2*showLimit]) + "..."
			}
			return "0x" + string(x)
		case formBytes:
			if len(x) > showLimit {
				return "0x" + hex.EncodeToString(x[:showLimit]) + "..."
			}
			return "0x" + hex.EncodeToString(x)
		default:
			if len(x) > 2*showLimit {
				return strconv.Quote(string(x[:2*showLimit])) + "..."
			}
			return strconv.Quote(string(x))
		}
	default:
		return fmt.Sprintf("%v (%T)", v, v)
	}
}
