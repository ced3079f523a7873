// Package probe tests a webhook receiver, any receiver, hookinbox or not, for lost
// and doubled events. It makes up facts (Stripe invoices paid or voided, GitHub pull
// requests merged, ...), delivers the Event objects of each fact's life signed as
// its provider signs them and the way the provider delivers them (two copies at the
// same instant, retries on the provider's schedule, a hang-up while the receiver
// works, a retry while the first copy still runs, out of order, a second Event object
// for the same fact, a burst), and then reads the receiver's own record of what it
// applied through a check: a query on its database, or a URL of its own.
//
// A fact whose outcome was acknowledged (2xx) but that the receiver never applied is
// lost; one applied more than once is doubled; one never applied whose outcome never
// got a 2xx before the provider gave up is undelivered.
//
// The probe uses only the network and the check: it never reads hookinbox's tables,
// so it judges hookinbox as it judges any other receiver.
//
//	report, err := probe.Run(ctx, &probe.Config{Target: url, Provider: "stripe", Signer: signer, Check: check})
package probe
