package daemon

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
)

// Every key of the heartbeat section and of a job reaches the scheduler's
// own option types: a field added to config but not mapped fails here.
func TestSchedulerOptionsMapEveryConfigKey(t *testing.T) {
	hc := config.Heartbeat{Enabled: true, Schedule: "@hourly", ActiveHours: "09:00-21:00", IdleAfter: time.Hour,
		MaxPerDay: 3, Targets: []string{"telegram:1"}}
	got := heartbeatConfig(hc)
	if !sameFields(reflect.ValueOf(hc), reflect.ValueOf(got)) {
		t.Errorf("heartbeatConfig(%+v) = %+v", hc, got)
	}
	at := "2030-01-02T09:00:00+01:00"
	jc := config.Job{Name: "j", At: at, Timezone: "UTC", Kind: "reminder", Persona: "p", Prompt: "q", Text: "x",
		DeliverTo: []string{"slack:C1"}, Misfire: "run_once", Grace: time.Minute}
	specs, err := jobSpecs([]config.Job{jc})
	if err != nil || len(specs) != 1 {
		t.Fatalf("jobSpecs = %v, %v", specs, err)
	}
	s := specs[0]
	want, _ := time.Parse(time.RFC3339, at)
	if !s.At.Equal(want) {
		t.Errorf("At = %v, want %v", s.At, want)
	}
	if !sameFields(reflect.ValueOf(jc), reflect.ValueOf(s), "At") {
		t.Errorf("jobSpecs: %+v -> %+v", jc, s)
	}
	jc.DeliverTo[0] = "changed"
	if s.DeliverTo[0] != "slack:C1" {
		t.Error("deliver_to shares the config's slice")
	}
	if _, err := jobSpecs([]config.Job{{Name: "bad", At: "tomorrow"}}); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("bad at: %v", err)
	}
}

// sameFields compares every field of the config struct a (but skip) with
// the field of the same name in b.
func sameFields(a, b reflect.Value, skip ...string) bool {
	for i := range a.NumField() {
		f := a.Type().Field(i)
		if slices.Contains(skip, f.Name) {
			continue
		}
		bf := b.FieldByName(f.Name)
		if !bf.IsValid() || !reflect.DeepEqual(a.Field(i).Interface(), bf.Interface()) {
			return false
		}
	}
	return true
}
