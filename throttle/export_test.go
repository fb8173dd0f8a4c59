package throttle

// BookPerUser makes l book one user per script call even on Redis
// Cluster, as before reserve.lua had its node form: the baseline beside
// BenchmarkClusterWave.
func BookPerUser(l *Redis) { l.cluster = nil }

// CollapseRecords is the number of collapse records m keeps for user, the
// fields of the user's collapse hash in Redis.
func CollapseRecords(m *Memory, user string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.users[user]; u != nil {
		return len(u.collapse)
	}
	return 0
}
