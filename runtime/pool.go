package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// pool is the live-instance budget shared by every module (maxLiveTotal slots)
// and the idle instances kept warm (at most maxIdlePerModule per module).
//
// A slot is held from the moment it is granted until the instance made in it
// has been closed, so the number of live wazero instances never exceeds the
// number of slots. Callers that find no idle instance and no free slot queue as
// waiters; a released instance is handed straight to a waiter of the same
// module, and a slot freed by closing an instance goes to the waiter at the head
// of the queue. A waiter whose module holds no slot at all is served first, so no
// module starves while another keeps the pool busy. While anyone waits, no
// instance is parked idle.
type pool struct {
	mu      sync.Mutex
	max     int
	live    int         // slots held: instances live, being made or being closed
	idle    []*instance // all modules, oldest first
	waiters []*waiter   // FIFO

	instances atomic.Int64 // wazero/Extism instances currently open
	peak      atomic.Int64 // highest instances ever seen
	created   atomic.Int64 // instances made since start
	recycled  atomic.Int64 // idle instances closed because another client's call needed one
}

// waiter is a caller queued for an instance of m.
type waiter struct {
	m       *module
	ch      chan *instance // buffered: an instance of m, or nil for a slot to make one in
	granted bool           // under pool.mu
}

func newPool(max int) *pool { return &pool{max: max} }

// acquire returns an instance of m: an idle one, a fresh one in a free slot or in
// the slot of an evicted idle instance of another module, or one handed over by
// a releasing call. Waiting is bounded by ctx only; the caller starts its call
// deadline after acquire returns.
//
// Instances are not shared between clients (owner, the call's client label): an
// idle instance that served another client is closed and a fresh one made in
// its slot, so nothing a call left in linear memory reaches another client's
// call (recycled rather than cleared: a Go guest's heap cannot be reset in
// place). A warm instance no call has used yet serves anyone.
func (p *pool) acquire(ctx context.Context, m *module, owner string) (*instance, error) {
	p.mu.Lock()
	if m.retired {
		p.mu.Unlock()
		return nil, fmt.Errorf("module %s was unloaded", m.info.Name)
	}
	other := -1
	for i := len(p.idle) - 1; i >= 0; i-- {
		if in := p.idle[i]; in.m == m {
			if in.owner != "" && in.owner != owner {
				if other < 0 {
					other = i
				}
				continue
			}
			p.idle = slices.Delete(p.idle, i, i+1)
			m.idleN--
			p.mu.Unlock()
			return in, nil
		}
	}
	if other >= 0 && p.live >= p.max {
		// Only another client's instance is idle and no slot is free: recycle it.
		in := p.idle[other]
		p.idle = slices.Delete(p.idle, other, other+1)
		m.idleN--
		p.mu.Unlock()
		p.recycled.Add(1)
		p.closeInstance(in)
		return p.fresh(ctx, m)
	}
	if p.live < p.max {
		p.live++
		m.live++
		p.mu.Unlock()
		return p.fresh(ctx, m)
	}
	if len(p.idle) > 0 {
		// Every slot is taken but another module has an idle instance: its slot is ours.
		victim := p.idle[0]
		p.idle = p.idle[1:]
		victim.m.idleN--
		victim.m.live--
		m.live++
		p.mu.Unlock()
		p.closeInstance(victim)
		return p.fresh(ctx, m)
	}
	w := &waiter{m: m, ch: make(chan *instance, 1)}
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()

	select {
	case in := <-w.ch:
		if in != nil && in.owner != "" && in.owner != owner {
			p.recycled.Add(1)
			p.closeInstance(in) // another client's: a fresh one in its slot
			return p.fresh(ctx, m)
		}
		if in != nil {
			return in, nil
		}
		return p.fresh(ctx, m)
	case <-ctx.Done():
	}
	p.mu.Lock()
	if !w.granted {
		p.waiters = slices.DeleteFunc(p.waiters, func(x *waiter) bool { return x == w })
		p.mu.Unlock()
	} else {
		p.mu.Unlock()
		// Granted while we gave up: pass the grant on.
		if in := <-w.ch; in != nil {
			p.release(in, true)
		} else {
			p.freeSlot(m)
		}
	}
	return nil, fmt.Errorf("waiting for a free sandbox (all %d in use): %w", p.max, ctx.Err())
}

// fresh makes a new instance of m in a slot the caller holds, freeing the slot
// if that fails.
func (p *pool) fresh(ctx context.Context, m *module) (*instance, error) {
	in, err := m.newInstance(ctx)
	if err != nil {
		p.freeSlot(m)
		return nil, err
	}
	in.m = m
	p.created.Add(1)
	n := p.instances.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	return in, nil
}

// warm makes one idle instance of m if a slot is free and nobody waits.
func (p *pool) warm(ctx context.Context, m *module) error {
	p.mu.Lock()
	if m.retired || p.live >= p.max || len(p.waiters) > 0 {
		p.mu.Unlock()
		return nil
	}
	p.live++
	m.live++
	p.mu.Unlock()
	in, err := p.fresh(ctx, m)
	if err != nil {
		return err
	}
	p.release(in, true)
	return nil
}

// release returns an instance after a call. A reusable instance goes to a waiter
// of its module, else idle while its module has fewer than maxIdlePerModule idle
// and nobody waits; anything else is closed and its slot freed.
func (p *pool) release(in *instance, reusable bool) {
	m := in.m
	p.mu.Lock()
	if reusable && !m.retired {
		if len(p.waiters) == 0 {
			if m.idleN < maxIdlePerModule {
				p.idle = append(p.idle, in)
				m.idleN++
				p.mu.Unlock()
				return
			}
		} else if head := p.waiters[0]; head.m == m || head.m.live > 0 {
			// The head is not starved; serve the first waiter of this module, if any.
			for i, w := range p.waiters {
				if w.m == m {
					p.waiters = slices.Delete(p.waiters, i, i+1)
					w.granted = true
					w.ch <- in
					p.mu.Unlock()
					return
				}
			}
		}
	}
	p.mu.Unlock()
	p.closeInstance(in)
	p.freeSlot(m)
}

// freeSlot gives m's slot to the waiter at the head of the queue (a waiter whose
// module holds no slot first), or back to the pool.
func (p *pool) freeSlot(m *module) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m.live--
	if len(p.waiters) == 0 {
		p.live--
		return
	}
	i := slices.IndexFunc(p.waiters, func(w *waiter) bool { return w.m.live == 0 })
	if i < 0 {
		i = 0
	}
	w := p.waiters[i]
	p.waiters = slices.Delete(p.waiters, i, i+1)
	w.m.live++
	w.granted = true
	w.ch <- nil
}

// closeInstance closes an instance that holds a slot (the caller frees the slot
// afterwards).
func (p *pool) closeInstance(in *instance) {
	in.close(context.Background())
	p.instances.Add(-1)
}

// drain closes every idle instance of m; retire also refuses new acquires.
func (p *pool) drain(m *module, retire bool) {
	p.mu.Lock()
	if retire {
		m.retired = true
	}
	var mine []*instance
	p.idle = slices.DeleteFunc(p.idle, func(in *instance) bool {
		if in.m == m {
			mine = append(mine, in)
			return true
		}
		return false
	})
	m.idleN = 0
	p.mu.Unlock()
	for _, in := range mine {
		p.closeInstance(in)
		p.freeSlot(m)
	}
}

// idleOf counts m's idle instances.
func (p *pool) idleOf(m *module) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m.idleN
}

// liveSlots is the number of slots held.
func (p *pool) liveSlots() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}
