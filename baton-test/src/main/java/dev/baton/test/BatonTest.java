package dev.baton.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Gives the test class a fresh Baton schema, migrated, on a shared PostgreSQL (see {@link BatonExtension});
 * declare a {@link BatonTestDatabase} parameter to get it.
 *
 * <pre>{@code
 * @BatonTest
 * class ReceiptsTest {
 *     @Test
 *     void placingAnOrderEnqueuesItsReceipt(BatonTestDatabase db) { ... }
 * }
 * }</pre>
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(BatonExtension.class)
public @interface BatonTest {}
