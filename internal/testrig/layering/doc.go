// Package layering holds the import rules of taskflow's architecture as a
// test (layering_test.go): the front ends reach the business rules only
// through internal/frontdoor/service, never the store, the streams or Redis, by
// their own imports or through any other package (the whole import graph
// is walked, stopping at the service); the core never depends on the
// example services; only the composition root builds a store
// (onestore_test.go). It has no code of its own.
package layering
