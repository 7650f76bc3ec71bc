package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transitions/fsmcheck"
)

// eventBuffer decouples the stream reader from the store: a burst of frames (or LIST items) is
// decoded while the loop applies earlier ones, and no more than this many run ahead of it.
const eventBuffer = 1024

// Run runs the reflector until ctx is done. It returns nil after a stop through ctx, or the
// first error the store reported (the reflector stops then: a store that refuses objects
// cannot be kept in sync).
func Run(ctx context.Context, cfg Config) error {
	cfg, m, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	d := &driver{cfg: cfg, m: m, events: make(chan fsm.Event, eventBuffer), base: ctx}
	d.incremental, _ = cfg.Store.(IncrementalStore)
	if v, ok := cfg.Store.(VersionedStore); ok {
		d.skipping, _ = cfg.Transport.(SkippingTransport)
		if d.skipping != nil {
			d.versioned = v
		}
	}
	d.rvUpdater, _ = cfg.Store.(ResourceVersionUpdater)
	if cfg.ResyncPeriod > 0 {
		d.resyncer, _ = cfg.Store.(Resyncer)
	}
	if p := cfg.Persistence; p != nil && p.Save != nil {
		d.lister = cfg.Store.(Lister) // checked by withDefaults
		d.saveDone = make(chan saveResult, 1)
		// A save the period began runs until the loop has stopped, whatever the context:
		// then its context ends (finishSaves), so the stop's own save follows soon.
		d.saveCtx, d.saveCancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	d.s = m.Initial()
	return d.loop(ctx, d.load(ctx))
}

type driver struct {
	cfg    Config
	m      *transitions.Machine
	s      fsm.Snapshot
	out    []fsm.Command
	events chan fsm.Event
	base   context.Context

	// The request in flight: its id, how to abort it, and when its goroutine has returned.
	reqID     uint64
	reqCancel context.CancelFunc
	reqDone   chan struct{}
	wg        sync.WaitGroup

	// The armed timer.
	timer   clockx.Timer
	timerC  <-chan time.Time
	timerID uint64

	// staged holds a full state for a store without incremental replace; incremental is the
	// store when it has it (asked once, not for every object staged), replacing is its open
	// replacement, and put counts the objects it took.
	staged      []any
	incremental IncrementalStore
	// versioned and skipping are the store and the transport when the store says which
	// versions it holds and the transport can use that (both asked once).
	versioned VersionedStore
	skipping  SkippingTransport
	replacing Replacement
	put       int
	// rvUpdater is the store when it follows the watch's progress (asked once).
	rvUpdater ResourceVersionUpdater
	// resyncer is the store when it is to be resynced every ResyncPeriod, on resyncTimer.
	resyncer    Resyncer
	resyncTimer clockx.Timer
	resyncC     <-chan time.Time
	stopped     bool
	err         error

	// Persistence (docs/semantics.md, "Persisted cache"): the snapshot loaded before the start,
	// held until the machine restores or drops it; the store as a Lister when it is saved, the
	// save timer, whether a save is running (its result comes on saveDone), the resourceVersion
	// of the last save that succeeded, and the save to make once the loop has stopped.
	loaded    []any
	snapIndex snapshotIndex
	// held are the objects a probe's items brought (fsm.Command.Hold), kept out of an
	// incremental store until the machine says they are a full state.
	held      []any
	lister    Lister
	saveTimer clockx.Timer
	saveC     <-chan time.Time
	saving    bool
	saveDone  chan saveResult
	savedRV   string
	final     *pendingSave
	// saveFailures counts the saves that failed since the last that succeeded: the first is
	// logged with its reason, the next ones are not, and the save that works again says so.
	saveFailures int
	// saveCtx is the context of the saves the period begins (saveCancel ends it).
	saveCtx    context.Context
	saveCancel context.CancelFunc
}

// pendingSave is what a save writes: the store's objects, consistent at rv.
type pendingSave struct {
	rv    string
	items []any
}

type saveResult struct {
	rv      string
	objects int
	err     error
}

func (d *driver) loop(ctx context.Context, start fsm.Event) error {
	defer d.wg.Wait()
	defer d.abortRequest()
	d.armSave()
	d.handle(start)
	for !d.stopped {
		select {
		case <-ctx.Done():
			d.applyRead()
			if !d.stopped {
				d.final = d.takeSave()
				d.handle(fsm.Event{Kind: fsm.EvStop})
			}
		case e := <-d.events:
			d.handle(e)
		case <-d.timerC:
			d.timerC = nil
			d.handle(fsm.Event{Kind: fsm.EvTimerFired, Timer: d.timerID})
		case <-d.resyncC:
			d.resyncC = nil
			d.resync()
		case <-d.saveC:
			d.saveC = nil
			d.saveTick()
		case r := <-d.saveDone:
			d.saved(r)
		}
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	if d.resyncTimer != nil {
		d.resyncTimer.Stop()
	}
	if d.saveTimer != nil {
		d.saveTimer.Stop()
	}
	d.abandonReplace()
	d.loaded, d.snapIndex, d.held = nil, nil, nil
	d.finishSaves()
	return d.err
}

// load reads the persisted snapshot before the start, and says in the start event what it
// holds: its resourceVersion and object count, or why it was refused (logged here, once). The
// objects stay with the driver until the machine restores or drops them (docs/semantics.md,
// "Persisted cache").
func (d *driver) load(ctx context.Context) fsm.Event {
	e := fsm.Event{Kind: fsm.EvStart}
	p := d.cfg.Persistence
	if p == nil || p.Load == nil {
		return e
	}
	rv, items, err := p.Load(ctx)
	switch {
	case ctx.Err() != nil:
		// Stopped before the start: the loop stops at once, and nothing was refused.
	case err != nil:
		e.Refused = err.Error()
		d.cfg.Logger.Warn("persisted snapshot refused; listing instead", "resource", d.cfg.Transport.String(), "reason", e.Refused)
	case rv != "":
		e.ResourceVersion, e.ItemCount = rv, len(items)
		d.loaded = items
	}
	return e
}

// restore puts the loaded snapshot into the store as one full state at its resourceVersion,
// as a LIST's is (an informer's handlers hear adds), and lets go of it.
func (d *driver) restore(c *fsm.Command) error {
	items := d.loaded
	d.loaded, d.snapIndex = nil, nil
	// The snapshot is what a save would write until the store moves past its RV.
	d.savedRV = c.ResourceVersion
	if d.incremental == nil {
		if items == nil {
			items = []any{}
		}
		if err := d.cfg.Store.Replace(items, c.ResourceVersion); err != nil {
			return fmt.Errorf("store: restore %d objects at rv %s: %w", len(items), c.ResourceVersion, err)
		}
		return nil
	}
	if err := d.beginReplace(); err != nil {
		return err
	}
	for _, obj := range items {
		if err := d.putStaged(obj); err != nil {
			return err
		}
	}
	return d.replace(c)
}

// armSave starts the save period, when the store is saved while the reflector runs.
func (d *driver) armSave() {
	if d.lister == nil || d.cfg.Persistence.Period <= 0 {
		return
	}
	d.saveTimer = d.cfg.Clock.NewTimer(d.cfg.Persistence.Period)
	d.saveC = d.saveTimer.C()
}

// saveTick saves the store when its period is over, if the machine says it is consistent at
// its last resourceVersion (transitions.Persistable), no save is running and it changed since
// the last save; and starts the next period.
func (d *driver) saveTick() {
	defer d.armSave()
	if d.saving {
		d.cfg.Logger.Debug("store not persisted: the last save is still running", "resource", d.cfg.Transport.String())
		return
	}
	if p := d.takeSave(); p != nil {
		d.startSave(d.saveCtx, p)
	}
}

// takeSave takes the store's objects and last resourceVersion, on the loop, when the store
// may be saved and changed since the last save; nil otherwise.
func (d *driver) takeSave() *pendingSave {
	switch {
	case d.lister == nil:
		return nil
	case !transitions.Persistable(&d.s):
		d.cfg.Logger.Debug("store not persisted: not consistent now", "resource", d.cfg.Transport.String(), "state", d.s.State.String())
		return nil
	case d.s.LastRV == d.savedRV:
		// Every change the store is told of moves the last resourceVersion.
		d.cfg.Logger.Debug("store not persisted: unchanged since the last save", "resource", d.cfg.Transport.String(), "rv", d.savedRV)
		return nil
	}
	return &pendingSave{rv: d.s.LastRV, items: d.lister.List()}
}

// startSave saves p off the loop; its result comes back on saveDone.
func (d *driver) startSave(ctx context.Context, p *pendingSave) {
	d.saving = true
	d.cfg.Logger.Debug("persisting the store", "resource", d.cfg.Transport.String(), "rv", p.rv, "objects", len(p.items))
	save := d.cfg.Persistence.Save
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.saveDone <- saveResult{rv: p.rv, objects: len(p.items), err: save(ctx, p.rv, p.items)}
	}()
}

// saved takes a save's result. A failure is said once, at error level — a controller whose
// logger shows errors only must hear that its cache is not being persisted — and again when a
// save works again; the failures between are counted (docs/semantics.md, "Persisted cache").
func (d *driver) saved(r saveResult) {
	d.saving = false
	if r.err != nil && errors.Is(r.err, context.Canceled) && d.saveCtx.Err() != nil {
		// The stop ended the save the period began, to save the store as the loop left it:
		// that is no failure of the cache's.
		d.cfg.Logger.Debug("persisting the store abandoned at stop", "resource", d.cfg.Transport.String(), "rv", r.rv)
		return
	}
	res := SaveResult{At: d.cfg.Clock.Now(), RV: r.rv, Objects: r.objects, Err: r.err}
	for _, o := range d.cfg.Observers {
		if so, ok := o.(SaveObserver); ok {
			so.ObserveSave(res)
		}
	}
	if r.err != nil {
		d.saveFailures++
		if d.saveFailures == 1 {
			d.cfg.Logger.Error("persisting the store failed; it is tried again every period, and said again once a save works", "resource", d.cfg.Transport.String(), "rv", r.rv, "err", r.err)
		} else {
			d.cfg.Logger.Debug("persisting the store failed again", "resource", d.cfg.Transport.String(), "rv", r.rv, "failures", d.saveFailures, "err", r.err)
		}
		return
	}
	d.savedRV = r.rv
	if d.saveFailures > 0 {
		d.cfg.Logger.Info("persisting the store works again", "resource", d.cfg.Transport.String(), "rv", r.rv, "objects", r.objects, "failed", d.saveFailures)
		d.saveFailures = 0
		return
	}
	d.cfg.Logger.Debug("store persisted", "resource", d.cfg.Transport.String(), "rv", r.rv, "objects", r.objects)
}

// finishSaves, once the loop has stopped, ends the context of the save running and waits for
// it, then makes the stop's save of the store as the loop left it.
func (d *driver) finishSaves() {
	if d.saveCancel != nil {
		d.saveCancel()
	}
	if d.saving {
		d.saved(<-d.saveDone)
	}
	p := d.final
	d.final = nil
	if p == nil || p.rv == d.savedRV {
		return
	}
	d.startSave(context.WithoutCancel(d.base), p)
	d.saved(<-d.saveDone)
}

// armResync starts the resync period again, as a full state has reached the store: client-go's
// reflector starts its resync timer anew after each LIST.
func (d *driver) armResync() {
	if d.resyncer == nil {
		return
	}
	if d.resyncTimer != nil {
		d.resyncTimer.Stop()
	}
	d.resyncTimer = d.cfg.Clock.NewTimer(d.cfg.ResyncPeriod)
	d.resyncC = d.resyncTimer.C()
}

// resync calls the store's Resync when the period is over, if the machine says a resync runs
// now (transitions.Resyncs) and ShouldResync agrees, and starts the next period; a resync that
// does not run now waits for the next full state to start the period again.
func (d *driver) resync() {
	if !transitions.Resyncs(&d.s) {
		return
	}
	if d.cfg.ShouldResync == nil || d.cfg.ShouldResync() {
		if err := d.resyncer.Resync(); err != nil {
			d.fail(fmt.Errorf("store: resync: %w", err))
			return
		}
	}
	d.armResync()
}

// applyRead takes, before a stop, every event the transport had already read: the request
// in flight is aborted and, once it has returned, what it handed over is fed to the machine,
// as client-go's reflector applies an event it has read even when the stop comes meanwhile
// (docs/semantics.md, "Stores").
func (d *driver) applyRead() {
	d.abortRequest()
	if d.reqDone != nil {
		<-d.reqDone
	}
	for !d.stopped {
		select {
		case e := <-d.events:
			d.handle(e)
		default:
			return
		}
	}
}

// handle feeds one event to the machine and performs the commands it returns.
func (d *driver) handle(e fsm.Event) {
	// The wall reading alone: it is what the journal records, so a replay measures every
	// duration the machine measures from the same two readings (docs/design.md, "Event
	// sourcing"); a monotonic reading, which Sub would prefer, is lost in the journal.
	e.Now = d.cfg.Clock.Now().Round(0)
	m := d.m
	from, wasSynced := d.s.State, d.s.Synced
	cause := m.Classify(&d.s, &e)
	if d.cfg.Checked {
		// The checker hands the event on to the stateless machine, which sends it to the heap;
		// a copy goes there instead, so that e stays on the stack and the unchecked hot path
		// allocates nothing for it.
		checked := e
		var err error
		if d.out, err = fsmcheck.Step(m, &d.s, &checked, d.out[:0]); err != nil {
			d.fail(err)
			return
		}
		e = checked
	} else {
		d.out = m.Step(&d.s, &e, d.out[:0])
	}
	// Commands run before observers hear of the transition: an observer that marks the
	// reflector synced must not do so while Store.Replace of the initial state is still
	// running (docs/semantics.md, "Visibility": HasSynced).
	var err error
	for i := range d.out {
		if err = d.exec(&d.out[i]); err != nil {
			break
		}
	}
	if err == nil && !wasSynced && d.s.Synced && cause != fsm.CauseListComplete && cause != fsm.CauseInitialEventsEnd {
		// A restored snapshot synced without a full state of its own (its watch caught up,
		// or it was as new as the probe): its resync period starts now.
		d.armResync()
	}
	if err == nil && cause == fsm.CauseWatchEvent && d.rvUpdater != nil {
		// After the event was applied, as client-go's reflector tells it (docs/semantics.md,
		// "Stores").
		d.rvUpdater.UpdateResourceVersion(d.s.LastRV)
	}
	d.record(e, from, cause, err)
	clear(d.out) // drop references to objects now in the store
	if err != nil {
		d.fail(err)
	}
}

// fail stops the reflector because of an error that is not the server's: a store that refuses
// an object, a journal that cannot be written, a transition the table forbids.
func (d *driver) fail(err error) {
	if d.err == nil {
		d.err = err
		d.cfg.Logger.Error("reflector stopping", "resource", d.cfg.Transport.String(), "err", err)
	}
	if !d.stopped && d.s.State != fsm.Stopped {
		d.handle(fsm.Event{Kind: fsm.EvStop})
	}
	d.stopped = true
}

func (d *driver) record(e fsm.Event, from fsm.State, cause fsm.Cause, err error) {
	t := Transition{Event: e, From: from, To: d.s.State, Cause: cause, Snapshot: d.s, Commands: d.out, Err: err}
	for _, o := range d.cfg.Observers {
		if err := o.Observe(t); err != nil && d.err == nil {
			d.err = fmt.Errorf("observer: %w", err)
			defer d.fail(d.err)
		}
	}
	if e.Kind == fsm.EvWatchEvent && cause == fsm.CauseWatchEvent {
		return // the hot path logs nothing
	}
	log := d.cfg.Logger
	level := logLevel(e, cause)
	if !log.Enabled(d.base, level) {
		return
	}
	attrs := []any{"resource", d.cfg.Transport.String(), "event", e.Kind.String(), "from", from.String(), "to", d.s.State.String(), "cause", cause.String(), "rv", d.s.LastRV}
	if e.Failure != nil {
		attrs = append(attrs, "failure", e.Failure.String(), "message", e.Failure.Message)
	}
	for i := range d.out {
		if d.out[i].Kind == fsm.CmdArmTimer {
			attrs = append(attrs, "wait", d.out[i].Delay.String())
		}
	}
	msg := "transition"
	if cause == fsm.NoCause {
		msg = "ignored stale event"
	}
	log.Log(d.base, level, msg, attrs...)
}

func (d *driver) exec(c *fsm.Command) error {
	switch c.Kind {
	case fsm.CmdListPage:
		if c.AgainstSnapshot {
			d.listAgainstSnapshot(c)
			break
		}
		held := d.heldVersions()
		d.startRequest(c, func(ctx context.Context, c fsm.Command) {
			emit := func(e fsm.Event) bool { return d.send(ctx, e) }
			if held != nil {
				d.skipping.ListHeld(ctx, c, held, emit)
				return
			}
			d.cfg.Transport.List(ctx, c, emit)
		})
	case fsm.CmdOpenWatch:
		var held HeldVersion
		if c.SendInitialEvents {
			held = d.heldVersions()
		}
		d.startRequest(c, func(ctx context.Context, c fsm.Command) {
			emit := func(e fsm.Event) bool { return d.send(ctx, e) }
			if held != nil {
				d.skipping.WatchHeld(ctx, c, held, emit)
				return
			}
			d.cfg.Transport.Watch(ctx, c, emit)
		})
	case fsm.CmdAsk:
		hook := d.cfg.Hooks[c.Hook]
		d.startRequest(c, func(ctx context.Context, c fsm.Command) {
			d.send(ctx, answer(ctx, hook, c))
		})
	case fsm.CmdCancelRequest:
		if c.Request == d.reqID {
			d.abortRequest()
		}
	case fsm.CmdArmTimer, fsm.CmdWatchDeadline:
		// One timer: a wait is armed only in Backoff, a watch's deadline only while it watches.
		if d.timer != nil {
			d.timer.Stop()
		}
		d.timer = d.cfg.Clock.NewTimer(c.Delay)
		d.timerC, d.timerID = d.timer.C(), c.Timer
	case fsm.CmdCancelTimer:
		if c.Timer == d.timerID && d.timer != nil {
			d.timer.Stop()
			d.timerC = nil
		}
	case fsm.CmdStage:
		return d.stage(c)
	case fsm.CmdDiscardStaged:
		d.discard(c.ItemCount)
	case fsm.CmdReplaceStore:
		if err := d.replace(c); err != nil {
			return err
		}
		d.armResync()
	case fsm.CmdRestore:
		// Not synced yet: the resync period starts once it is (handle).
		if err := d.restore(c); err != nil {
			return err
		}
	case fsm.CmdDropSnapshot:
		d.loaded, d.snapIndex = nil, nil
		if p := d.cfg.Persistence; p != nil && p.Dropped != nil {
			p.Dropped()
		}
	case fsm.CmdApply:
		if err := d.apply(c); err != nil {
			return fmt.Errorf("store: %s %s: %w", strings.ToLower(c.Type.String()), c.Key, err)
		}
	case fsm.CmdStopped:
		d.stopped = true
		d.abortRequest()
		if d.timer != nil {
			d.timer.Stop()
			d.timerC = nil
		}
	default:
		return fmt.Errorf("driver: unknown command %v", c.Kind)
	}
	return nil
}

// stage takes the objects of a full state as they arrive: into the store's open replacement
// when the store is an IncrementalStore (one is begun with the state's first objects), held
// for the atomic Replace otherwise (docs/semantics.md, "Relists").
func (d *driver) stage(c *fsm.Command) error {
	if c.Type == fsm.Deleted {
		return d.unstage(c)
	}
	if c.Hold {
		return d.hold(c)
	}
	if d.incremental == nil {
		if c.Object != nil {
			d.staged = append(d.staged, c.Object)
		} else if c.Key != "" && len(c.Items) == 0 {
			return fmt.Errorf("store: stage %s: an item without its object for a store that cannot keep one", c.Key)
		}
		d.staged = append(d.staged, c.Items...)
		return nil
	}
	if err := d.beginReplace(); err != nil {
		return err
	}
	switch {
	case c.Object != nil:
		if err := d.putStaged(c.Object); err != nil {
			return err
		}
	case c.Key != "" && len(c.Items) == 0:
		if err := d.keepStaged(c.Key); err != nil {
			return err
		}
	}
	for _, obj := range c.Items {
		if err := d.putStaged(obj); err != nil {
			return err
		}
	}
	return nil
}

// unstage takes an object out of the full state being received: a DELETED among a watch-list's
// initial events (fsm.CmdStage). Held objects of its key are dropped; an incremental store's
// replacement drops the key (Dropper), so that the state's end deletes the object whether it
// was put in this state or held before; a replacement that cannot has the store's Delete.
func (d *driver) unstage(c *fsm.Command) error {
	key := c.Key
	if key == "" {
		k, err := KeyOf(c.Object)
		if err != nil {
			return fmt.Errorf("store: stage deletion: %w", err)
		}
		key = k
	}
	if d.incremental == nil {
		d.staged = slices.DeleteFunc(d.staged, func(obj any) bool {
			k, err := KeyOf(obj)
			return err == nil && k == key
		})
		return nil
	}
	if err := d.beginReplace(); err != nil {
		return err
	}
	if dr, ok := d.replacing.(Dropper); ok {
		if err := dr.Drop(key); err != nil {
			return fmt.Errorf("store: replace: drop %s: %w", key, err)
		}
		return nil
	}
	if c.Object == nil {
		return fmt.Errorf("store: replace: drop %s: %T cannot drop a key and the deletion carries no object", key, d.replacing)
	}
	if err := d.cfg.Store.Delete(c.Object); err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	return nil
}

// beginReplace opens a replacement of the incremental store unless one is open already.
func (d *driver) beginReplace() error {
	if d.replacing != nil {
		return nil
	}
	r, err := d.incremental.BeginReplace()
	if err != nil {
		return fmt.Errorf("store: begin replace: %w", err)
	}
	d.replacing, d.put = r, 0
	return nil
}

// keepStaged takes an item the transport left undecoded because the store holds it at the
// same resourceVersion (SkippingTransport).
func (d *driver) keepStaged(key string) error {
	k, ok := d.replacing.(Keeper)
	if !ok {
		return fmt.Errorf("store: replace: keep %s: the replacement of %T cannot keep an object", key, d.cfg.Store)
	}
	if err := k.Keep(key); err != nil {
		return fmt.Errorf("store: replace: %w", err)
	}
	d.put++
	return nil
}

// heldVersions is the store's query for the request about to start, when the store and the
// transport can skip what the store holds.
func (d *driver) heldVersions() HeldVersion {
	if d.versioned == nil {
		return nil
	}
	return d.versioned.HeldVersions()
}

func (d *driver) putStaged(obj any) error {
	if err := d.replacing.Put(obj); err != nil {
		key, _ := KeyOf(obj)
		return fmt.Errorf("store: replace: put %s: %w", key, err)
	}
	d.put++
	return nil
}

// replace completes the full state: Finish of the open replacement (one begun now for an empty
// state), or the atomic Replace of everything staged.
func (d *driver) replace(c *fsm.Command) error {
	if len(d.held) > 0 {
		held := d.held
		d.held = nil
		if d.incremental == nil {
			d.staged = append(d.staged, held...)
		} else {
			if err := d.beginReplace(); err != nil {
				return err
			}
			for _, obj := range held {
				if err := d.putStaged(obj); err != nil {
					return err
				}
			}
		}
	}
	if d.incremental == nil {
		items := d.staged
		d.staged = nil
		if items == nil {
			items = []any{}
		}
		if err := d.cfg.Store.Replace(items, c.ResourceVersion); err != nil {
			return fmt.Errorf("store: replace %d objects at rv %s: %w", len(items), c.ResourceVersion, err)
		}
		return nil
	}
	if err := d.beginReplace(); err != nil {
		return err
	}
	r := d.replacing
	d.replacing = nil
	if err := r.Finish(c.ResourceVersion); err != nil {
		return fmt.Errorf("store: finish replace of %d objects at rv %s: %w", d.put, c.ResourceVersion, err)
	}
	return nil
}

// discard drops what a failed listing staged: everything, or (n > 0) the last n objects, the
// part of a page that broke off and is to be fetched again. An incremental store keeps what
// it was given — each object is valid on its own — and only a discard of everything ends its
// replacement, whose Finish would otherwise delete what the next state has not yet brought.
func (d *driver) discard(n int) {
	if len(d.held) > 0 {
		// What is held is a probe's page, discarded whole.
		clear(d.held)
		d.held = d.held[:0]
		return
	}
	if n > 0 {
		if n <= len(d.staged) {
			clear(d.staged[len(d.staged)-n:])
			d.staged = d.staged[:len(d.staged)-n]
		}
		return
	}
	d.staged = nil
	d.abandonReplace()
}

func (d *driver) abandonReplace() {
	if d.replacing != nil {
		d.replacing.Abandon()
		d.replacing = nil
	}
}

func (d *driver) apply(c *fsm.Command) error {
	switch c.Type {
	case fsm.Added:
		return d.cfg.Store.Add(c.Object)
	case fsm.Modified:
		return d.cfg.Store.Update(c.Object)
	case fsm.Deleted:
		return d.cfg.Store.Delete(c.Object)
	}
	return errors.New("not an object event")
}

// startRequest runs fn for command c on its own goroutine, abortable through its context. The
// request before it is aborted, and fn starts only once that one has returned, its response
// body closed: one request at a time, so the previous request's connection is idle (or gone)
// when the next begins and a FreshConnection re-watch can close it instead of reusing it
// (docs/semantics.md, "Behind a load balancer"). The loop itself never waits.
func (d *driver) startRequest(c *fsm.Command, fn func(ctx context.Context, c fsm.Command)) {
	d.abortRequest()
	prev := d.reqDone
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(d.base)
	d.reqID, d.reqCancel, d.reqDone = c.Request, cancel, done
	cmd := *c
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(done)
		defer cancel()
		if prev != nil {
			<-prev
		}
		if ctx.Err() != nil {
			return
		}
		fn(ctx, cmd)
	}()
}

func (d *driver) abortRequest() {
	if d.reqCancel != nil {
		d.reqCancel()
		d.reqCancel = nil
	}
}

// send hands an event to the loop unless the request has been aborted meanwhile. An event
// the buffer has room for is handed over even when the request is being aborted: it has been
// read, and a stop applies what was read (applyRead).
func (d *driver) send(ctx context.Context, e fsm.Event) bool {
	select {
	case d.events <- e:
		return true
	default:
	}
	select {
	case d.events <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// logLevel follows what a client-go user sees from its reflector: a refused request (401, 403,
// 404, another 4xx: a misspelt resource, a bad selector, missing RBAC), which the reflector
// cannot ride out by itself, is an error, as client-go reports it ("Failed to watch", "Failed to
// list" through utilruntime.HandleError), once per request and so once per backoff step; a
// fallback the reflector takes for good or for a listing (a watch-list the server or the
// ListerWatcher cannot serve) is a warning, said once; a transient failure the reflector rides
// out (429, 5xx, a reset, a stream end with an error) is informational; a failure of a request
// that is no longer current, and every transition without a failure, is debug. The level
// follows the cause transitions/ decided, so the driver judges nothing itself
// (docs/semantics.md, "Visibility").
func logLevel(e fsm.Event, cause fsm.Cause) slog.Level {
	switch cause {
	case fsm.CauseWatchListNoEnd, fsm.CauseWatchListUnsupported, fsm.CauseWatchListFailed, fsm.CauseSnapshotAhead:
		// A server or ListerWatcher that cannot serve a watch-list: the reflector lists by
		// pages from then on, or for this listing. A persisted snapshot ahead of the server:
		// its etcd was restored from a backup.
		return slog.LevelWarn
	case fsm.CauseResume, fsm.CauseCatchUpMissed:
		// How a start from a persisted snapshot went, once per start.
		return slog.LevelInfo
	}
	switch {
	case e.Failure == nil || cause == fsm.NoCause:
		return slog.LevelDebug
	case cause == fsm.CauseListRejected || cause == fsm.CauseWatchRejected || cause == fsm.CauseWatchRejectedOnce:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// errNoHook answers a question the machine asked for which the caller gave no hook.
var errNoHook = errors.New("no hook configured")

// listAgainstSnapshot performs a LIST whose items the machine compares with the persisted
// snapshot (fsm.Command.AgainstSnapshot): each item says whether the snapshot holds it, and a
// transport that can skip leaves undecoded the items the snapshot holds, whose objects the
// driver takes from the snapshot (hold). The snapshot is indexed once, before the first such
// request; the index is read-only from then on.
func (d *driver) listAgainstSnapshot(c *fsm.Command) {
	if d.snapIndex == nil {
		d.snapIndex = newSnapshotIndex(d.loaded)
	}
	idx := d.snapIndex
	skipper, _ := d.cfg.Transport.(SkippingTransport)
	d.startRequest(c, func(ctx context.Context, c fsm.Command) {
		emit := func(e fsm.Event) bool {
			if e.Kind == fsm.EvListItem {
				e.InSnapshot = idx.holds(&e)
			}
			return d.send(ctx, e)
		}
		if skipper != nil {
			skipper.ListHeld(ctx, c, idx.held, emit)
			return
		}
		d.cfg.Transport.List(ctx, c, emit)
	})
}

// hold keeps a probe's items aside (fsm.Command.Hold); an item the transport left undecoded
// because the snapshot holds it is the snapshot's object.
func (d *driver) hold(c *fsm.Command) error {
	switch {
	case c.Object != nil:
		d.held = append(d.held, c.Object)
	case c.Key != "" && len(c.Items) == 0:
		obj, ok := d.snapIndex[c.Key]
		if !ok {
			return fmt.Errorf("store: stage %s: left undecoded as the snapshot's, which does not hold it", c.Key)
		}
		d.held = append(d.held, obj)
	}
	d.held = append(d.held, c.Items...)
	return nil
}
