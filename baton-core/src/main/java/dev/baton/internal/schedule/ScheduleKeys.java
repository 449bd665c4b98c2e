package dev.baton.internal.schedule;

import java.time.Instant;

/** The keys of the jobs a schedule enqueues, shared by the scheduler and the schedules API. */
public final class ScheduleKeys {
    private ScheduleKeys() {}

    /** The idempotency key of the job for one due instant: each instant yields one job. */
    public static String idempotencyKey(String name, Instant due) {
        return "schedule:" + name + ":" + due;
    }

    /** The concurrency key shared by a schedule's runs unless it allows overlap. */
    public static String concurrencyKey(String name) {
        return "schedule:" + name;
    }
}
