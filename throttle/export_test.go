package throttle

// BookPerUser makes l book one user per script call even on Redis
// Cluster, as before reserve.lua had its node form: the baseline beside
// BenchmarkClusterWave.
func BookPerUser(l *Redis) { l.cluster = nil }
