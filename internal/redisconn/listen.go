package redisconn

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// ErrSubscriptionClosed: the subscription's message channel closed before
// ctx ended (its client was closed).
var ErrSubscriptionClosed = errors.New("redisconn: subscription closed")

// Sharded reports whether rdb is a Redis Cluster client: then taskflow's
// channels are shard channels (SPUBLISH/SSUBSCRIBE). Every channel carries
// the namespace's hash tag, so its messages stay on the shard that holds
// the namespace instead of crossing the whole cluster's bus; a single
// server (and the embedded one of taskflow dev) uses plain PUBLISH.
func Sharded(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// PublishCommand is the publish command for rdb's channels, for scripts
// that publish from inside Redis (they take it as an argument).
func PublishCommand(rdb redis.UniversalClient) string {
	if Sharded(rdb) {
		return "SPUBLISH"
	}
	return "PUBLISH"
}

// Publish publishes payload on channel the way Listen subscribes to it.
func Publish(ctx context.Context, rdb redis.UniversalClient, channel string, payload any) *redis.IntCmd {
	if Sharded(rdb) {
		return rdb.SPublish(ctx, channel, payload)
	}
	return rdb.Publish(ctx, channel, payload)
}

// Subscribe subscribes to channel the way Publish publishes on it.
func Subscribe(ctx context.Context, rdb redis.UniversalClient, channel string) *redis.PubSub {
	if Sharded(rdb) {
		return rdb.SSubscribe(ctx, channel)
	}
	return rdb.Subscribe(ctx, channel)
}

// Listen subscribes to channel and calls handle with each message's
// payload, in order, until ctx ends. subscribed, when set, is called once
// the subscription is confirmed (ok) and before any message is handled —
// a listener that must not miss what is published after it started waits
// for it, one that replays what was published before does it there — or
// once subscribing failed (not ok, so that a waiter is not left hanging).
// It returns nil when ctx ends, the subscribe error, or
// ErrSubscriptionClosed.
// size bounds the messages buffered between Redis and handle (0: the
// client's default, 100).
func Listen(ctx context.Context, rdb redis.UniversalClient, channel string, size int, subscribed func(ok bool), handle func(payload string)) error {
	ps := Subscribe(ctx, rdb, channel)
	defer ps.Close()
	_, err := ps.Receive(ctx)
	if subscribed != nil {
		subscribed(err == nil && ctx.Err() == nil)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var opts []redis.ChannelOption
	if size > 0 {
		opts = append(opts, redis.WithChannelSize(size))
	}
	ch := ps.Channel(opts...)
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return ErrSubscriptionClosed
			}
			handle(m.Payload)
		}
	}
}
