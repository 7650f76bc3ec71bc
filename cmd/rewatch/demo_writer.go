package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rewatch/rewatch/sim"
)

const demoNamespace = "demo"

// writer is the demo's workload: creates, updates and deletes against the simulated server,
// steady enough that every watch stream carries events when a fault hits it.
type writer struct {
	srv     *sim.Server
	rng     *rand.Rand
	target  int
	names   []string
	next    int
	created int
	updated int
	deleted int
}

func newWriter(srv *sim.Server, seed uint64, target int) *writer {
	return &writer{srv: srv, rng: rand.New(rand.NewPCG(seed, 0x77726974)), target: target}
}

// populate creates the objects the initial LIST finds.
func (w *writer) populate() error {
	for range w.target {
		if err := w.create(); err != nil {
			return err
		}
	}
	w.created = 0
	return nil
}

func (w *writer) create() error {
	name := fmt.Sprintf("cm-%05d", w.next)
	w.next++
	if _, err := w.srv.Create(sim.ConfigMaps, demoNamespace, name, map[string]string{"v": "0"}); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	w.names = append(w.names, name)
	w.created++
	return nil
}

// step keeps the object count near target: mostly updates, creates and deletes balanced.
func (w *writer) step() error {
	r := w.rng.IntN(10)
	switch {
	case len(w.names) == 0 || (r < 2 && len(w.names) < 2*w.target+1):
		return w.create()
	case r < 4 && len(w.names) > w.target/2:
		i := w.rng.IntN(len(w.names))
		name := w.names[i]
		w.names[i] = w.names[len(w.names)-1]
		w.names = w.names[:len(w.names)-1]
		if _, err := w.srv.Delete(sim.ConfigMaps, demoNamespace, name); err != nil {
			return fmt.Errorf("delete %s: %w", name, err)
		}
		w.deleted++
	default:
		name := w.names[w.rng.IntN(len(w.names))]
		if _, err := w.srv.Update(sim.ConfigMaps, demoNamespace, name, map[string]string{"v": fmt.Sprint(w.rng.Uint32())}); err != nil {
			return fmt.Errorf("update %s: %w", name, err)
		}
		w.updated++
	}
	return nil
}

// run writes rate operations per second until ctx ends.
func (w *writer) run(ctx context.Context, rate float64) error {
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := w.step(); err != nil {
				return err
			}
		}
	}
}
