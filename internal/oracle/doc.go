// Package oracle holds no code: it is the test-only module that checks hookinbox's
// verifiers and signers against each provider's official library, so that the
// library's own go.mod requires none of them.
//
// Its tests prove, provider by provider:
//
//   - that the verifiers of package provider accept what the official library signs
//     and agree with the library's verdict on the same requests (tampered bodies and
//     signatures, other secrets and keys, header variants), differing only where
//     hookinbox is deliberately stricter, which each table names;
//   - that whatever a verifier accepts, the library accepts too, under fuzzing
//     (the oracle halves of provider's fuzz targets, on the same seeds);
//   - that a library alone is not enough: discordgo, sendgrid-go and paddle-go-sdk
//     (as configured by default) accept a delivery signed too long ago, which the
//     verifier refuses (provider's broken-variant tests keep the same bug as test-only
//     code);
//   - that the signers of hookinboxtest (internal/sign, with which `hookinbox send`
//     signs) produce what the libraries accept, and for Stripe the very bytes of
//     stripe-go's test helper, with which the root package's tests used to sign.
//
// The libraries: stripe-go, go-github, slack-go, svix-webhooks, standard-webhooks,
// twilio-go, sendgrid-go, discordgo and paddle-go-sdk. go.work joins this module to
// the others, so `go test github.com/hookinbox/hookinbox/...` (scripts/test.sh) runs
// it, and scripts/fuzz.sh finds its fuzz targets.
package oracle
