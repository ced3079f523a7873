package hookinbox

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hookinbox/hookinbox/provider"
)

// serveBatch receives a request that carries several events (provider.BatchVerifier)
// with ReceiveBatch, and answers once for all of them:
//
//	200 {"outcome":"batch","events":3,"outcomes":{"accepted":2,"duplicate":1}}
//
// only once every event is committed; a request of one event is answered as a single
// delivery is ({"outcome":"processed"}, ...). When some were not (a handler failed on a sync
// endpoint), it answers 500, and the provider's retry of the whole request finds the
// committed ones as duplicates.
func (i *Inbox[TTx]) serveBatch(w http.ResponseWriter, r *http.Request, ep *endpoint, d *delivery, bv provider.BatchVerifier, body []byte) {
	vs, err := bv.VerifyBatch(r.Header, body)
	if err != nil {
		d.refuse(w, err)
		return
	}
	d.events, d.secretIndex = len(vs), -1
	evs := make([]Event, len(vs))
	for _, v := range vs {
		d.secretIndex = v.SecretIndex
	}
	// One record for the request's every event.
	record := i.recordRequest(r, d.secretIndex)
	for k, v := range vs {
		evs[k] = Event{Provider: ep.provider, Endpoint: ep.Name, ID: v.ID, Type: v.Type, Payload: v.Body, request: record, payloadIsJSON: v.BodyIsJSON}
	}
	outs, err := i.receiveBatch(r.Context(), evs)
	var be *BatchError
	if errors.As(err, &be) {
		switch {
		case be.Refused():
			d.fail(w, http.StatusBadRequest, "invalid_event", fmt.Sprintf("%d events of the batch refused by the database; the others were recorded", len(be.Failed)), err)
		case be.Unavailable():
			w.Header().Set("Retry-After", "5")
			d.fail(w, http.StatusServiceUnavailable, "unavailable", "temporarily unavailable; retry the request", err)
		default:
			d.fail(w, http.StatusInternalServerError, "error", "some events of the batch failed; retry the request", err)
		}
		return
	}
	if err != nil {
		d.failReceive(w, err)
		return
	}
	d.status = http.StatusOK
	if len(outs) == 1 {
		d.outcome, d.eventID, d.eventType = outs[0], evs[0].ID, evs[0].Type
		writeOutcome(w, outs[0])
		return
	}
	counts := map[Outcome]int{}
	for _, out := range outs {
		counts[out]++
	}
	d.outcome = OutcomeBatch
	w.Header().Set(OutcomeHeader, string(OutcomeBatch))
	writeJSON(w, http.StatusOK, map[string]any{"outcome": OutcomeBatch, "events": len(outs), "outcomes": counts})
}
