package dev.baton;

/** Finished jobs of one queue kept for the retention period, by how they ended. */
public record FinishedStats(String queue, long succeeded, long failed, long cancelled) {}
