-- Baton schema version 7: job metadata.
--
-- Additive only: a node of version 5 or 6 keeps working against it (it neither writes nor reads the
-- column; its jobs have none). A job's metadata is a flat object of string values set at enqueue, most
-- often by interceptors (trace context, tenant, who enqueued it) and handed to the handler as
-- JobContext.metadata(). Null when empty, so jobs without metadata cost nothing.
ALTER TABLE ${schema}.job ADD COLUMN IF NOT EXISTS metadata jsonb
    CHECK (metadata IS NULL OR jsonb_typeof(metadata) = 'object');
