package dev.baton.spring;

import dev.baton.Baton;

/**
 * Customizes the {@link Baton.Builder} after the properties and annotations were applied: handlers
 * and schedules in code, a codec, a coordination pool. Beans of this type must not depend on Baton.
 */
@FunctionalInterface
public interface BatonCustomizer {
    void customize(Baton.Builder builder);
}
