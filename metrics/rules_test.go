package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"
)

// rulesFile holds the alert rules shipped with vplayer; promtool tests their logic (make rules),
// this test that they query what the collector exports.
const rulesFile = "../deploy/prometheus/vplayer-rules.yml"

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
