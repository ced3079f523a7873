package effect_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/effect"
)

// An external call recorded once: the second Do with the same key, days later or from
// another worker, returns the recorded result without calling again. Pass the key to
// the provider as its idempotency key, so that a crash between the call and the
// record is absorbed by the provider.
func ExampleRecorder_Do() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	d := pgxdriver.New(pool)
	if err := d.Migrate(ctx); err != nil {
		panic(err)
	}
	rec := effect.New(d.Executor(), nil)
	key, err := effect.Key("evt_42", "tag-customer")
	if err != nil {
		panic(err)
	}
	for range 2 {
		result, err := rec.Do(ctx, key, func(ctx context.Context, key string) ([]byte, error) {
			fmt.Println("calling the provider with Idempotency-Key", key)
			return []byte("cus_1 tagged"), nil
		})
		fmt.Println(string(result), err)
	}
	// Output:
	// calling the provider with Idempotency-Key webhook:evt_42:tag-customer
	// cus_1 tagged <nil>
	// cus_1 tagged <nil>
}
