package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// Resource URIs.
const (
	// NotificationsURI is the session's unread notifications; subscribing
	// to it (or to a task) turns on the push of finished tasks.
	NotificationsURI = "taskflow://notifications"
	// TaskURIPrefix + id is a task's result view (as get_task_result_tool).
	TaskURIPrefix = "taskflow://tasks/"
)

func (ss *session) addResources(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{URI: NotificationsURI, Name: "notifications", MIMEType: "application/json",
		Description: "This session's unread notifications (tasks finished, failed, timed out). Subscribe to it to be told of each one as it happens."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if ss.p.SessionID == "" {
				return jsonResource(NotificationsURI, []service.Notification{})
			}
			page, err := ss.s.svc.Notifications(ctx, ss.p, service.NotificationsInput{KeepUnread: true})
			if err != nil {
				return nil, err
			}
			return jsonResource(NotificationsURI, page.Notifications)
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TaskURIPrefix + "{task_id}", Name: "task", MIMEType: "application/json",
		Description: "A task of this session: status, progress, result or error (as get_task_result_tool). Subscribe to hear when it changes."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, TaskURIPrefix)
			v, err := ss.s.svc.Result(ctx, ss.p, id)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return jsonResource(req.Params.URI, v)
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TaskURIPrefix + "{task_id}/files/{name}", Name: "task file",
		Description: "A result file of a task of this session (get_task_result_tool links it)."}, ss.readFile)
}

// readFile is the resource taskflow://tasks/{task_id}/files/{name}: a
// task's result file, as text when it is text, else as a blob.
func (ss *session) readFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	rest := strings.TrimPrefix(req.Params.URI, TaskURIPrefix)
	id, name, ok := strings.Cut(rest, "/files/")
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	f, err := ss.s.svc.ResultFile(ctx, ss.p, id, name)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	c := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: f.ContentType}
	if strings.HasPrefix(f.ContentType, "text/") || strings.HasPrefix(f.ContentType, "application/json") {
		c.Text = string(f.Data)
	} else {
		c.Blob = f.Data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// follow starts pushing the session's notifications to the client, once:
// each one is sent as a log message (level notice, logger "taskflow", the
// notification as data; a client sees those once it sets a log level) and
// as resources/updated of taskflow://notifications and of the task's URI
// (to the subscribers of each). A pushed notification is delivered: it is
// marked read and does not ride on the next tool answer again. The feed
// ends with the MCP session.
func (ss *session) follow(srv *mcp.Server, client *mcp.ServerSession) error {
	if ss.p.SessionID == "" {
		return nil // the admin has no session of its own to follow
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.following {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	feed, err := ss.s.svc.OpenNotifications(ctx, ss.p, service.NotificationFollowInput{Via: "mcp"})
	if err != nil {
		cancel()
		return err
	}
	ss.following, ss.stop = true, cancel
	go func() {
		_ = client.Wait()
		cancel()
	}()
	go func() {
		err := feed.Follow(ctx, 15*time.Second, func(n service.Notification) error {
			_ = client.Log(ctx, &mcp.LoggingMessageParams{Level: "notice", Logger: "taskflow", Data: n})
			_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: NotificationsURI})
			if n.TaskID != "" {
				_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: TaskURIPrefix + n.TaskID})
			}
			return nil
		}, func() error { return nil })
		if err != nil && ctx.Err() == nil {
			ss.s.cfg.Logger.Warn("mcp: notification feed stopped", "err", err)
		}
	}()
	return nil
}
