package adminhttp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"umstore/internal/wallclock"
)

// clockState is what /debug/clock answers.
type clockState struct {
	Offset   string `json:"offset"`             // this process's wall clock minus the system's
	Previous string `json:"previous,omitempty"` // the offset a step replaced
	Now      string `json:"now"`                // this process's wall clock
}

func clockOffset(w http.ResponseWriter, _ *http.Request) {
	writeClock(w, clockState{Offset: wallclock.Offset().String(), Now: wallclock.Now().UTC().Format(time.RFC3339Nano)})
}

// maxClockOffset bounds a step: a year either way covers every real
// clock fault (a wrong timezone, a lost RTC, an NTP step), while far
// larger offsets take the stamps written into logs and files past what
// Unix nanoseconds can hold (the year 2262).
const maxClockOffset = 366 * 24 * time.Hour

// clockStep sets this process's wall clock offset to the form value
// offset (a Go duration: "90m", "-2h", "0s" to put it back), standing in
// for a host whose clock is stepped.
func clockStep(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.FormValue("offset"))
		if err != nil {
			http.Error(w, fmt.Sprintf("offset: %v (give a Go duration such as 90m, -2h or 0s)", err), http.StatusBadRequest)
			return
		}
		if d > maxClockOffset || d < -maxClockOffset {
			http.Error(w, fmt.Sprintf("offset %v is more than a year (%v) either way: give a smaller one", d, maxClockOffset), http.StatusBadRequest)
			return
		}
		prev := wallclock.Set(d)
		if log != nil {
			log.Warn("the wall clock of this process was stepped through /debug/clock", "offset", d, "previous", prev)
		}
		writeClock(w, clockState{Offset: d.String(), Previous: prev.String(), Now: wallclock.Now().UTC().Format(time.RFC3339Nano)})
	}
}

func writeClock(w http.ResponseWriter, st clockState) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}
