package httpapi

import (
	"net/http"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// scheduleRoutes registers the recurring-task endpoints.
func (s *Server) scheduleRoutes(add func(route)) {
	scheduleID := pathParam("schedule_id", "the schedule's id")
	add(route{method: "POST", path: "/api/v1/schedules", access: principal, audit: true, handler: s.createSchedule, doc: opDoc{
		tag: "schedules", summary: "Create a recurring task (cron expression + task template)", request: "ScheduleRequest",
		description: "At every due time one task of the template is created, owned by the caller's session, whatever the number of schedulers. A taken id is 409 duplicate_schedule_id.",
		responses:   map[int]string{201: "Schedule", 409: "Error"}}})
	add(route{method: "GET", path: "/api/v1/schedules", access: principal, handler: s.listSchedules, doc: opDoc{
		tag: "schedules", summary: "List schedules (a session: its own; the admin: all)",
		responses: map[int]string{200: "ScheduleList"}}})
	add(route{method: "GET", path: "/api/v1/schedules/{schedule_id}", access: principal, handler: s.getSchedule, doc: opDoc{
		tag: "schedules", summary: "Get a schedule", params: []paramDoc{scheduleID},
		responses: map[int]string{200: "Schedule"}}})
	add(route{method: "DELETE", path: "/api/v1/schedules/{schedule_id}", access: principal, audit: true, handler: s.deleteSchedule, doc: opDoc{
		tag: "schedules", summary: "Delete a schedule (the tasks it created stay)", params: []paramDoc{scheduleID},
		responses: map[int]string{200: "ScheduleDeleted"}}})
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in service.ScheduleInput
	if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.CreateSchedule(r.Context(), p, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/schedules/"+out.ID)
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	out, err := s.svc.ListSchedules(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if out == nil {
		out = []service.ScheduleView{}
	}
	writeJSON(w, http.StatusOK, scheduleList{Schedules: out, Count: len(out)})
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	out, err := s.svc.GetSchedule(r.Context(), p, r.PathValue("schedule_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	id := r.PathValue("schedule_id")
	if err := s.svc.DeleteSchedule(r.Context(), p, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, scheduleDeleted{ScheduleID: id, Deleted: true})
}
