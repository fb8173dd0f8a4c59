package task

import "testing"

func TestMembersAndTaskIDsCannotCollide(t *testing.T) {
	type del struct {
		job        string
		index, att int
	}
	cases := []del{{"x", 0, 0}, {"x/0", 0, 0}, {"x", 0, 1}, {"x/0#1", 0, 0}, {"a/1", 2, 0}, {"a", 1, 2}, {"a/1", 2, 1}, {"a", 12, 0}, {"a/1", 2, 3}}
	members := map[string]del{}
	for _, c := range cases {
		m := Member(c.job, c.index, c.att)
		if prev, ok := members[m]; ok {
			t.Errorf("member %q for both %+v and %+v", m, prev, c)
		}
		members[m] = c
	}
	ids := map[string]string{}
	for _, job := range []string{"x", "x/0", "x/c1", "job:x", "delivery:x/0", "chunk:x/1", "y/0"} {
		for _, id := range []string{JobID(job), ChunkID(job, 1), DeliveryID(job, 0)} {
			if prev, ok := ids[id]; ok {
				t.Errorf("task id %q for both %s and %s", id, prev, job)
			}
			ids[id] = job
		}
	}
}

// TestHeldIDsAndMarks: a held task's id gives back its job (any
// string, "/" and spaces included), chunk and second, and a held marker
// its queue and task, whatever the job id holds.
func TestHeldIDsAndMarks(t *testing.T) {
	for _, job := range []string{"j", "a/1/2", "with space", "x/", "/", "held:y/3", "wait:z/1/2"} {
		for _, waits := range []bool{false, true} {
			id := HeldID(job, 7, 1795663698, waits)
			gotJob, k, wake, gotWaits, ok := ParseHeldID(id)
			if !ok || gotJob != job || k != 7 || wake != 1795663698 || gotWaits != waits {
				t.Errorf("ParseHeldID(%q) = %q, %d, %d, %v, %v; want %q, 7, 1795663698, %v", id, gotJob, k, wake, gotWaits, ok, job, waits)
			}
			for _, owner := range []string{"", id} {
				q, gotTask := ParseHeldMark(HeldMark("held-normal.3", owner))
				if q != "held-normal.3" || gotTask != owner {
					t.Errorf("ParseHeldMark(HeldMark(held-normal.3, %q)) = %q, %q", owner, q, gotTask)
				}
			}
		}
	}
	for _, bad := range []string{"held:", "held:j", "held:j/1", "held:j/x/5", "held:j/1/0", "chunk:j/1/5", "held:j/-1/5", "wait:j/1", "wait:j/1/0", "wai:j/1/5"} {
		if _, _, _, _, ok := ParseHeldID(bad); ok {
			t.Errorf("ParseHeldID(%q) accepted", bad)
		}
	}
}

// TestWaitingJobsIDs: ids split back into their parts, job and batch ids
// with "/" included, and no id of one kind parses as the other's.
func TestWaitingJobsIDs(t *testing.T) {
	for _, scope := range []string{"batch:abc", "job:a/b/c", "job:x/1/2"} {
		id := WaitingJobsID(scope, "0a1b", 1700000000)
		s, tok, wake, ok := ParseWaitingJobsID(id)
		if !ok || s != scope || tok != "0a1b" || wake != 1700000000 {
			t.Errorf("%s: %q %q %d %v", id, s, tok, wake, ok)
		}
		if _, _, _, _, ok := ParseHeldID(id); ok {
			t.Errorf("%s parses as a hush:held task's id", id)
		}
	}
	for _, bad := range []string{"jobs:", "jobs:a/0", "jobs:/t/5", "jobs:a//5", "jobs:a/t/x", HeldID("j", 0, 5, true)} {
		if _, _, _, ok := ParseWaitingJobsID(bad); ok {
			t.Errorf("%q parsed as a held jobs task id", bad)
		}
	}
}

func TestParseMember(t *testing.T) {
	for _, job := range []string{"j", "a/1", "x#2", "a/1#3", "/", "#"} {
		for _, index := range []int{0, 7} {
			for _, attempt := range []int{0, 1, 12} {
				m := Member(job, index, attempt)
				gotJob, gotIndex, gotAttempt, ok := ParseMember(m)
				if !ok || gotJob != job || gotIndex != index || gotAttempt != attempt {
					t.Errorf("ParseMember(%q) = %q, %d, %d, %v; want %q, %d, %d", m, gotJob, gotIndex, gotAttempt, ok, job, index, attempt)
				}
			}
		}
	}
	for _, bad := range []string{"", "j", "j/", "j/x", "j/-1", "j/01", "j/1#", "j/1#0", "j/1#01", "j/1#-2"} {
		if _, _, _, ok := ParseMember(bad); ok {
			t.Errorf("ParseMember(%q) accepted", bad)
		}
	}
}

func TestFinalStates(t *testing.T) {
	got := FinalStates()
	got[0] = "changed"
	if FinalStates()[0] != Delivered {
		t.Error("FinalStates shares its slice")
	}
}
