package dev.baton;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/** {@link PayloadCodec} on Jackson. */
final class JacksonCodec implements PayloadCodec {
    static final JacksonCodec DEFAULT = new JacksonCodec(new ObjectMapper()
            .findAndRegisterModules()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false));

    private final ObjectMapper mapper;

    JacksonCodec(ObjectMapper mapper) {
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
