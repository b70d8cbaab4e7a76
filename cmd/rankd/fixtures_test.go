package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFixturePlans runs our own fixture plans (internal/plan/testdata/plans),
// one per behaviour the reference's plans show (regex literal and param,
// concat with a column union, a string in-list, null rows and traces,
// parallel sleeps, sort, follow → media), through rankd on the demo data,
// and compares the whole output line. The expected candidates are worked
// out by hand from the demo data (plan.DemoData) and the ops' rules in
// docs/plan.md (see each case's comment), not taken from a run.
func TestFixturePlans(t *testing.T) {
	t.Parallel()
	us := func(id int) string { return `{"id":` + strconv.Itoa(id) + `,"fields":{"country":"US"}}` }
	ca := func(id int) string { return `{"id":` + strconv.Itoa(id) + `,"fields":{"country":"CA"}}` }
	bare := func(id int) string { return `{"id":` + strconv.Itoa(id) + `,"fields":{}}` }
	list := func(c ...string) string { return `[` + strings.Join(c, ",") + `]` }
	cases := []struct {
		name, plan, stdin, want string
	}{
		// follow:1 = 1..10, odd ids US, even CA; "^u" with flag i matches
		// "US" (partial match); take 6 of 5 rows keeps all 5.
		{"RegexLiteralCaseInsensitive", "regex_country", `{"user_id":1}`, list(us(1), us(3), us(5), us(7), us(9))},
		// follow:123 = 1..5.
		{"RegexLiteralOtherUser", "regex_country", `{"user_id":"123"}`, list(us(1), us(3), us(5))},
		// The pattern from param blocklist_regex (id 2): "A$" keeps CA.
		{"RegexParam", "regex_param_country", `{"user_id":1,"param_overrides":{"blocklist_regex":"A$"}}`, list(ca(2), ca(4), ca(6), ca(8), ca(10))},
		// No flag: case-sensitive, "a$" matches neither "US" nor "CA".
		{"RegexParamCaseSensitive", "regex_param_country", `{"user_id":1,"param_overrides":{"blocklist_regex":"a$"}}`, list()},
		// vm writes final_score = id*2 on the follows (fanout 3); the
		// recs (recommendation:1, fanout 2) have no final_score column:
		// concat unions the columns, null (absent) on the rhs rows.
		{"ConcatUnionsColumns", "follows_then_recs", `{"user_id":1}`, list(
			`{"id":1,"fields":{"final_score":2.0,"country":"US"}}`,
			`{"id":2,"fields":{"final_score":4.0,"country":"CA"}}`,
			`{"id":3,"fields":{"final_score":6.0,"country":"US"}}`,
			us(1001))},
		{"StringInList", "country_in_list", `{"user_id":1}`, list(ca(2), ca(4), ca(6), ca(8), ca(10))},
		{"StringInListOtherUser", "country_in_list", `{"user_id":123}`, list(ca(2), ca(4))},
		// recommendation:123 = 1021.. have no user hash: country is null and
		// absent from fields; model_score_1 is missing, so null+1 is null
		// and coalesce falls back to id*0.01; is_null(country) keeps them.
		{"NullRowsKept", "null_rows", `{"user_id":123}`, list(
			`{"id":1021,"fields":{"final_score":10.21}}`,
			`{"id":1022,"fields":{"final_score":10.22}}`,
			`{"id":1023,"fields":{"final_score":10.23}}`)},
		// recommendation:1 = 1001.. are US; model_score_1 is null, and a
		// comparison with a runtime null is false even for !=: none kept.
		{"NullComparisonIsFalse", "null_rows", `{"user_id":1}`, list()},
		// Two sleeps of the viewer's row, concatenated: the row twice.
		{"ParallelSleeps", "parallel_sleeps", `{"user_id":1}`, list(us(1), us(1))},
		// follow:1 fanout 7 → 1..7; final_score = id*0.3, desc, take 4.
		{"SortDesc", "top_follows", `{"user_id":1}`, list(
			`{"id":7,"fields":{"final_score":2.1,"country":"US"}}`,
			`{"id":6,"fields":{"final_score":1.7999999999999998,"country":"CA"}}`,
			`{"id":5,"fields":{"final_score":1.5,"country":"US"}}`,
			`{"id":4,"fields":{"final_score":1.2,"country":"CA"}}`)},
		// follow:1 = 1..10; only media:1 (1001..1003) and media:2
		// (1004..1006) exist, fanout 2 keeps two of each; media rows are ids.
		{"FollowMedia", "follow_media", `{"user_id":1}`, list(bare(1001), bare(1002), bare(1004), bare(1005))},
		{"FollowMediaOtherUser", "follow_media", `{"user_id":123}`, list(bare(1001), bare(1002), bare(1004), bare(1005))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rankd(t, strings.Replace(tc.stdin, "{", `{"request_id":"fx",`, 1), "--plan_dir", plans, "--plan_name", tc.plan)
			require.Equal(t, 0, r.code, r.stderr)
			require.Empty(t, r.stderr)
			require.Equal(t, `{"request_id":"fx","engine_request_id":"E","candidates":`+tc.want+"}\n",
				engineID.ReplaceAllString(r.stdout, `"engine_request_id":"E"`))
		})
	}
}

// TestParallelSleepsOverlap: the two 150 ms sleeps of parallel_sleeps run
// at the same time (the trace's intervals overlap).
func TestParallelSleepsOverlap(t *testing.T) {
	t.Parallel()
	r := rankd(t, `{"user_id":1}`, "--plan_dir", plans, "--plan_name", "parallel_sleeps", "--trace")
	require.Equal(t, 0, r.code, r.stderr)
	span := map[string][2]int{}
	for _, m := range regexp.MustCompile(`(?m)^(nap_[ab])\s+test::sleep\s+IO\s+io\s+(\d+)\s+(\d+)\s`).FindAllStringSubmatch(r.stderr, -1) {
		s, _ := strconv.Atoi(m[2])
		e, _ := strconv.Atoi(m[3])
		span[m[1]] = [2]int{s, e}
	}
	require.Len(t, span, 2, r.stderr)
	a, b := span["nap_a"], span["nap_b"]
	require.GreaterOrEqual(t, a[1]-a[0], 150_000, "a sleep lasts its duration")
	require.Less(t, a[0], b[1], "a starts before b ends")
	require.Less(t, b[0], a[1], "b starts before a ends")
}
