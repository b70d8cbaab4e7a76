package service

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/plan/planapi"
)

// checkParams checks params against the declared params of taskType (and
// the type's own check, e.g. that a plan exists) before anything is
// published. A bad value is a 422 whose field is the parameter's path,
// e.g. "params.quarter".
func (s *Service) checkParams(ctx context.Context, taskType string, params json.RawMessage) error {
	if s.cfg.Types == nil {
		return nil
	}
	typ, ok := s.cfg.Types.Lookup(ctx, taskType)
	if !ok {
		return nil
	}
	err := typ.CheckParams(params)
	if err == nil {
		return nil
	}
	var pe *param.Error
	var plErr *planapi.Error
	switch {
	case errors.As(err, &pe):
		field := "params"
		if pe.Field != "" {
			field += "." + pe.Field
		}
		return Unprocessable(field, "%s", pe.Error())
	case errors.As(err, &plErr) && plErr.CallersFault():
		field := "params"
		if plErr.Field != "" && plErr.Field != "body" {
			field += "." + plErr.Field
		}
		return &Error{Kind: KindUnprocessable, Code: "validation_failed", Field: field, Message: plErr.Message, Err: err}
	case errors.As(err, &plErr):
		return planErr(ctx, err)
	}
	return Unprocessable("params", "params: %v", err)
}
