-- Version 6: the W3C traceparent of the span that wrote a row, when tracing was on
-- (NULL otherwise, and for every row from before this version). A worker's attempt at
-- a receipt links to the span that received it, and the dispatcher continues the trace
-- of the handler that wrote a message, so that one trace runs from the provider's
-- request to the downstream service: both happen later, in another transaction and
-- maybe another process, where nothing but the row is left of the request. Only the
-- traceparent is kept (55 bytes), never tracestate or baggage.
--
-- Nullable with no default: adding the columns rewrites no row.
ALTER TABLE hookinbox_inbox ADD COLUMN trace_parent text;
ALTER TABLE hookinbox_outbox ADD COLUMN trace_parent text;
