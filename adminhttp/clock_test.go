package adminhttp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"umstore/internal/wallclock"
	"umstore/placement"
)

// The clock is stepped only through a server started with Options.Clock;
// a step is answered with the offset it replaced, a bad offset or one
// over a year either way is refused,
// and 0s puts the clock back.
func TestClockStepOnlyWithTheFlag(t *testing.T) {
	t.Cleanup(func() { wallclock.Set(0) })
	d := placement.Dev("127.0.0.1", 30000)
	off := httptest.NewServer(newServer(d, nil, Options{}).Handler)
	defer off.Close()
	if resp, err := http.PostForm(off.URL+"/debug/clock", url.Values{"offset": {"1h"}}); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("step without Options.Clock: %v, %v; want 404", resp.StatusCode, err)
	}
	on := httptest.NewServer(newServer(d, nil, Options{Clock: true}).Handler)
	defer on.Close()
	steps := []struct {
		offset   string
		code     int
		previous string
		now      time.Duration // wallclock.Offset after the request
	}{
		{"90m", http.StatusOK, "0s", 90 * time.Minute},
		{"-2h", http.StatusOK, "1h30m0s", -2 * time.Hour},
		{"soon", http.StatusBadRequest, "", -2 * time.Hour},
		{"9000h", http.StatusBadRequest, "", -2 * time.Hour},  // over a year
		{"-9000h", http.StatusBadRequest, "", -2 * time.Hour}, // likewise
		{"8784h", http.StatusOK, "-2h0m0s", 8784 * time.Hour}, // a year exactly
		{"-2h", http.StatusOK, "8784h0m0s", -2 * time.Hour},
		{"0s", http.StatusOK, "-2h0m0s", 0},
	}
	for _, s := range steps {
		resp, err := http.PostForm(on.URL+"/debug/clock", url.Values{"offset": {s.offset}})
		if err != nil {
			t.Fatal(err)
		}
		var st clockState
		if s.code == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatal(err)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != s.code || st.Previous != s.previous || wallclock.Offset() != s.now {
			t.Fatalf("step %q: %d, previous %q, offset now %v; want %d, %q, %v", s.offset, resp.StatusCode, st.Previous, wallclock.Offset(), s.code, s.previous, s.now)
		}
	}
}
