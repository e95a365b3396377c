package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseStores(t *testing.T) {
	tests := []struct {
		specs   []string
		want    [][]string
		wantErr string
	}{
		{[]string{"127.0.0.1:15011"}, [][]string{{"127.0.0.1:15011"}}, ""},
		{[]string{"127.0.0.1:1:0:1", "127.0.0.1:2:0:2", "127.0.0.1:3:0:1"}, [][]string{{"127.0.0.1:1", "127.0.0.1:3"}, {"127.0.0.1:2"}}, ""},
		{[]string{"localhost:1"}, nil, "not an IP"},
		{[]string{"127.0.0.1:99999"}, nil, "port"},
		// GroupIDX labels a group (UM numbers them from 0): a lone label 3
		// is one group, not a list with holes.
		{[]string{"127.0.0.1:1:0:3"}, [][]string{{"127.0.0.1:1"}}, ""},
		{[]string{"127.0.0.1"}, nil, "want IP:port"},
	}
	for _, tt := range tests {
		got, err := ParseStores(tt.specs)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseStores(%v) error = %v, want %q", tt.specs, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseStores(%v) = %v, %v; want %v", tt.specs, got, err, tt.want)
		}
	}
}

func TestStoreGroupsNeedsOneSource(t *testing.T) {
	if _, _, err := StoreGroups("", nil); err == nil || !strings.Contains(err.Error(), "--deployment") {
		t.Fatalf("no source: %v", err)
	}
	if _, _, err := StoreGroups("d.yaml", []string{"127.0.0.1:1"}); err == nil {
		t.Fatal("both sources accepted")
	}
}

func TestLoggerFormats(t *testing.T) {
	var text bytes.Buffer
	log, err := Logger(&text, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("hello", "store", "G1S1")
	if got := text.String(); !strings.Contains(got, "level=INFO msg=hello store=G1S1") || strings.Contains(got, "hidden") {
		t.Errorf("text log:\n%s", got)
	}

	var js bytes.Buffer
	log, err = Logger(&js, "debug", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hello", "store", "G1S1")
	var rec map[string]any
	if err := json.Unmarshal(js.Bytes(), &rec); err != nil {
		t.Fatalf("json log is not one JSON object: %v\n%s", err, js.String())
	}
	if rec["level"] != "DEBUG" || rec["msg"] != "hello" || rec["store"] != "G1S1" {
		t.Errorf("json log record: %v", rec)
	}

	var def bytes.Buffer
	if log, err = Logger(&def, "warn", ""); err != nil {
		t.Fatalf("empty format: %v", err)
	}
	log.Warn("w")
	if !strings.HasPrefix(def.String(), "time=") {
		t.Errorf("empty format is not text: %s", def.String())
	}
}

func TestLoggerRejects(t *testing.T) {
	tests := []struct{ level, format, want string }{
		{"loud", "text", `--log-level "loud": want debug, info, warn or error`},
		{"info", "xml", `--log-format "xml": want text or json`},
		{"info", "JSONL", `--log-format "JSONL"`},
	}
	for _, tt := range tests {
		if _, err := Logger(&bytes.Buffer{}, tt.level, tt.format); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Logger(%q, %q) error = %v, want %q", tt.level, tt.format, err, tt.want)
		}
	}
}
