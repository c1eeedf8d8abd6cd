package cli

import (
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of docker-compose.yml the test reads.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Configs  map[string]struct {
		Content string `yaml:"content"`
	} `yaml:"configs"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Restart string `yaml:"restart"`
	Configs []struct {
		Source string `yaml:"source"`
		Target string `yaml:"target"`
	} `yaml:"configs"`
}

// repoRoot is the module's root, where docker-compose.yml and the Dockerfile live.
const repoRoot = "../.."

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(false)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// TestCompose checks docker-compose.yml against the command line and itself: vplayer's command
// parses and validates with the real flag set, its DSNs name the MySQL services without a
// password, its metrics port is published and is the one the load generator waits on, every
// dependency's condition can be met, and the images are what the file says.
func TestCompose(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{"source", "target", "schema", "vplayer", "load"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("docker-compose.yml has no %s service", name)
		}
	}

	// The MySQL servers.
	src, dst := c.Services["source"], c.Services["target"]
	for name, s := range map[string]composeService{"source": src, "target": dst} {
		if s.Image != "mysql:8.4" {
			t.Errorf("%s image %q, want mysql:8.4", name, s.Image)
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) < 2 || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), "mysqladmin ping") {
			t.Errorf("%s has no mysqladmin ping healthcheck", name)
		}
	}
	for _, want := range []string{"--log-bin=binlog", "--gtid-mode=ON", "--enforce-gtid-consistency=ON", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL"} {
		if !slices.Contains(src.Command, want) {
			t.Errorf("source command %q lacks %s", src.Command, want)
		}
	}
	if sid, tid := serverID(src.Command), serverID(dst.Command); sid == "" || sid == tid {
		t.Errorf("source and target server ids %q and %q, want two distinct ids", sid, tid)
	}

	// vplayer's command, parsed and validated by the real flag set.
	vp := c.Services["vplayer"]
	if len(vp.Command) == 0 || vp.Command[0] != "run" {
		t.Fatalf("vplayer command %q, want run ...", vp.Command)
	}
	fs, f := newRunFlags(io.Discard)
	if err := fs.Parse(vp.Command[1:]); err != nil {
		t.Fatalf("vplayer command %q: %v", vp.Command, err)
	}
	if err := f.validate(); err != nil {
		t.Errorf("vplayer command %q: %v", vp.Command, err)
	}
	users := map[string]string{} // user → server whose configs create it
	for _, s := range []string{"source", "target"} {
		for _, cf := range c.Services[s].Configs {
			cfg, ok := c.Configs[cf.Source]
			if !ok {
				t.Errorf("%s uses config %s, which is not defined", s, cf.Source)
			}
			if !strings.HasPrefix(cf.Target, "/docker-entrypoint-initdb.d/") {
				t.Errorf("%s mounts config %s at %s, want /docker-entrypoint-initdb.d/", s, cf.Source, cf.Target)
			}
			for _, m := range regexp.MustCompile(`CREATE USER '([^']+)'`).FindAllStringSubmatch(cfg.Content, -1) {
				users[m[1]] = s
			}
		}
	}
	checkDSN := func(service, flag, dsn, wantServer, passwordEnv string, env map[string]string) {
		t.Helper()
		e, err := parseDSN(flag, dsn, "VPLAYER_UNSET_FOR_TEST")
		if err != nil {
			t.Errorf("%s --%s %q: %v", service, flag, dsn, err)
			return
		}
		if e.host != wantServer || e.port != 3306 {
			t.Errorf("%s --%s reaches %s:%d, want the %s service on 3306", service, flag, e.host, e.port, wantServer)
		}
		if e.cfg.Passwd != "" {
			t.Errorf("%s --%s has a password in the DSN, want it in %s", service, flag, passwordEnv)
		}
		if env[passwordEnv] == "" {
			t.Errorf("%s sets no %s for --%s", service, passwordEnv, flag)
		}
		if users[e.cfg.User] != wantServer {
			t.Errorf("%s --%s logs in as %s, which the %s service's configs do not create", service, flag, e.cfg.User, wantServer)
		}
	}
	checkDSN("vplayer", "source", f.source, "source", "VPLAYER_SOURCE_PASSWORD", vp.Environment)
	checkDSN("vplayer", "target", f.target, "target", "VPLAYER_TARGET_PASSWORD", vp.Environment)

	// Metrics: published, and what the load generator waits on.
	_, metricsPort, err := net.SplitHostPort(f.metricsAddr)
	if err != nil || f.metricsAddr == "" {
		t.Fatalf("vplayer --metrics-addr %q, want HOST:PORT", f.metricsAddr)
	}
	if !slices.ContainsFunc(vp.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+metricsPort) }) {
		t.Errorf("vplayer ports %q do not publish the metrics port %s", vp.Ports, metricsPort)
	}
	load := c.Services["load"]
	waitFor := argValue(load.Command, "--wait-for")
	u, err := url.Parse(waitFor)
	if err != nil || u.Hostname() != "vplayer" || u.Port() != metricsPort || u.Path != "/healthz" {
		t.Errorf("load --wait-for %q, want http://vplayer:%s/healthz", waitFor, metricsPort)
	}
	for _, s := range []string{"schema", "load"} {
		svc := c.Services[s]
		checkDSN(s, "source", argValue(svc.Command, "--source"), "source", "VPLAYER_SOURCE_PASSWORD", svc.Environment)
	}
	checkDSN("schema", "target", argValue(c.Services["schema"].Command, "--target"), "target", "VPLAYER_TARGET_PASSWORD", c.Services["schema"].Environment)

	// Dependencies, ports and images.
	hostPorts := map[string]string{}
	for name, s := range c.Services {
		for dep, d := range s.DependsOn {
			ds, ok := c.Services[dep]
			switch {
			case !ok:
				t.Errorf("%s depends on %s, which is not a service", name, dep)
			case d.Condition == "service_healthy" && ds.Healthcheck == nil:
				t.Errorf("%s waits for %s to be healthy, but %s has no healthcheck", name, dep, dep)
			case d.Condition == "service_completed_successfully" && ds.Restart != "no":
				t.Errorf("%s waits for %s to complete, but %s restarts (%q)", name, dep, dep, ds.Restart)
			case d.Condition != "service_healthy" && d.Condition != "service_completed_successfully" && d.Condition != "service_started":
				t.Errorf("%s depends on %s with condition %q", name, dep, d.Condition)
			}
		}
		for _, p := range s.Ports {
			host, _, _ := strings.Cut(p, ":")
			if other, dup := hostPorts[host]; dup {
				t.Errorf("host port %s published by both %s and %s", host, other, name)
			}
			hostPorts[host] = name
		}
		if s.Image == "" && s.Build == nil {
			t.Errorf("%s has neither an image nor a build", name)
		}
		if s.Build != nil {
			if s.Build != "." {
				t.Errorf("%s build %v, want the repository's Dockerfile (build: .)", name, s.Build)
			}
			for _, bin := range s.Entrypoint {
				if strings.HasPrefix(bin, "/") && !dockerfileInstalls(t, bin) {
					t.Errorf("%s entrypoint %s is not a binary the Dockerfile installs", name, bin)
				}
			}
		}
	}
	if d := c.Services["vplayer"].DependsOn["schema"]; d.Condition != "service_completed_successfully" {
		t.Errorf("vplayer starts before the schema exists (condition %q)", d.Condition)
	}
}

// TestDockerfile checks the Dockerfile's shape: a multi-stage build of static binaries onto an
// empty image.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 || froms[len(froms)-1][1] != "scratch" {
		t.Errorf("Dockerfile stages %v, want a build stage and a final FROM scratch", froms)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/vplayer ", "./cmd/vplayer-load", `ENTRYPOINT ["/usr/local/bin/vplayer"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if !dockerfileInstalls(t, "/usr/local/bin/vplayer") {
		t.Errorf("Dockerfile does not install /usr/local/bin/vplayer")
	}
}

// dockerfileInstalls reports whether the Dockerfile's final stage copies a file to path.
func dockerfileInstalls(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dir, file := filepath.Split(path)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "COPY" {
			continue
		}
		dest := f[len(f)-1]
		for _, src := range f[1 : len(f)-1] {
			if strings.HasPrefix(src, "--") {
				continue
			}
			if dest == path || (strings.HasSuffix(dest, "/") && dest == dir && filepath.Base(src) == file) {
				return true
			}
		}
	}
	return false
}

// argValue returns the value of a flag in a command given as "--flag value" or "--flag=value".
func argValue(cmd []string, flag string) string {
	for i, a := range cmd {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(cmd) {
			return cmd[i+1]
		}
	}
	return ""
}

func serverID(cmd []string) string { return argValue(cmd, "--server-id") }
