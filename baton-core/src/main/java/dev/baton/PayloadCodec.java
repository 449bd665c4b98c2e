package dev.baton;

import dev.baton.internal.job.JacksonCodec;

/**
 * Turns job payloads into JSON text and back. The default is Jackson ({@link #jackson()}); plug in
 * your own configured mapper with {@code Baton.Builder#codec}. Implementations must be thread-safe.
 */
public interface PayloadCodec {
    /** JSON text for {@code payload} (a JSON value: object, array, string, number, boolean or null). */
    String encode(Object payload) throws Exception;

    /** The payload of type {@code type} decoded from JSON text. */
    <T> T decode(String json, Class<T> type) throws Exception;

    /** A codec on a default Jackson {@code ObjectMapper} (with Java time support if on the class path). */
    static PayloadCodec jackson() {
        return JacksonCodec.DEFAULT;
    }
}
