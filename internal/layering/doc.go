// Package layering holds the import rules of taskflow's architecture as a
// test (layering_test.go): the front ends reach the business rules only
// through internal/service, never the store, the streams or Redis; and the
// core never depends on the example services. It has no code of its own.
package layering
