package metrics

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/workflow"
)

// dashboardFile is the Grafana dashboard shipped with vplayer.
const dashboardFile = "../dashboards/vplayer.json"

var metricName = regexp.MustCompile(`\bvplayer_[a-z_]+\b`)

// offDashboard lists the metrics /metrics shows that the dashboard leaves off on purpose, each
// with the reason; an entry ending in "*" covers every metric with that prefix. Every other
// registered metric must be on the dashboard.
var offDashboard = map[string]string{
	"go_*":      "the Go runtime's own metrics (client_golang's Go collector): for profiling vplayer itself, as on any Go service's dashboard",
	"process_*": "the process's CPU, memory and file descriptors (client_golang's process collector): node and container dashboards show these",
}

// descName reads a metric's name from its description; client_golang has no accessor for it.
var descName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

// describedNames returns the name of every metric the collectors describe, sorted.
func describedNames(t *testing.T, cs ...prometheus.Collector) []string {
	t.Helper()
	names := map[string]bool{}
	for _, c := range cs {
		ch := make(chan *prometheus.Desc)
		go func() {
			c.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			m := descName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the metric name of %s", d)
			}
			names[m[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// fedCollector returns a collector whose every series exists, those created only once non-zero
// (row mismatches by table and kind, errors of a MySQL error number) included.
func fedCollector() *Collector {
	col, _ := newTestCollector()
	col.OnState(workflow.StateRunning)
	col.start(&fakePipeline{s: sample{
		transactions: 1, rows: 1, commits: 1, saves: 1,
		mismatches: map[applier.MismatchKey]int64{{Table: "shop.orders", Kind: applier.UpdateMissing}: 1},
	}})
	col.OnError(&stall.Error{Detector: stall.Applier}, false)
	col.OnError(&mysql.MySQLError{Number: 1205}, false)
	return col
}

// exportedTypes returns the type of every metric the collectors export, by name.
func exportedTypes(t *testing.T, cs ...prometheus.Collector) map[string]dto.MetricType {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]dto.MetricType{}
	for _, f := range families {
		types[f.GetName()] = f.GetType()
	}
	return types
}

// offDashboardReason returns why name is left off the dashboard, or "" when it is not.
func offDashboardReason(name string) string {
	for entry, reason := range offDashboard {
		if covers(entry, name) {
			return reason
		}
	}
	return ""
}

// covers says whether an offDashboard entry covers the metric name.
func covers(entry, name string) bool {
	if prefix, ok := strings.CutSuffix(entry, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return entry == name
}

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

// TestDashboard_metrics checks the dashboard against every metric the process registers, taken
// from the collectors' descriptions (not from a scrape, which lacks the series that appear only
// once non-zero): each metric the dashboard queries is exported, with the type its suffix and
// functions imply, and each registered metric is on the dashboard or in offDashboard.
func TestDashboard_metrics(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	col := fedCollector()
	cs := registered(col)
	names := describedNames(t, cs...)
	exported := exportedTypes(t, cs...)
	for _, name := range names {
		if _, ok := exported[name]; !ok && strings.HasPrefix(name, "vplayer_") {
			t.Errorf("metric %s is described but fedCollector produces no series of it: feed it, so that its type is checked", name)
		}
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
	for _, name := range names {
		reason := offDashboardReason(name)
		switch {
		case used[name] && reason != "":
			t.Errorf("metric %s is on the dashboard and in offDashboard (%q): take it out of offDashboard", name, reason)
		case !used[name] && reason == "":
			t.Errorf("metric %s is not on the dashboard: add a panel, or add it to offDashboard with the reason", name)
		}
	}
	for entry := range offDashboard {
		if !slices.ContainsFunc(names, func(n string) bool { return covers(entry, n) }) {
			t.Errorf("offDashboard lists %s, which covers no registered metric", entry)
		}
	}
}
