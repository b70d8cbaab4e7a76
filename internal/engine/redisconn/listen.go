package redisconn

import (
	"context"
	"errors"
	"sync"

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

// Subscribe subscribes to channels the way Publish publishes on them. On
// a cluster they must be of one slot (one SSUBSCRIBE); ListenAll takes
// channels of several.
func Subscribe(ctx context.Context, rdb redis.UniversalClient, channels ...string) *redis.PubSub {
	if Sharded(rdb) {
		return rdb.SSubscribe(ctx, channels...)
	}
	return rdb.Subscribe(ctx, channels...)
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
	return listen(ctx, rdb, []string{channel}, size, subscribed, handle)
}

// ListenAll is Listen over several channels (a deployment's partitions'
// channels). On a single server one SUBSCRIBE names them all. On a cluster
// they are shard channels, each of its partition's slot, and one
// SSUBSCRIBE may not name channels of two slots: each channel gets a
// subscription of its own, on its shard. subscribed is called once: when
// every subscription holds (ok), or at the first that failed (not ok).
// handle is never called by two subscriptions at once; each channel's
// messages keep their order, there is none across channels. It returns
// nil when ctx ends, or the first subscription's error or
// ErrSubscriptionClosed — the other subscriptions are ended then too.
func ListenAll(ctx context.Context, rdb redis.UniversalClient, channels []string, size int, subscribed func(ok bool), handle func(payload string)) error {
	if len(channels) == 0 {
		if subscribed != nil {
			subscribed(false)
		}
		return errors.New("redisconn: ListenAll without a channel")
	}
	if len(channels) == 1 || !Sharded(rdb) {
		return listen(ctx, rdb, channels, size, subscribed, handle)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex // guards the fields below, and serialises handle
		pending = len(channels)
		told    bool
		first   error
	)
	gate := make(chan struct{}) // closed once subscribed was called
	tell := func(ok bool) {
		mu.Lock()
		pending--
		if !told && (!ok || pending == 0) {
			told = true
			if subscribed != nil {
				subscribed(ok)
			}
			close(gate)
		}
		mu.Unlock()
		<-gate // no message is handled before subscribed was called
	}
	locked := func(payload string) {
		mu.Lock()
		defer mu.Unlock()
		handle(payload)
	}
	var wg sync.WaitGroup
	for _, ch := range channels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := listen(ctx, rdb, []string{ch}, size, tell, locked)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	return first
}

func listen(ctx context.Context, rdb redis.UniversalClient, channels []string, size int, subscribed func(ok bool), handle func(payload string)) error {
	ps := Subscribe(ctx, rdb, channels...)
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
