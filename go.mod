module github.com/hookinbox/hookinbox

go 1.26

require (
	github.com/jackc/pgx/v5 v5.13.0
	github.com/stripe/stripe-go/v82 v82.5.1
)

require (
	github.com/google/go-github/v74 v74.0.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/slack-go/slack v0.36.0 // indirect
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1 // indirect
	github.com/svix/svix-webhooks v1.44.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
