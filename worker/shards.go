package worker

import "github.com/hushpush/hush/worker/internal/task"

// MaxDeliveryShards bounds Options.DeliveryShards (HUSH_DELIVERY_SHARDS):
// every shard is a queue each worker polls (task.ShardQueue).
const MaxDeliveryShards = task.MaxShards
