module github.com/hookinbox/hookinbox/internal/oracle

go 1.26.0

require (
	github.com/PaddleHQ/paddle-go-sdk/v4 v4.1.0
	github.com/bwmarrin/discordgo v0.29.0
	github.com/google/go-github/v74 v74.0.0
	github.com/hookinbox/hookinbox v0.0.0
	github.com/sendgrid/sendgrid-go v3.16.1+incompatible
	github.com/slack-go/slack v0.36.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
	github.com/stripe/stripe-go/v82 v82.5.1
	github.com/svix/svix-webhooks v1.44.0
	github.com/twilio/twilio-go v1.31.0
)

require (
	github.com/ggicci/httpin v0.20.1 // indirect
	github.com/ggicci/owl v0.8.2 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/google/go-querystring v1.1.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/rogpeppe/go-internal v1.14.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gopkg.in/validator.v2 v2.0.1 // indirect
)

// The library as it is in this repository; go.work at the root does the same for
// commands run from there.
replace github.com/hookinbox/hookinbox => ../..
