package applier

import "testing"

func TestParseXID(t *testing.T) {
	gtrid, bqual, format, err := parseXID("x'6162',x'6364',7")
	if err != nil || string(gtrid) != "ab" || string(bqual) != "cd" || format != 7 {
		t.Errorf("parseXID = %q, %q, %d, %v; want ab, cd, 7", gtrid, bqual, format, err)
	}
	if _, bqual, _, err := parseXID("x'61',x'',1"); err != nil || len(bqual) != 0 {
		t.Errorf("parseXID of an empty bqual: %q, %v", bqual, err)
	}
	for _, bad := range []string{"'a'", "x'61',x'',", "x'6g',x'',1", "61,x'',1"} {
		if _, _, _, err := parseXID(bad); err == nil {
			t.Errorf("parseXID(%q): no error", bad)
		}
	}
}
