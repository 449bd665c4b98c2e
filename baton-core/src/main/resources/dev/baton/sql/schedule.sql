-- Statements on ${schema}.schedule. Times are the database's clock_timestamp().
-- Parameters are named (:name); see Sql.

-- name: db_now
SELECT clock_timestamp() AS db_now

-- name: lock_app
-- Serialises declarations of one application (start-up only).
SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))

-- name: get_for_update
SELECT name, owner_app, spec_kind, spec, time_zone, job_kind, job_queue, job_payload::text AS job_payload,
       job_priority, job_max_attempts, misfire_policy, catch_up_limit, misfire_threshold_ms, allow_overlap,
       enabled, declared_by, definition_version, next_run_at
  FROM ${schema}.schedule WHERE name = :name FOR UPDATE

-- name: insert
-- :version is the declaring version: the first declarer and the definition's version.
INSERT INTO ${schema}.schedule (name, owner_app, spec_kind, spec, time_zone, job_kind, job_queue, job_payload,
                                job_priority, job_max_attempts, misfire_policy, catch_up_limit,
                                misfire_threshold_ms, allow_overlap, declared_by, definition_version, next_run_at)
VALUES (:name, :owner_app, :spec_kind, :spec, :time_zone, :job_kind, :job_queue, :job_payload::jsonb, :job_priority,
        :job_max_attempts, :misfire_policy, :catch_up_limit, :misfire_threshold_ms, :allow_overlap,
        ARRAY[:version::text], :version, :next_run_at)

-- name: redefine
-- A newer (or equal) version's definition replaces the stored one. A null :next_run_at keeps the stored
-- next run (the timing did not change).
UPDATE ${schema}.schedule
   SET spec_kind = :spec_kind, spec = :spec, time_zone = :time_zone, job_kind = :job_kind, job_queue = :job_queue,
       job_payload = :job_payload::jsonb, job_priority = :job_priority, job_max_attempts = :job_max_attempts,
       misfire_policy = :misfire_policy, catch_up_limit = :catch_up_limit,
       misfire_threshold_ms = :misfire_threshold_ms, allow_overlap = :allow_overlap, definition_version = :version,
       next_run_at = coalesce(:next_run_at, next_run_at),
       declared_by = CASE WHEN :version = ANY (declared_by) THEN declared_by ELSE declared_by || ARRAY[:version::text] END,
       enabled = true, disabled_at = NULL, updated_at = clock_timestamp()
 WHERE name = :name

-- name: add_declarer
-- Records that a version declares this schedule (re-enabling it).
UPDATE ${schema}.schedule
   SET declared_by = CASE WHEN :version = ANY (declared_by) THEN declared_by ELSE declared_by || ARRAY[:version::text] END,
       enabled = true, disabled_at = NULL, updated_at = clock_timestamp()
 WHERE name = :name

-- name: undeclared
-- The application's schedules that this version does not declare (:names) but lists as a declarer.
SELECT name FROM ${schema}.schedule
 WHERE owner_app = :owner_app AND :version = ANY (declared_by) AND NOT (name = ANY (:names::text[]))

-- name: remove_declarer
UPDATE ${schema}.schedule SET declared_by = array_remove(declared_by, :version), updated_at = clock_timestamp()
 WHERE name = :name

-- name: disable_orphans
-- A schedule is disabled (never deleted) once no declaring version of its application has a live
-- node: stopped and stale nodes do not count. Only the application's own nodes do this, and never
-- for a schedule that the calling node's own version declares (it is alive, whatever its heartbeat
-- row says: after a database outage every node's heartbeat looks stale for a while).
-- :live_version is the calling node's version (null: none).
UPDATE ${schema}.schedule s
   SET enabled = false, disabled_at = clock_timestamp(), updated_at = clock_timestamp()
 WHERE s.owner_app = :owner_app AND s.enabled
   AND (:live_version::text IS NULL OR NOT (:live_version::text = ANY (s.declared_by)))
   AND NOT EXISTS (
       SELECT 1 FROM ${schema}.node n
        WHERE n.state <> 'stopped'
          AND n.heartbeat_at + 3 * n.heartbeat_interval_ms * interval '1 millisecond' > clock_timestamp()
          AND n.meta ->> 'app' = :owner_app
          AND n.meta ->> 'appVersion' = ANY (s.declared_by))
RETURNING s.name

-- name: enable_declared
-- The converse: a disabled schedule that a live version declares again is enabled again (it was
-- disabled while its nodes looked stale). :live_version is the calling node's version.
UPDATE ${schema}.schedule s
   SET enabled = true, disabled_at = NULL, updated_at = clock_timestamp()
 WHERE s.owner_app = :owner_app AND NOT s.enabled
   AND (:live_version::text = ANY (s.declared_by)
        OR EXISTS (
           SELECT 1 FROM ${schema}.node n
            WHERE n.state <> 'stopped'
              AND n.heartbeat_at + 3 * n.heartbeat_interval_ms * interval '1 millisecond' > clock_timestamp()
              AND n.meta ->> 'app' = :owner_app
              AND n.meta ->> 'appVersion' = ANY (s.declared_by)))
RETURNING s.name

-- name: due
-- Schedules due now, oldest first; one that failed to fire waits out its backoff (retry_at), so it never
-- stands in the way of the others.
SELECT name, spec_kind, spec, time_zone, job_kind, job_queue, job_payload::text AS job_payload, job_priority,
       job_max_attempts, misfire_policy, catch_up_limit, misfire_threshold_ms, allow_overlap, next_run_at,
       clock_timestamp() AS db_now
  FROM ${schema}.schedule
 WHERE enabled AND NOT paused AND next_run_at <= (SELECT clock_timestamp())
   AND (retry_at IS NULL OR retry_at <= (SELECT clock_timestamp()))
 ORDER BY next_run_at
 LIMIT :limit

-- name: next_due
SELECT min(greatest(next_run_at, coalesce(retry_at, next_run_at))) - clock_timestamp() AS until_due
  FROM ${schema}.schedule WHERE enabled AND NOT paused

-- name: record_failure
-- A schedule that could not fire (an unknown zone, a corrupt stored spec, a job that cannot be built):
-- recorded, and retried after a backoff that doubles per failure from the poll interval up to 5 minutes.
-- Only if it still waits at the instant that failed (:seen, the next_run_at it was due at).
UPDATE ${schema}.schedule
   SET failing_since = coalesce(failing_since, clock_timestamp()), error_count = error_count + 1,
       last_error = left(:error, 2000),
       retry_at = clock_timestamp()
                  + least(:poll_ms * power(2, least(error_count, 12)), 300000) * interval '1 millisecond'
 WHERE name = :name AND next_run_at = :seen
RETURNING error_count

-- name: advance
-- The compare-and-set of firing: only the scheduler that saw next_run_at = :seen advances it.
-- A successful firing clears any failure recorded before. A null :last_due_at or :last_job_id keeps the
-- stored one (nothing fired).
UPDATE ${schema}.schedule
   SET next_run_at = :next_run_at, last_due_at = coalesce(:last_due_at, last_due_at),
       last_fired_at = clock_timestamp(), last_job_id = coalesce(:last_job_id, last_job_id),
       misfired_total = misfired_total + :misfired,
       last_misfire_at = CASE WHEN :misfired > 0 THEN clock_timestamp() ELSE last_misfire_at END,
       failing_since = NULL, error_count = 0, last_error = NULL, retry_at = NULL
 WHERE name = :name AND next_run_at = :seen

-- name: set_paused
UPDATE ${schema}.schedule SET paused = :paused, updated_at = clock_timestamp() WHERE name = :name

-- name: list
-- One page in name order after a cursor ('' for the first).
SELECT s.name, s.owner_app, s.spec_kind, s.spec, s.time_zone, s.job_kind, s.job_queue, s.misfire_policy,
       s.allow_overlap, s.enabled, s.paused, s.declared_by, s.definition_version, s.next_run_at, s.last_due_at,
       s.last_fired_at, s.last_job_id, s.misfired_total, s.failing_since, s.error_count, s.last_error,
       s.retry_at, s.revision, s.changed_by, s.changed_at, j.state AS last_job_state
  FROM ${schema}.schedule s LEFT JOIN ${schema}.job j ON j.id = s.last_job_id
 WHERE s.name > :after
 ORDER BY s.name
 LIMIT :limit

-- name: prune
-- Schedules disabled (no live version declares them) for longer than the retention. A version that
-- declares one again later inserts it anew.
DELETE FROM ${schema}.schedule WHERE name IN (
    SELECT name FROM ${schema}.schedule
     WHERE NOT enabled AND disabled_at < (SELECT clock_timestamp()) - :retention_ms * interval '1 millisecond'
     LIMIT :limit)

-- name: job_of
-- The job a manual trigger enqueues, and the instant that names it.
SELECT job_kind, job_queue, job_payload::text AS job_payload, job_priority, job_max_attempts, allow_overlap,
       clock_timestamp() AS db_now
  FROM ${schema}.schedule WHERE name = :name

-- name: notify_changed
-- Wakes the schedulers listening on :channel (a declaration, a pause or a resume).
SELECT pg_notify(:channel, 'changed')

-- name: payload_normal
-- A payload as jsonb prints it, so that a re-declared identical payload compares equal.
SELECT :payload::jsonb::text AS payload

-- name: due_as_of
-- Test support (the schedule clock of baton-test): what "due" returns, as of :as_of instead of the
-- database clock.
SELECT name, spec_kind, spec, time_zone, job_kind, job_queue, job_payload::text AS job_payload, job_priority,
       job_max_attempts, misfire_policy, catch_up_limit, misfire_threshold_ms, allow_overlap, next_run_at,
       :as_of::timestamptz AS db_now
  FROM ${schema}.schedule
 WHERE enabled AND NOT paused AND next_run_at <= :as_of::timestamptz
   AND (retry_at IS NULL OR retry_at <= :as_of::timestamptz)
 ORDER BY next_run_at
 LIMIT :limit

-- Runtime schedules (Schedules.create / update / delete; schema version 10, decision 0021). They are rows
-- with owner_app = '': no application can have an empty name, so no application's reconciler (which
-- matches owner_app = its name) disables one, and the pruner (disabled rows only) never deletes one.
-- Every statement below touches only such rows: a declared schedule is never changed through them.

-- name: get
-- One schedule, as list shows it.
SELECT s.name, s.owner_app, s.spec_kind, s.spec, s.time_zone, s.job_kind, s.job_queue, s.misfire_policy,
       s.allow_overlap, s.enabled, s.paused, s.declared_by, s.definition_version, s.next_run_at, s.last_due_at,
       s.last_fired_at, s.last_job_id, s.misfired_total, s.failing_since, s.error_count, s.last_error,
       s.retry_at, s.revision, s.changed_by, s.changed_at, j.state AS last_job_state
  FROM ${schema}.schedule s LEFT JOIN ${schema}.job j ON j.id = s.last_job_id
 WHERE s.name = :name

-- name: runtime_insert
-- Creates a runtime schedule, first due at :next_run_at, at a fresh revision. Inserts nothing if the name
-- is taken (declared or runtime): a create racing another of the same name waits on the primary key for
-- the other's commit, then inserts nothing, and the caller reports who holds the name.
INSERT INTO ${schema}.schedule (name, owner_app, spec_kind, spec, time_zone, job_kind, job_queue, job_payload,
                                job_priority, job_max_attempts, misfire_policy, catch_up_limit,
                                misfire_threshold_ms, allow_overlap, declared_by, definition_version, next_run_at,
                                revision, changed_by, changed_at)
SELECT :name, '', :spec_kind, :spec, :time_zone, :job_kind, :job_queue, :job_payload::jsonb, :job_priority,
       :job_max_attempts, :misfire_policy, :catch_up_limit, :misfire_threshold_ms, :allow_overlap, '{}',
       'r' || r.rev, :next_run_at, r.rev, :changed_by, clock_timestamp()
  FROM (SELECT nextval('${schema}.schedule_revision') AS rev) r
ON CONFLICT (name) DO NOTHING
RETURNING revision

-- name: runtime_update
-- Replaces a runtime schedule's definition, if it is still at :expected_revision (null: whatever its
-- revision), at a fresh revision. The next run moves to :next_run_at only if the timing (kind, spec, zone)
-- changed; otherwise the stored one stays, so an instant already due still fires once. A recorded failure
-- is cleared: the new definition gets its chance at once. Row-locked: a firing in progress either commits
-- first (and this waits) or finds next_run_at moved and rolls back.
UPDATE ${schema}.schedule AS s
   SET next_run_at = CASE WHEN (spec_kind, spec, time_zone)
                                   IS DISTINCT FROM (:spec_kind::text, :spec::text, :time_zone::text)
                          THEN :next_run_at::timestamptz ELSE next_run_at END,
       spec_kind = :spec_kind, spec = :spec, time_zone = :time_zone, job_kind = :job_kind, job_queue = :job_queue,
       job_payload = :job_payload::jsonb, job_priority = :job_priority, job_max_attempts = :job_max_attempts,
       misfire_policy = :misfire_policy, catch_up_limit = :catch_up_limit,
       misfire_threshold_ms = :misfire_threshold_ms, allow_overlap = :allow_overlap,
       revision = r.rev, definition_version = 'r' || r.rev,
       changed_by = :changed_by, changed_at = clock_timestamp(), updated_at = clock_timestamp(),
       failing_since = NULL, error_count = 0, last_error = NULL, retry_at = NULL
  FROM (SELECT nextval('${schema}.schedule_revision') AS rev) r
 WHERE name = :name AND owner_app = ''
   AND (:expected_revision::bigint IS NULL OR revision = :expected_revision::bigint)
RETURNING revision

-- name: runtime_delete
-- Deletes a runtime schedule, if it is still at :expected_revision (null: whatever its revision). A firing
-- in progress either commits first or finds the row gone and rolls back (its compare-and-set matches
-- nothing), so no job is enqueued for the schedule after this commits.
DELETE FROM ${schema}.schedule
 WHERE name = :name AND owner_app = ''
   AND (:expected_revision::bigint IS NULL OR revision = :expected_revision::bigint)
RETURNING name
