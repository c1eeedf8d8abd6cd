package main

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeCommands parses every docker-compose.yml command that runs vplayer-load with its
// flag set.
func TestComposeCommands(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Entrypoint []string `yaml:"entrypoint"`
			Command    []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, s := range c.Services {
		if len(s.Entrypoint) == 0 || !strings.HasSuffix(s.Entrypoint[0], "/vplayer-load") {
			continue
		}
		n++
		fs, o := newFlags()
		if err := fs.Parse(s.Command); err != nil {
			t.Errorf("service %s: vplayer-load %q: %v", name, s.Command, err)
		}
		if o.source == "" {
			t.Errorf("service %s: vplayer-load %q has no --source", name, s.Command)
		}
	}
	if n < 2 {
		t.Errorf("%d services run vplayer-load, want the schema and load services", n)
	}
}
