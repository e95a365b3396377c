package cli

import (
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
		{[]string{"127.0.0.1:1:0:3"}, nil, "group 1 has no stores"},
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
