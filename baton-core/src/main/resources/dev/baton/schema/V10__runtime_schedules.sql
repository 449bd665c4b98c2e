-- Baton schema version 10: schedules created, changed and deleted at run time through the API
-- (Schedules.create / update / delete), next to the schedules applications declare in code.
--
-- A runtime schedule is a row of ${schema}.schedule with owner_app = '' (decision 0021): no application
-- of any version can have an empty name, and every statement of older versions that disables or prunes
-- schedules matches owner_app = <its application> (or only disabled rows), so a node of version 5 to 7
-- neither disables nor deletes a runtime schedule; it fires it like any other.
--
-- revision: every change of a runtime schedule takes the next value of schedule_revision, so a
-- revision is never reused, not even by a schedule deleted and created again under the same name
-- (an operator holding an old revision is refused). Null for declared schedules.
ALTER TABLE ${schema}.schedule ADD COLUMN IF NOT EXISTS revision bigint;
-- who made the last change (an actor string, or the application and version of the node) and when
ALTER TABLE ${schema}.schedule ADD COLUMN IF NOT EXISTS changed_by text;
ALTER TABLE ${schema}.schedule ADD COLUMN IF NOT EXISTS changed_at timestamptz;

CREATE SEQUENCE IF NOT EXISTS ${schema}.schedule_revision;
