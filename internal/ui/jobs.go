package ui

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/memory"
)

// runsShown is how many recent runs each job lists.
const runsShown = 5

type jobRow struct {
	heartbeat.JobInfo
	State string
	Runs  []memory.JobRun
}

// jobForm is the create form as typed (shown again when refused).
type jobForm struct {
	Name, Kind, Schedule, At, Timezone, Persona, Body, DeliverTo, Misfire string
}

type jobsData struct {
	Jobs     []jobRow
	Personas []string
	Form     jobForm
	Error    string
}

func (s *Server) jobsData(r *http.Request) (jobsData, error) {
	d := jobsData{Personas: s.o.Backend.Personas().Names(), Form: jobForm{Kind: heartbeat.KindReminder}}
	jobs := s.o.Backend.Jobs()
	list, err := jobs.List(r.Context())
	if err != nil {
		return d, err
	}
	for _, j := range list {
		row := jobRow{JobInfo: j, State: "active"}
		switch {
		case j.Paused:
			row.State = "paused"
		case j.Done:
			row.State = "done"
		}
		if row.Runs, err = jobs.Runs(r.Context(), j.Spec.Name, runsShown); err != nil {
			return d, err
		}
		d.Jobs = append(d.Jobs, row)
	}
	return d, nil
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.jobsData(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "jobs", d)
}

// jobAction runs, pauses, resumes or deletes a job.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request) {
	action, name := r.PathValue("action"), r.PostFormValue("name")
	jobs := s.o.Backend.Jobs()
	var msg string
	var err error
	switch action {
	case "run":
		var run memory.JobRun
		if run, err = jobs.RunNow(r.Context(), name); err == nil {
			msg = runSummary(name, run)
		}
	case "pause":
		msg, err = "Paused "+name+".", jobs.Pause(r.Context(), name)
	case "resume":
		msg, err = "Resumed "+name+".", jobs.Resume(r.Context(), name)
	case "delete":
		msg, err = "Deleted "+name+".", jobs.Delete(r.Context(), name)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		s.audit(r.Context(), "job."+action, "", name, err.Error())
		s.redirect(w, r, "/ui/jobs", fmt.Sprintf("Could not %s %s: %v", action, name, err))
		return
	}
	s.audit(r.Context(), "job."+action, "", name, "")
	s.redirect(w, r, "/ui/jobs", msg)
}

func runSummary(name string, run memory.JobRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Ran %s: %s.", name, run.Status)
	for _, dl := range run.Deliveries {
		fmt.Fprintf(&b, " %s: %s", dl.Target, dl.Status)
		if dl.Error != "" {
			fmt.Fprintf(&b, " (%s)", clip(200, dl.Error))
		}
		b.WriteString(".")
	}
	if run.Error != "" {
		fmt.Fprintf(&b, " Error: %s", clip(300, run.Error))
	}
	return b.String()
}

// jobCreate creates a reminder or task (a runtime job, like the schedule
// tool's) after the checks config jobs get: heartbeat.JobSpec.Validate and
// the persona name.
func (s *Server) jobCreate(w http.ResponseWriter, r *http.Request) {
	f := jobForm{Name: strings.TrimSpace(r.PostFormValue("name")), Kind: r.PostFormValue("kind"),
		Schedule: strings.TrimSpace(r.PostFormValue("schedule")), At: strings.TrimSpace(r.PostFormValue("at")),
		Timezone: strings.TrimSpace(r.PostFormValue("timezone")), Persona: r.PostFormValue("persona"),
		Body: r.PostFormValue("body"), DeliverTo: r.PostFormValue("deliver_to"), Misfire: r.PostFormValue("misfire")}
	spec, err := s.jobSpec(f)
	if err == nil {
		err = s.o.Backend.Jobs().Create(r.Context(), spec)
	}
	if err != nil {
		d, derr := s.jobsData(r)
		if derr != nil {
			s.fail(w, r, derr)
			return
		}
		d.Form, d.Error = f, err.Error()
		s.render(w, r, http.StatusUnprocessableEntity, "jobs", d)
		return
	}
	s.audit(r.Context(), "job.create", "", spec.Name+" "+spec.When(), "")
	s.redirect(w, r, "/ui/jobs", "Created "+spec.Kind+" "+spec.Name+" ("+spec.When()+").")
}

func (s *Server) jobSpec(f jobForm) (heartbeat.JobSpec, error) {
	spec := heartbeat.JobSpec{Name: f.Name, Kind: f.Kind, Schedule: f.Schedule, Timezone: f.Timezone,
		Persona: f.Persona, Misfire: f.Misfire, DeliverTo: strings.FieldsFunc(f.DeliverTo, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t'
		})}
	switch f.Kind {
	case heartbeat.KindTask:
		spec.Prompt = f.Body
	default:
		spec.Text = f.Body
	}
	if f.At != "" {
		loc := s.o.Backend.Config().Bot.Location()
		if f.Timezone != "" {
			l, err := time.LoadLocation(f.Timezone)
			if err != nil {
				return spec, fmt.Errorf("time zone %q is not an IANA name such as Europe/Berlin", f.Timezone)
			}
			loc = l
		}
		at, err := time.ParseInLocation("2006-01-02T15:04", f.At, loc)
		if err != nil {
			return spec, fmt.Errorf("at %q is not a date and time (2006-01-02T15:04)", clip(40, f.At))
		}
		if !at.After(s.o.Now()) {
			return spec, fmt.Errorf("at %s is in the past", f.At)
		}
		spec.At = at
	}
	if spec.Persona != "" && !slices.Contains(s.o.Backend.Personas().Names(), spec.Persona) {
		return spec, fmt.Errorf("no persona %q (have: %s)", spec.Persona, strings.Join(s.o.Backend.Personas().Names(), ", "))
	}
	return spec, spec.Validate(s.o.Backend.Config().Platforms().Names())
}
