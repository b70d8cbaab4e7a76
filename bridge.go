package taskflow

import (
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/bridge"
)

func init() {
	bridge.WorkerOn = func(a *app.App, cfg any) any {
		return &Worker{cfg: cfg.(Config), mux: NewMux(), app: a, orchestrated: true}
	}
	bridge.ClientOn = func(a *app.App, cfg any) (any, error) { return newClientOn(a, cfg.(Config)) }
}
