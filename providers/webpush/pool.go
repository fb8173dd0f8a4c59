package webpush

import (
	"github.com/hushpush/hush/providers"

	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// The connection pool's bounds: push-service origins cost a subscriber
// nothing to mint, so neither the number of connections nor their idle
// life is left to the origins.
const (
	// MaxConnsDefault caps the connections a sender holds open to push
	// services at once, across every origin.
	MaxConnsDefault = 128
	// IdleTimeoutDefault is how long a connection with no request in
	// flight stays open (HTTP/1.1 and HTTP/2 alike).
	IdleTimeoutDefault = 30 * time.Second
)

// capRetry is how often a dial waiting at the cap closes the idle
// connections again: a connection becomes idle when its last request
// ends, which the dial does not see.
const capRetry = 50 * time.Millisecond

// connPool counts the connections its dial opens and holds them to a cap.
// A dial past the cap closes the idle connections (which give their slots
// back) and waits for a slot until its context ends or SendTimeout
// passes: the transport dials on a context without the request's deadline,
// and the request itself gives up at its own.
type connPool struct {
	slots     chan struct{}
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	closeIdle func()
}

func newConnPool(max int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *connPool {
	return &connPool{slots: make(chan struct{}, max), dial: dial, closeIdle: func() {}}
}

// open is the number of connections open now.
func (p *connPool) open() int { return len(p.slots) }

// DialContext dials addr once a slot is free.
func (p *connPool) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	c, err := p.dial(ctx, network, addr)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return &pooledConn{Conn: c, release: sync.OnceFunc(func() { <-p.slots })}, nil
}

func (p *connPool) acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, providers.CallTimeout)
	defer cancel()
	tick := time.NewTicker(capRetry)
	defer tick.Stop()
	for {
		p.closeIdle()
		select {
		case p.slots <- struct{}{}:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("webpush: %d connections open, the cap: %w", cap(p.slots), ctx.Err())
		case <-tick.C:
		}
	}
}

// pooledConn gives its slot back once it is closed.
type pooledConn struct {
	net.Conn
	release func()
}

func (c *pooledConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
