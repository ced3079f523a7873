package drivertest

import (
	"reflect"
	"sort"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
)

// The contract: every interface a driver implements, or may (Notifier).
var contract = []reflect.Type{
	reflect.TypeFor[driver.Driver[any]](),
	reflect.TypeFor[driver.Executor](),
	reflect.TypeFor[driver.ExecutorTx[any]](),
	reflect.TypeFor[driver.Notifier](),
}

// unexercised returns the methods of the contract that no behaviour is about, and the
// behaviours that name a method the contract does not have.
func unexercised(bs []behaviour[any]) (missing, unknown []string) {
	methods := map[string]bool{}
	for _, iface := range contract {
		for m := range iface.Methods() {
			methods[m.Name] = true
		}
	}
	named := map[string]bool{}
	for _, b := range bs {
		named[b.method] = true
		if !methods[b.method] {
			unknown = append(unknown, b.method)
		}
	}
	for m := range methods {
		if !named[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	return missing, unknown
}

// Exercise has a behaviour for every method of the contract: a method added to an
// interface fails this test until the suite exercises it.
func TestExercise_EveryMethodOfTheContract(t *testing.T) {
	t.Parallel()
	missing, unknown := unexercised(behaviours[any]())
	if len(missing) > 0 {
		t.Errorf("methods of the driver contract that Exercise does not exercise: %v", missing)
	}
	if len(unknown) > 0 {
		t.Errorf("behaviours about methods the contract does not have: %v", unknown)
	}
}

// The broken variant: a suite that lost the behaviours of one method is caught.
func TestBrokenExerciseWithoutAMethod_IsCaught(t *testing.T) {
	t.Parallel()
	var fewer []behaviour[any]
	for _, b := range behaviours[any]() {
		if b.method != "InboxExtendLease" {
			fewer = append(fewer, b)
		}
	}
	if missing, _ := unexercised(fewer); len(missing) != 1 || missing[0] != "InboxExtendLease" {
		t.Fatalf("missing %v, want [InboxExtendLease]", missing)
	}
	if _, unknown := unexercised(append(fewer, behaviour[any]{method: "InboxFrobnicate"})); len(unknown) != 1 {
		t.Fatalf("unknown %v, want [InboxFrobnicate]", unknown)
	}
}
