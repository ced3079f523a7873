package console

// BreakForTest turns off a protection ("cross-origin", "read-only", "redact-texts":
// redacting payloads only) so that a test can show it fails without it.
func (c *Console) BreakForTest(what string) {
	if what == "redact-texts" {
		c.redact.payloadOnly = true
		return
	}
	if c.broken == nil {
		c.broken = map[string]bool{}
	}
	c.broken[what] = true
	c.handler = c.routes()
}
