package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// dashboardFile is the Grafana dashboard shipped with vplayer.
const dashboardFile = "../dashboards/vplayer.json"

var metricName = regexp.MustCompile(`\bvplayer_[a-z_]+\b`)

// queries returns every PromQL query in a Grafana dashboard: targets' expr and templating
// queries, wherever they nest.
func queries(v any, key string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			queries(e, k, out)
		}
	case []any:
		for _, e := range x {
			queries(e, key, out)
		}
	case string:
		if key == "expr" || key == "query" || key == "definition" {
			*out = append(*out, x)
		}
	}
}

// TestDashboard_metricsExist checks that every metric the dashboard queries is one the collector
// exports, with the type its suffix implies.
func TestDashboard_metricsExist(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	col, _ := newTestCollector()
	col.start(&fakePipeline{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]dto.MetricType{}
	for _, f := range families {
		exported[f.GetName()] = f.GetType()
	}

	var qs []string
	queries(dash, "", &qs)
	if len(qs) < 10 {
		t.Fatalf("found %d queries in %s, want the dashboard's panels", len(qs), dashboardFile)
	}
	used := map[string]bool{}
	for _, q := range qs {
		for _, name := range metricName.FindAllString(q, -1) {
			base, typ := name, dto.MetricType(-1)
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok {
					if _, isMetric := exported[name]; !isMetric {
						base, typ = b, dto.MetricType_HISTOGRAM
					}
				}
			}
			got, ok := exported[base]
			if !ok {
				t.Errorf("dashboard query %q uses %s, which vplayer does not export", q, name)
				continue
			}
			if typ == dto.MetricType_HISTOGRAM && got != typ {
				t.Errorf("dashboard query %q uses %s, but %s is a %v, not a histogram", q, name, base, got)
			}
			if strings.Contains(q, "rate("+name) || strings.Contains(q, "increase("+name) {
				if got != dto.MetricType_COUNTER && typ != dto.MetricType_HISTOGRAM {
					t.Errorf("dashboard query %q takes the rate of %s, a %v", q, name, got)
				}
			}
			used[base] = true
		}
	}
	for name := range exported {
		if !used[name] {
			t.Errorf("metric %s is not on the dashboard", name)
		}
	}
}
