// Package batch is the plan engine's columnar row storage. A Batch holds
// immutable columns (ids, float columns, string columns, each with a
// validity vector); a RowSet is a Batch plus an index vector that is both
// the selection (which rows are active) and the order (in which order), so
// filter, sort and take never copy column data. Writing a column (vm)
// makes a new Batch that shares every other column with the old one.
package batch

import "sort"

// FloatCol is a nullable float64 column.
type FloatCol struct {
	Vals  []float64
	Valid []bool
}

// StringCol is a nullable string column.
type StringCol struct {
	Vals  []string
	Valid []bool
}

// Batch is a set of rows stored by column. Batches are never mutated once
// published to another node; Set* return new batches.
type Batch struct {
	IDs     []int64
	Floats  map[int]*FloatCol
	Strings map[int]*StringCol
}

// New returns a batch of the given ids with no other column.
func New(ids []int64) *Batch { return &Batch{IDs: ids} }

// Len is the number of physical rows.
func (b *Batch) Len() int { return len(b.IDs) }

// Float returns the float column of key, or nil.
func (b *Batch) Float(key int) *FloatCol { return b.Floats[key] }

// String returns the string column of key, or nil.
func (b *Batch) String(key int) *StringCol { return b.Strings[key] }

// WithFloat returns a batch sharing every column of b except key, which is col.
func (b *Batch) WithFloat(key int, col *FloatCol) *Batch {
	nb := &Batch{IDs: b.IDs, Strings: b.Strings, Floats: make(map[int]*FloatCol, len(b.Floats)+1)}
	for k, c := range b.Floats {
		nb.Floats[k] = c
	}
	nb.Floats[key] = col
	return nb
}

// WithString returns a batch sharing every column of b except key, which is col.
func (b *Batch) WithString(key int, col *StringCol) *Batch {
	nb := &Batch{IDs: b.IDs, Floats: b.Floats, Strings: make(map[int]*StringCol, len(b.Strings)+1)}
	for k, c := range b.Strings {
		nb.Strings[k] = c
	}
	nb.Strings[key] = col
	return nb
}

// FloatKeys lists the float column keys in ascending order.
func (b *Batch) FloatKeys() []int { return sortedKeys(b.Floats) }

// StringKeys lists the string column keys in ascending order.
func (b *Batch) StringKeys() []int { return sortedKeys(b.Strings) }

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// RowSet is a batch seen through an index vector: Index lists the active
// physical rows in output order; a nil Index means every row in order.
type RowSet struct {
	Batch *Batch
	Index []int32
}

// Of returns a RowSet over every row of b.
func Of(b *Batch) RowSet { return RowSet{Batch: b} }

// Empty is a RowSet with no rows.
func Empty() RowSet { return RowSet{Batch: New(nil)} }

// Len is the number of active rows.
func (r RowSet) Len() int {
	if r.Index == nil {
		return r.Batch.Len()
	}
	return len(r.Index)
}

// Row returns the physical row of the i-th active row.
func (r RowSet) Row(i int) int32 {
	if r.Index == nil {
		return int32(i)
	}
	return r.Index[i]
}

// Rows materialises the index vector (a fresh slice the caller may keep).
func (r RowSet) Rows() []int32 {
	out := make([]int32, r.Len())
	if r.Index == nil {
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	copy(out, r.Index)
	return out
}

// WithIndex returns the same batch seen through idx.
func (r RowSet) WithIndex(idx []int32) RowSet { return RowSet{Batch: r.Batch, Index: idx} }

// Concat returns a new batch holding the active rows of each set in order;
// the columns are the union of the inputs' columns, null where a set lacks one.
func Concat(sets ...RowSet) RowSet {
	n := 0
	floatKeys, strKeys := map[int]bool{}, map[int]bool{}
	for _, s := range sets {
		n += s.Len()
		for k := range s.Batch.Floats {
			floatKeys[k] = true
		}
		for k := range s.Batch.Strings {
			strKeys[k] = true
		}
	}
	out := &Batch{IDs: make([]int64, 0, n)}
	if len(floatKeys) > 0 {
		out.Floats = make(map[int]*FloatCol, len(floatKeys))
		for k := range floatKeys {
			out.Floats[k] = &FloatCol{Vals: make([]float64, n), Valid: make([]bool, n)}
		}
	}
	if len(strKeys) > 0 {
		out.Strings = make(map[int]*StringCol, len(strKeys))
		for k := range strKeys {
			out.Strings[k] = &StringCol{Vals: make([]string, n), Valid: make([]bool, n)}
		}
	}
	at := 0
	for _, s := range sets {
		m := s.Len()
		for i := 0; i < m; i++ {
			out.IDs = append(out.IDs, s.Batch.IDs[s.Row(i)])
		}
		for k, dst := range out.Floats {
			src := s.Batch.Floats[k]
			if src == nil {
				continue
			}
			for i := 0; i < m; i++ {
				r := s.Row(i)
				dst.Vals[at+i], dst.Valid[at+i] = src.Vals[r], src.Valid[r]
			}
		}
		for k, dst := range out.Strings {
			src := s.Batch.Strings[k]
			if src == nil {
				continue
			}
			for i := 0; i < m; i++ {
				r := s.Row(i)
				dst.Vals[at+i], dst.Valid[at+i] = src.Vals[r], src.Valid[r]
			}
		}
		at += m
	}
	return Of(out)
}

// WithBatch returns b seen through r's index vector (b must have at least
// r's physical rows, e.g. a copy of r.Batch with one column replaced).
func (r RowSet) WithBatch(b *Batch) RowSet { return RowSet{Batch: b, Index: r.Index} }
