package dev.baton.internal.job;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.baton.PayloadCodec;

/** {@link PayloadCodec} on Jackson. */
public final class JacksonCodec implements PayloadCodec {
    public static final JacksonCodec DEFAULT = new JacksonCodec(new ObjectMapper()
            .findAndRegisterModules()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false));

    private final ObjectMapper mapper;

    public JacksonCodec(ObjectMapper mapper) {
        this.mapper = mapper;
    }

    @Override
    public String encode(Object payload) throws Exception {
        return mapper.writeValueAsString(payload);
    }

    @Override
    public <T> T decode(String json, Class<T> type) throws Exception {
        return mapper.readValue(json, type);
    }
}
