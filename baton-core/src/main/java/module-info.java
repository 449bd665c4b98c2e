/**
 * Baton: fenced leases, durable jobs, recurring schedules and coordination primitives on PostgreSQL.
 * Start at {@link dev.baton.Baton}. Only {@code dev.baton} is API; {@code dev.baton.internal.*} may
 * change in any release (decision 0016).
 */
module dev.baton.core {
    requires transitive java.sql;
    requires org.slf4j;
    requires com.fasterxml.jackson.databind;
    requires org.postgresql.jdbc;
    requires com.cronutils;

    exports dev.baton;

    // Test support: the helpers of baton-test (module dev.baton.test) run a node's jobs inline and fire its
    // schedules as of a chosen instant; no other module reads these packages.
    exports dev.baton.internal.testsupport to
            dev.baton.test;
    exports dev.baton.internal.job to
            dev.baton.test;
    exports dev.baton.internal.schedule to
            dev.baton.test;

    // Job errors and node metadata are read into the API's records with Jackson.
    opens dev.baton to
            com.fasterxml.jackson.databind;
}
