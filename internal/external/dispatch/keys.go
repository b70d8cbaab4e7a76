package dispatch

import (
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
)

// keys builds the Redis keys the dispatcher owns. They carry the
// deployment's hash tag {namespace} like the store's keys; the streams
// are named by internal/external/protocol.
type keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// token is the fencing token of a task's last dispatch (STRING, 7 days),
// written with the task.create it went out in. It is a record, not a
// duplicate marker: the task hash drops its lease token when the task
// finishes, and the outcome consumer still needs the token of the attempt
// that was dispatched last, for a service that does not echo the token
// and to tell the redelivery of the outcome that finished a task from
// any other outcome about it (LastToken). Written with several partitions
// only: with one, the task hash's handoff field, written in the call that
// publishes the attempt, keeps it.
func (k keys) token(taskID string) string { return k.p + "agent:dispatch:" + taskID }

// tokenTTL is how long a dispatch token is kept: the streams' retention,
// beyond which no outcome of the attempt is delivered.
const tokenTTL = 7 * 24 * time.Hour

// inflight is a task type's in-flight places (ZSET, member "id token",
// score the attempt's handed-off lease deadline in ms): the attempts that
// were dispatched and have not ended. A dispatcher admits a new one only
// while the set holds fewer than the bound, in the script that publishes
// the attempt's task.create (dispatch.lua); the one who sees an attempt
// end removes it (Release), and a member past its deadline (an attempt
// lost without an outcome) frees its place at the next admission. It is
// a bound's state, not a duplicate marker: a place is taken and its event
// published together, and freeing one twice changes nothing.
func (k keys) inflight(taskType string) string { return k.p + "agent:inflight:" + taskType }

// freed is the channel (PUBLISH) on which whoever frees in-flight places
// names the type's set (inflight) it freed them in and how many ("<set>
// <count>"): a dispatcher whose
// tasks wait for a place of the type asks again at once rather than at its
// next AdmitPoll. A wake-up only: a waiter that misses one (subscribed
// late, or a place freed by its deadline passing) still looks every
// AdmitPoll.
func (k keys) freed() string { return k.p + "agent:inflight:freed" }

// FreedChannel is the channel on which freeing in-flight places is
// announced (the outcome consumer's apply_batch.lua publishes there).
func FreedChannel(ns keyspace.Namespace) string { return newKeys(ns).freed() }

// inflightMember is an attempt's member of inflight.
func inflightMember(taskID, token string) string { return taskID + " " + token }
