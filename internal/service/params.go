package service

import (
	"encoding/json"
	"errors"

	"github.com/taskflow/taskflow/extsvc/param"
)

// checkParams checks params against the declared schema of taskType (spec
// 003 §10: parameters validated before publishing). A bad value is a 422
// whose field is the parameter's path, e.g. "params.quarter".
func (s *Service) checkParams(taskType string, params json.RawMessage) error {
	if s.cfg.ParamSchemas == nil {
		return nil
	}
	sch, ok := s.cfg.ParamSchemas(taskType)
	if !ok {
		return nil
	}
	err := sch.Validate(params)
	if err == nil {
		return nil
	}
	var pe *param.Error
	if !errors.As(err, &pe) {
		return Unprocessable("params", "params: %v", err)
	}
	field := "params"
	if pe.Field != "" {
		field += "." + pe.Field
	}
	return Unprocessable(field, "%s", pe.Error())
}
