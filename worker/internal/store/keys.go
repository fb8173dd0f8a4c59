package store

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// JobTag is what a job's keys hold between braces, their hash tag: the
// id, or, for an id starting with "}" (which would leave the braces empty,
// so that Redis Cluster put each of the job's keys on a slot of its own),
// the id after a space, which no id starts with. It is also the job's
// field in its done bucket (done.go).
func JobTag(id string) string {
	if strings.HasPrefix(id, "}") {
		return " " + id
	}
	return id
}

// JobKey is the hash of job id's record.
func JobKey(id string) string { return "hush:job:{" + JobTag(id) + "}" }

// RecpKey is the hash of job id's recipients' final states.
func RecpKey(id string) string { return JobKey(id) + ":r" }

// DevKey is the hash of job id's device states and attempt histories.
func DevKey(id string) string { return JobKey(id) + ":dev" }

// ExceptKey is the hash of a job's recipients that ended other than
// delivered: index to "<state>", or "<state>|<reason>" for a failure
// (record.lua writes it with the final states). Unlike the other
// records it outlives the job's retirement, for as long as the job's
// done entry, so that "what happened to this push?" is answered for
// every recipient of a finished job, at no cost for one that reached
// everyone.
func ExceptKey(id string) string { return JobKey(id) + ":x" }

// JobKeys are a job's keys in the order the scripts' KEYS name them: the
// record, the recipient states, the device states. A script given fewer
// takes the first ones.
func JobKeys(id string) []string { return []string{JobKey(id), RecpKey(id), DevKey(id)} }

// DevField is the device hash field of a recipient's device state.
func DevField(recipient, device int) string {
	return strconv.Itoa(recipient) + "/" + strconv.Itoa(device)
}

// PushedField is the device hash field beside a delivered device's state
// field (DevField) that holds the attempt its push went out under.
func PushedField(field string) string { return field + "/n" }

// HeldRunKey marks a hush:waiting-jobs task's runs (waitingjobs.go): set by
// its first run before it sends, kept as long as the job records, and
// deleted by a run that settles every member (their jobs retire, so a
// later run, after a lost completion or by hand, reads them retired).
func HeldRunKey(task string) string { return "hush:held-run:{" + task + "}" }

// TogetherKeys are together.lua's keys for held queue q and Unix second
// wake.
func TogetherKeys(q string, wake int64) []string {
	base := "hush:jobs-at:{" + q + "/" + strconv.FormatInt(wake, 10) + "}"
	return []string{base, base + ":taken", base + ":woken"}
}

// ResetMarkShards is how many keys the reset mark is written in, each on
// a hash slot of its own (the worker's resetmark.go explains the mark).
const ResetMarkShards = 16

// ResetMarkKey is the reset mark's key that task's runs read.
func ResetMarkKey(task string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(task))
	return ResetMarkKeyOf(int(h.Sum32() % ResetMarkShards))
}

// ResetMarkKeyOf is the key of the reset mark's shard shard.
func ResetMarkKeyOf(shard int) string {
	return "hush:throttle-reset:{" + strconv.Itoa(shard) + "}"
}
