package store

import (
	_ "embed"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/task"
)

// The job store's Lua scripts are declared here and nowhere else, one .lua
// file each. Each file's header names its KEYS and ARGV and its first
// lines read ARGV into locals of those names; the script's builder below
// (StartArgs, RecordArgs, ...) sends ARGV in the header's order.
// scripts_test.go checks header, locals and builder against each other,
// and the header and locals of the scripts without a builder
// (together.lua, raise.lua).
var (
	// The scripts' sources, as their .lua files hold them.

	//go:embed start.lua
	StartSrc string
	//go:embed record.lua
	RecordSrc string
	//go:embed cancel.lua
	CancelSrc string
	//go:embed fanned.lua
	FannedSrc string
	//go:embed retire.lua
	RetireSrc string
	//go:embed chunk.lua
	ChunkSrc string
	//go:embed together.lua
	TogetherSrc string
	//go:embed raise.lua
	RaiseSrc string

	// The scripts. Those that record final states end with retire()
	// (retire.lua).
	StartScript  = redis.NewScript(StartSrc)
	RecordScript = redis.NewScript(RetireScriptSrc + RecordSrc)
	FannedScript = redis.NewScript(RetireScriptSrc + FannedSrc)
	CancelScript = redis.NewScript(CancelSrc)
	ChunkScript  = redis.NewScript(ChunkSrc)
	// The held groups waiting for their second (waitingsecond.go), and
	// the reset mark (resetmark.go).
	TogetherScript = redis.NewScript(TogetherSrc)
	RaiseScript    = redis.NewScript(RaiseSrc)
)

// RetireScriptSrc is retire.lua preceded by the line that gives it
// task.FinalStates(), as the Lua table final_states.
var RetireScriptSrc = luaList("final_states", task.FinalStates()) + RetireSrc

// luaList is a line of Lua declaring the local name as the strings vs.
func luaList(name string, vs []string) string {
	var b strings.Builder
	b.WriteString("local " + name + " = {")
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(v))
	}
	b.WriteString("}\n")
	return b.String()
}

// RecordInfo is what a job record is created with.
type RecordInfo struct {
	ID    string
	Queue string
	// Task is the batch task carrying the job ("" when the job has a task
	// of its own): it owns the id with Queue (Owner).
	Task string
	// App is the job's app, as validation resolved it ("" for none).
	App        string
	Recipients int
	AcceptedAt time.Time
	Deadline   time.Time
	// Retain is when the record's task.RecordTTL starts (task.RetainFrom).
	Retain time.Time
}

// Owner is how start.lua names the submission owning the id: its queue,
// then "@" and its batch task when a batch carries it.
func (r RecordInfo) Owner() string {
	if r.Task == "" {
		return r.Queue
	}
	return r.Queue + "@" + r.Task
}

// StartArgs is start.lua's ARGV: r's fixed fields, the state to set
// (only when the record has none when keep is set) and the record's ttl,
// then the device count of each recipient of first, whose states start.lua
// reads (none when first is nil).
func StartArgs(r RecordInfo, state string, keep bool, ttl time.Duration, first *task.Chunk) []any {
	var read []payload.Recipient
	if first != nil {
		read = first.Recipients
	}
	args := make([]any, 0, 10+len(read))
	args = append(args,
		r.Queue,                 // ARGV[1] queue
		r.Task,                  // ARGV[2] task
		TimeField(r.AcceptedAt), // ARGV[3] accepted_at
		r.Recipients,            // ARGV[4] recipients
		TimeField(r.Deadline),   // ARGV[5] deadline
		state,                   // ARGV[6] state
		B2i(keep),               // ARGV[7] keep
		ttl.Milliseconds(),      // ARGV[8] ttl
		len(read),               // ARGV[9] nread
		r.App,                   // ARGV[10] app
	)
	for _, rc := range read {
		args = append(args, len(rc.Devices)) // ARGV[11..] devices
	}
	return args
}

// RecordArgs is record.lua's ARGV: the keys' ttl, the deferrals to count,
// when the done bucket expires, the device state folded into the call
// (field "" for none), the recipients' range (RecordRange; "" for none),
// then two values per entry of entries (recipient index, final state,
// queue or reason triples: a final state and a failure's reason, or ""
// and the queue a held recipient's task waits on): the recipient, then
// its final state (with "|" and the reason when there is one) or
// HeldValue(queue).
func RecordArgs(ttl time.Duration, deferrals int, expireAt int64, devField, devState, rng string, entries []any) []any {
	args := make([]any, 0, 6+len(entries)/3*2)
	args = append(args,
		ttl.Milliseconds(), // ARGV[1] ttl
		deferrals,          // ARGV[2] deferrals
		expireAt,           // ARGV[3] expire_at
		devField,           // ARGV[4] dev_field
		devState,           // ARGV[5] dev_state
		rng,                // ARGV[6] range
	)
	for k := 0; k+2 < len(entries); k += 3 {
		v := entries[k+1]
		switch why := entries[k+2].(string); {
		case v == "":
			v = HeldValue(why)
		case why != "":
			v = v.(string) + "|" + why // a failure's reason (ExceptKey)
		}
		args = append(args, entries[k], v) // ARGV[7..] recipient, state
	}
	return args
}

// HeldValue is record.lua's value for a held recipient whose delivery task
// waits on queue: "@" and the queue. No final state starts with "@".
func HeldValue(queue string) string { return "@" + queue }

// RecordRange is record.lua's range for a call recording entries
// (recipient, state, queue triples) of c: the recipients' index /
// task.ChunkSize when every one of them has the same, else "". Two kinds of
// chunk give none, as the range's counts would cost them two writes and
// save them no read: a chunk of one recipient (a single-recipient job's
// record call skips its read already, record.lua), and a held task's
// chunk (the chunk that held its recipients back has, as a rule, recorded
// final states in their range already).
func RecordRange(c *task.Chunk, entries []any) string {
	if len(c.Recipients) < 2 || c.Held() || len(entries) == 0 {
		return ""
	}
	r := entries[0].(int) / task.ChunkSize
	for k := 3; k < len(entries); k += 3 {
		if entries[k].(int)/task.ChunkSize != r {
			return ""
		}
	}
	return strconv.Itoa(r)
}

// FannedArgs is fanned.lua's ARGV.
func FannedArgs(cursor int, expireAt int64) []any {
	return []any{
		cursor,   // ARGV[1] cursor
		expireAt, // ARGV[2] expire_at
	}
}

// CancelArgs is cancel.lua's ARGV.
func CancelArgs(at time.Time) []any {
	return []any{
		TimeField(at), // ARGV[1] at
	}
}

// ChunkMark is a chunk task's field in its job record, set by its first
// run: "s:<from>", or "w:<from>:<wake>" for a held task's.
func ChunkMark(c *task.Chunk) string {
	if c.Held() {
		return "w:" + strconv.Itoa(c.From) + ":" + strconv.FormatInt(c.Wake, 10)
	}
	return "s:" + strconv.Itoa(c.From)
}

// ChunkArgs is chunk.lua's ARGV: c's mark, whether to read on a first run
// too (always: an unmarked chunk task), then the fields to read: its
// recipients' (rf), then their devices' and attempts' (df).
func ChunkArgs(c *task.Chunk, always bool, rf, df []string) []any {
	args := make([]any, 0, 3+len(rf)+len(df))
	args = append(args,
		ChunkMark(c), // ARGV[1] mark
		B2i(always),  // ARGV[2] always
		len(rf),      // ARGV[3] nread
	)
	for _, f := range rf {
		args = append(args, f) // ARGV[4..] field
	}
	for _, f := range df {
		args = append(args, f)
	}
	return args
}

// TimeField is how a job record holds an instant: RFC 3339 in UTC, "" for
// none.
func TimeField(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// B2i is a flag as the scripts read it: 1 or 0.
func B2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
