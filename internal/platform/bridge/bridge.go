// Package bridge lets taskflow's own commands build the public package's
// Worker and Client on the process's App (its one Redis client and store),
// which the public constructors cannot take: they open their own. Package
// taskflow sets the functions when it is initialised; the commands import
// it, so they are set before main runs.
package bridge

import "github.com/taskflow/taskflow/internal/platform/app"

// WorkerOn returns a *taskflow.Worker that runs on a with cfg (a
// taskflow.Config); Run does not close a.
var WorkerOn func(a *app.App, cfg any) any

// ClientOn returns a *taskflow.Client on a with cfg (a taskflow.Config);
// Close does not close a.
var ClientOn func(a *app.App, cfg any) (any, error)
