// Package registry holds taskflow's plan registries as data files (keys,
// params, endpoints, capabilities, validation rules, the op manifest) and
// embeds them, so the plan engine runs without a checkout beside it. The
// loader is internal/plan/registry; the TypeScript DSL reads the same files.
package registry

import "embed"

// Files are the registry's TOML files.
//
//go:embed *.toml
var Files embed.FS
