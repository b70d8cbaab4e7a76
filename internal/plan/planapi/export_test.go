package planapi

// Compiles is how many times s has compiled a plan file.
func Compiles(s *Service) int64 { return s.compiles.Load() }

// InputFields are the fields ParseInput accepts.
var InputFields = inputFields
