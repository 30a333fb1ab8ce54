package ui

import (
	"net/http"
	"strings"
)

// The Skills page (issue 34): the skills of skills.dir with their
// descriptions, one skill's SKILL.md (its instructions rendered as the
// chat renders Markdown: sanitized, raw HTML dropped), and the files that
// failed validation with file:line. Skills are read as they are on disk
// now, so a fix shows at the next load of the page. Read-only: skills are
// files the operator edits.

type skillsData struct {
	SkillsState
}

func (s *Server) skillsPage(w http.ResponseWriter, r *http.Request) {
	ops := s.ops(w, r)
	if ops == nil {
		return
	}
	s.render(w, r, http.StatusOK, "skills", skillsData{ops.Skills()})
}

func (s *Server) skillShow(w http.ResponseWriter, r *http.Request) {
	ops := s.ops(w, r)
	if ops == nil {
		return
	}
	name := strings.TrimSpace(r.FormValue("name"))
	for _, sk := range ops.Skills().Skills {
		if sk.Name == name {
			s.render(w, r, http.StatusOK, "skill", sk)
			return
		}
	}
	s.notFound(w, r, "No skill "+clip(64, name)+" (it may have failed validation: see Skills).")
}
