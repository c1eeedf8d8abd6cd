package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// statusSchemaDoc is the document of status --json's schema, whose last JSON block is the JSON
// Schema the output is checked against.
const statusSchemaDoc = "../../docs/status-json.md"

// loadStatusSchema reads the JSON Schema at the end of docs/status-json.md, and the whole page.
func loadStatusSchema(t *testing.T) (schema map[string]any, page string) {
	t.Helper()
	b, err := os.ReadFile(statusSchemaDoc)
	if err != nil {
		t.Fatal(err)
	}
	page = string(b)
	_, rest, ok := strings.Cut(page, "## JSON Schema")
	if !ok {
		t.Fatalf("%s has no \"## JSON Schema\" section", statusSchemaDoc)
	}
	_, block, ok := strings.Cut(rest, "```json\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatalf("%s: no ```json block in its JSON Schema section", statusSchemaDoc)
	}
	if err := decodeNumbers([]byte(block), &schema); err != nil {
		t.Fatalf("%s: the JSON Schema is not JSON: %v", statusSchemaDoc, err)
	}
	return schema, page
}

func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// checkSchema checks v against schema (the subset of JSON Schema the document uses: type, enum,
// properties, required, additionalProperties false, items, $ref into $defs) and returns every
// violation, each naming its path.
func checkSchema(root, schema map[string]any, v any, path string) []string {
	if ref, ok := schema["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		defs, _ := root["$defs"].(map[string]any)
		def, ok := defs[name].(map[string]any)
		if !found || !ok {
			return []string{fmt.Sprintf("%s: unresolved $ref %q", path, ref)}
		}
		return checkSchema(root, def, v, path)
	}
	if enum, ok := schema["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
			return []string{fmt.Sprintf("%s: %v is not one of %v", path, v, enum)}
		}
	}
	if typ, ok := schema["type"]; ok {
		var types []string
		switch x := typ.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, s := range x {
				types = append(types, s.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isJSONType(v, t) }) {
			return []string{fmt.Sprintf("%s: %v (%T) is not %s", path, v, v, strings.Join(types, " or "))}
		}
	}
	var out []string
	switch x := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asStrings(schema["required"]) {
			if _, ok := x[r]; !ok {
				out = append(out, fmt.Sprintf("%s: required key %q missing", path, r))
			}
		}
		for k, val := range x {
			p, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					out = append(out, fmt.Sprintf("%s: key %q is not in the schema", path, k))
				}
				continue
			}
			out = append(out, checkSchema(root, p, val, path+"."+k)...)
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range x {
				out = append(out, checkSchema(root, items, e, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return out
}

func isJSONType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		_, err := n.Int64()
		return ok && err == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}

func asStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, s := range l {
			out = append(out, s.(string))
		}
	}
	return out
}

// TestStatusJSON_schema checks status --json's output, in every golden case, against the JSON
// Schema of docs/status-json.md, and that the page's prose names every key of the schema.
func TestStatusJSON_schema(t *testing.T) {
	schema, page := loadStatusSchema(t)
	for _, tc := range statusCases(t) {
		var b bytes.Buffer
		if err := renderStatusJSON(&b, tc.rep); err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := decodeNumbers(b.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, v := range checkSchema(schema, schema, doc, "$") {
			t.Errorf("%s: %s", tc.name, v)
		}
	}
	var keys func(s map[string]any)
	seen := map[string]bool{}
	keys = func(s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			seen[k] = true
			if m, ok := p.(map[string]any); ok {
				keys(m)
			}
		}
		if defs, ok := s["$defs"].(map[string]any); ok {
			for _, d := range defs {
				keys(d.(map[string]any))
			}
		}
	}
	keys(schema)
	prose, _, _ := strings.Cut(page, "## JSON Schema")
	for k := range seen {
		if !strings.Contains(prose, "`"+k+"`") {
			t.Errorf("%s's tables do not describe the key %q", statusSchemaDoc, k)
		}
	}
}

// TestCheckSchema makes sure the schema check finds what it must.
func TestCheckSchema(t *testing.T) {
	schema, _ := loadStatusSchema(t)
	var good bytes.Buffer
	cases := statusCases(t)
	if err := renderStatusJSON(&good, cases[len(cases)-1].rep); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"unknown key", `"schema_version": 1,`, `"schema_version": 1, "extra": true,`, `key "extra" is not in the schema`},
		{"missing key", `"generated_at": `, `"generated_atx": `, `required key "generated_at" missing`},
		{"wrong type", `"healthy": true`, `"healthy": "yes"`, `.healthy: yes (string) is not boolean`},
		{"wrong version", `"schema_version": 1`, `"schema_version": 2`, `is not one of`},
		{"fraction for an integer", `"id": 1,`, `"id": 1.5,`, `.id: 1.5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(good.String(), tc.from, tc.to, 1)
			if bad == good.String() {
				t.Fatalf("%q is not in the output", tc.from)
			}
			var doc any
			if err := decodeNumbers([]byte(bad), &doc); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(checkSchema(schema, schema, doc, "$"), "\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("violations %q, want one containing %q", got, tc.want)
			}
		})
	}
}
