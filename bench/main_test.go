package main

import (
	"strings"
	"testing"
	"time"
)

func TestConfigParse(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		c                        config
		sizes, systems, layouts  string
		soak, interval           time.Duration
		wantErr                  string
		wantSystems, wantLayouts int
	}{
		{name: "defaults", c: config{Runs: 3, Count: 10, Sources: 1, Flight: 1, Payload: "random", DiskMiB: 1, Catchup: true},
			sizes: "64,1024", systems: "umstore,umstore-1g,js-sync,js-default", layouts: "1x3,2x3", wantSystems: 4, wantLayouts: 2},
		{name: "bad system", c: config{Runs: 1, Count: 1, Sources: 1, Flight: 1, Payload: "random", DiskMiB: 1},
			sizes: "64", systems: "umstore,nats", wantErr: "--systems"},
		{name: "bad layout", c: config{Runs: 1, Count: 1, Sources: 1, Flight: 1, Payload: "random", DiskMiB: 1, Catchup: true},
			sizes: "64", systems: "umstore", layouts: "3x3", wantErr: "--catchup-layouts"},
		{name: "bad payload", c: config{Runs: 1, Count: 1, Sources: 1, Flight: 1, Payload: "zeros", DiskMiB: 1},
			sizes: "64", systems: "umstore", wantErr: "--payload"},
		{name: "short soak interval", c: config{Runs: 1, Count: 1, Sources: 1, Flight: 1, Payload: "text", DiskMiB: 1, SoakSize: 64, SoakRetentionMB: 1},
			sizes: "64", systems: "umstore", soak: time.Minute, interval: time.Second, wantErr: "--soak-interval"},
		{name: "size too small", c: config{Runs: 1, Count: 1, Sources: 1, Flight: 1, Payload: "text", DiskMiB: 1},
			sizes: "4", systems: "umstore", wantErr: "--sizes"},
	} {
		c := tc.c
		msg := c.parse(tc.sizes, tc.systems, tc.layouts, tc.soak, tc.interval)
		switch {
		case tc.wantErr == "" && msg != "":
			t.Errorf("%s: %s", tc.name, msg)
		case tc.wantErr != "" && !strings.Contains(msg, tc.wantErr):
			t.Errorf("%s: error %q, want one about %s", tc.name, msg, tc.wantErr)
		case tc.wantErr == "" && (len(c.Systems) != tc.wantSystems || len(c.CatchupLayouts) != tc.wantLayouts):
			t.Errorf("%s: %d systems, %d layouts", tc.name, len(c.Systems), len(c.CatchupLayouts))
		}
	}
}
