package server

import "github.com/hookinbox/hookinbox"

// wakeDispatcher passes the inbox's observations on and wakes the dispatcher when an
// event whose handler writes outbox messages has committed, so that forwarding does
// not wait for the dispatcher's next poll. The Observer is called after commit, so
// the woken dispatcher finds the messages.
type wakeDispatcher struct {
	hookinbox.Observer // may be nil

	notify func()
	// endpoints are those whose handlers write outbox messages (outboxWriters); it is
	// only read after construction.
	endpoints map[string]bool
}

func (w *wakeDispatcher) Delivery(d hookinbox.DeliveryInfo) {
	if w.Observer != nil {
		w.Observer.Delivery(d)
	}
	// Only processed: an accepted (async) receipt has written nothing yet; its
	// worker's attempt does, below.
	if d.Outcome == hookinbox.OutcomeProcessed && w.endpoints[d.Endpoint] {
		w.notify()
	}
}

func (w *wakeDispatcher) Attempt(a hookinbox.AttemptInfo) {
	if w.Observer != nil {
		w.Observer.Attempt(a)
	}
	if a.Result == hookinbox.AttemptProcessed && w.endpoints[a.Endpoint] {
		w.notify()
	}
}

// Group passes a group commit on to an observer that counts them (the metrics do):
// without it, wrapping the observer hid hookinbox_group_commit_* from serve's metrics
// whenever an endpoint wrote outbox messages.
func (w *wakeDispatcher) Group(g hookinbox.GroupInfo) {
	if o, ok := w.Observer.(hookinbox.GroupObserver); ok {
		o.Group(g)
	}
}
