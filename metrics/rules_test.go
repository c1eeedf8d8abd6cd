package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"
)

// rulesFile holds the alert rules shipped with vplayer; promtool tests their logic (make rules),
// this test that they query what the collector exports and link to their runbooks.
const rulesFile = "../deploy/prometheus/vplayer-rules.yml"

// runbookFile holds the rules' runbooks, one section per alert; runbookURL is where it is
// published, which each rule's runbook_url names with the section's anchor.
const (
	runbookFile = "../docs/operations.md"
	runbookURL  = "https://github.com/vplayer/vplayer/blob/main/docs/operations.md"
)

var (
	increaseOf = regexp.MustCompile(`\b(?:increase|rate)\((vplayer_[a-z_]+)`)
	stateValue = regexp.MustCompile(`vplayer_state\{state=~?"([^"]+)"\}`)
)

// TestRules_metricsExist checks that every metric an alert rule uses is one the collector exports,
// that increase and rate are taken of counters only, and that the states named are States.
func TestRules_metricsExist(t *testing.T) {
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	// Every metric, those whose series appear only once non-zero included.
	exported := exportedTypes(t, registered(fedCollector())...)
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			for _, name := range metricName.FindAllString(r.Expr, -1) {
				if _, ok := exported[name]; !ok {
					t.Errorf("rule %s uses %s, which vplayer does not export", r.Alert, name)
				}
			}
			for _, m := range increaseOf.FindAllStringSubmatch(r.Expr, -1) {
				if typ, ok := exported[m[1]]; ok && typ != dto.MetricType_COUNTER {
					t.Errorf("rule %s takes the increase of %s, a %v", r.Alert, m[1], typ)
				}
			}
			for _, m := range stateValue.FindAllStringSubmatch(r.Expr, -1) {
				for _, st := range strings.Split(m[1], "|") {
					if !slices.Contains(States, st) {
						t.Errorf("rule %s names state %q; the states are %v", r.Alert, st, States)
					}
				}
			}
		}
	}
	if n < 9 {
		t.Errorf("found %d rules in %s, want at least the nine alerts", n, rulesFile)
	}
}

var heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// anchor returns the fragment GitHub gives a Markdown heading: lower case, punctuation other
// than hyphens and underscores dropped, spaces turned into hyphens.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestRules_runbooks checks that every alert rule has a runbook_url naming a section of
// docs/operations.md, the one headed with the alert's name.
func TestRules_runbooks(t *testing.T) {
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	doc, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]string{}
	for _, m := range heading.FindAllStringSubmatch(string(doc), -1) {
		anchors[anchor(m[1])] = m[1]
	}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			url := r.Annotations["runbook_url"]
			if url == "" {
				t.Errorf("rule %s has no runbook_url annotation", r.Alert)
				continue
			}
			frag, ok := strings.CutPrefix(url, runbookURL+"#")
			if !ok {
				t.Errorf("rule %s: runbook_url %q, want %s#<section>", r.Alert, url, runbookURL)
				continue
			}
			h, ok := anchors[frag]
			if !ok {
				t.Errorf("rule %s: runbook_url %q names no section of %s", r.Alert, url, runbookFile)
				continue
			}
			if h != r.Alert {
				t.Errorf("rule %s: runbook_url %q names the section %q, want the one headed %s", r.Alert, url, h, r.Alert)
			}
		}
	}
}
