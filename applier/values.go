package applier

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/vplayer/vplayer/sqlq"
)

// appendValue appends v, as the reader decoded it for column c, as an SQL literal that stores
// exactly the source's value. Signed integers are reinterpreted for unsigned columns (the binlog
// does not say which columns are unsigned unless the source logs full metadata).
func appendValue(b []byte, c *column, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "NULL"...), nil
	case int8:
		if c.unsigned {
			return strconv.AppendUint(b, uint64(uint8(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		if c.unsigned {
			return strconv.AppendUint(b, uint64(uint16(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		if c.unsigned {
			if c.dataType == "mediumint" {
				return strconv.AppendUint(b, uint64(uint32(x)&0xffffff), 10), nil
			}
			return strconv.AppendUint(b, uint64(uint32(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		if c.unsigned || c.dataType == "bit" {
			return strconv.AppendUint(b, uint64(x), 10), nil
		}
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case float32:
		return appendFloat(b, float64(x), 32)
	case float64:
		return appendFloat(b, x, 64)
	case decimal.Decimal:
		return append(b, x.String()...), nil
	case string:
		return sqlq.AppendString(b, x), nil
	case []byte:
		return sqlq.AppendBytes(b, x), nil
	case time.Time:
		return sqlq.AppendString(b, x.UTC().Format("2006-01-02 15:04:05.999999")), nil
	case fmt.Stringer:
		return sqlq.AppendString(b, x.String()), nil
	}
	return b, fmt.Errorf("column %s: cannot write a value of Go type %T", c.name, v)
}

func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("float value %v cannot be stored", f)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits), nil
}
