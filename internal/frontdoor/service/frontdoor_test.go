package service_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestFrontDoorWithoutHTTP: results, notifications and plan runs are
// service methods a front end other than HTTP (the MCP server, the
// dashboard) calls with a principal; the ownership rule is the tasks'.
func TestFrontDoorWithoutHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	au, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	n, err := notify.New(rdb, notify.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	svc, err := service.New(service.Config{Store: st, Auth: au, Notifications: n,
		Results: resultview.New(st, resultview.Config{})})
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	b := &bundle{svc: svc, st: st, au: au}

	s1, err := b.au.CreateSession(ctx)
	require.NoError(t, err)
	s2, err := b.au.CreateSession(ctx)
	require.NoError(t, err)
	p1, p2, admin := auth.Principal{SessionID: s1.ID}, auth.Principal{SessionID: s2.ID}, auth.Principal{Admin: true}
	out, err := b.svc.Submit(ctx, p1, service.SubmitInput{TaskType: "noop"})
	require.NoError(t, err)

	v, err := b.svc.Result(ctx, p1, out.TaskID)
	require.NoError(t, err)
	require.Equal(t, "pending", v.Status)
	_, err = b.svc.Result(ctx, p2, out.TaskID)
	require.ErrorIs(t, err, service.ErrNotFound, "another session's result is not found")
	_, err = b.svc.Result(ctx, admin, out.TaskID)
	require.NoError(t, err)
	l, err := b.svc.ListResults(ctx, p1, service.ResultListInput{StatusFilter: "pending"})
	require.NoError(t, err)
	require.Len(t, l.Tasks, 1)
	l, err = b.svc.ListResults(ctx, p2, service.ResultListInput{})
	require.NoError(t, err)
	require.Empty(t, l.Tasks)

	_, err = n.Notify(ctx, s1.ID, notify.Notification{Type: notify.KindCompleted, TaskID: out.TaskID, Message: "done"})
	require.NoError(t, err)
	page, err := b.svc.Notifications(ctx, p1, service.NotificationsInput{KeepUnread: true})
	require.NoError(t, err)
	require.Len(t, page.Notifications, 1)
	require.Equal(t, 1, page.Unread)
	page, err = b.svc.Notifications(ctx, p2, service.NotificationsInput{})
	require.NoError(t, err)
	require.Empty(t, page.Notifications)
	_, err = b.svc.Notifications(ctx, p2, service.NotificationsInput{SessionID: s1.ID})
	require.ErrorIs(t, err, service.ErrForbidden)
	_, err = b.svc.OpenNotifications(ctx, p1, service.NotificationFollowInput{})
	var se *service.Error
	require.ErrorAs(t, err, &se, "no Hub configured: no live feed")
	require.Equal(t, "notifications_unavailable", se.Code)

	_, err = b.svc.RunPlan(ctx, p1, service.PlanRunInput{Name: "follows", Request: json.RawMessage(`{"user_id":1}`)})
	require.ErrorAs(t, err, &se)
	require.Equal(t, "plans_unavailable", se.Code)
	_, err = b.svc.RunPlan(ctx, auth.Principal{}, service.PlanRunInput{Name: "follows"})
	require.ErrorAs(t, err, &se)
	require.Equal(t, service.KindUnauthenticated, se.Kind)
	// listing and reading plans follow the same rules as running them
	_, err = b.svc.Plans(ctx, p1)
	require.ErrorAs(t, err, &se)
	require.Equal(t, "plans_unavailable", se.Code)
	_, err = b.svc.PlanGraph(ctx, p1, "follows")
	require.ErrorAs(t, err, &se)
	require.Equal(t, "plans_unavailable", se.Code)
	_, err = b.svc.Plans(ctx, auth.Principal{})
	require.ErrorAs(t, err, &se)
	require.Equal(t, service.KindUnauthenticated, se.Kind)
	_, err = b.svc.PlanGraph(ctx, auth.Principal{}, "follows")
	require.ErrorAs(t, err, &se)
	require.Equal(t, service.KindUnauthenticated, se.Kind)
}
