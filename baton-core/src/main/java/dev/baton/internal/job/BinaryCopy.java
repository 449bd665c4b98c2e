package dev.baton.internal.job;

import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Instant;
import org.postgresql.copy.CopyIn;

/**
 * Rows in PostgreSQL's binary COPY format, sent in chunks while they are made, so the server stores the first
 * rows while the rest are encoded. Binary spares the server parsing numbers and timestamps from text (about 0.7
 * µs of its 6.5–7.2 µs per job row measured with psql, docs/benchmarks/enqueue.md) and the client escaping text; it needs each
 * value in its column's exact type, so only the types of the job table are here. Text is sent as UTF-8 (the
 * driver's client encoding); the server checks it as it checks text input.
 *
 * <p>Format: a signature and two zero words, per row a 16-bit field count and per field a 32-bit length (-1
 * for NULL) and the value's bytes, and a 16-bit -1 at the end.
 */
final class BinaryCopy implements AutoCloseable {
    private static final byte[] SIGNATURE = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', (byte) 0xff, '\r', '\n', 0};
    /** Seconds from the Unix epoch to PostgreSQL's, 2000-01-01T00:00:00Z. */
    private static final long POSTGRES_EPOCH_SECOND = 946_684_800L;
    /** JSONB's binary input: a version byte, then the JSON text. */
    private static final byte JSONB_VERSION = 1;

    private static final int CHUNK = 1 << 16;

    private final CopyIn copy;
    private byte[] buf = new byte[CHUNK];
    private int pos;

    /** Starts the rows on a COPY … FROM STDIN WITH (FORMAT binary) the caller has begun. */
    BinaryCopy(CopyIn copy) {
        this.copy = copy;
        room(SIGNATURE.length + 8);
        System.arraycopy(SIGNATURE, 0, buf, pos, SIGNATURE.length);
        pos += SIGNATURE.length;
        putInt(0); // flags
        putInt(0); // header extension length
    }

    /** Begins a row of {@code fields} values; sends what is buffered once a chunk is full. */
    BinaryCopy row(int fields) throws SQLException {
        if (pos >= CHUNK) {
            send();
        }
        room(2);
        putShort(fields);
        return this;
    }

    BinaryCopy int8(long v) {
        room(12);
        putInt(8);
        putLong(v);
        return this;
    }

    BinaryCopy int8OrNull(Long v) {
        return v == null ? nul() : int8(v);
    }

    BinaryCopy int4(int v) {
        room(8);
        putInt(4);
        putInt(v);
        return this;
    }

    BinaryCopy int2(int v) {
        if (v != (short) v) {
            throw new IllegalArgumentException(v + " does not fit a smallint");
        }
        room(6);
        putInt(2);
        putShort(v);
        return this;
    }

    BinaryCopy bool(boolean v) {
        room(5);
        putInt(1);
        buf[pos++] = (byte) (v ? 1 : 0);
        return this;
    }

    BinaryCopy text(String v) {
        return v == null ? nul() : bytes(v.getBytes(StandardCharsets.UTF_8), false);
    }

    BinaryCopy jsonb(String json) {
        return json == null ? nul() : bytes(json.getBytes(StandardCharsets.UTF_8), true);
    }

    /**
     * A timestamptz: microseconds since 2000-01-01 UTC, nanoseconds rounded half up as the driver rounds the
     * instants it sends as text (the server checks the range).
     */
    BinaryCopy timestamptz(Instant at) {
        long micros;
        try {
            micros = Math.addExact(
                    Math.multiplyExact(Math.subtractExact(at.getEpochSecond(), POSTGRES_EPOCH_SECOND), 1_000_000L),
                    (at.getNano() + 500) / 1000);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(
                    "job run_at " + at + " is outside PostgreSQL's timestamp range (4714 BC to 294276 AD)");
        }
        return int8(micros);
    }

    /** Ends the rows and the COPY; the number of rows the server stored. */
    long finish() throws SQLException {
        room(2);
        putShort(-1);
        send();
        return copy.endCopy();
    }

    /** Abandons the COPY if it did not finish (the server then stores none of its rows). */
    @Override
    public void close() throws SQLException {
        if (copy.isActive()) {
            copy.cancelCopy();
        }
    }

    private BinaryCopy nul() {
        room(4);
        putInt(-1);
        return this;
    }

    /** A value of {@code v}'s bytes, after JSONB's version byte if {@code jsonb}. */
    private BinaryCopy bytes(byte[] v, boolean jsonb) {
        int length = v.length + (jsonb ? 1 : 0);
        room(4 + length);
        putInt(length);
        if (jsonb) {
            buf[pos++] = JSONB_VERSION;
        }
        System.arraycopy(v, 0, buf, pos, v.length);
        pos += v.length;
        return this;
    }

    private void send() throws SQLException {
        if (pos > 0) {
            copy.writeToCopy(buf, 0, pos);
            pos = 0;
        }
    }

    /** Room for {@code n} more bytes in the buffer (a row longer than a chunk grows it). */
    private void room(int n) {
        if (pos + n > buf.length) {
            buf = java.util.Arrays.copyOf(buf, Math.max(buf.length * 2, pos + n));
        }
    }

    private void putShort(int v) {
        buf[pos++] = (byte) (v >>> 8);
        buf[pos++] = (byte) v;
    }

    private void putInt(int v) {
        buf[pos++] = (byte) (v >>> 24);
        buf[pos++] = (byte) (v >>> 16);
        buf[pos++] = (byte) (v >>> 8);
        buf[pos++] = (byte) v;
    }

    private void putLong(long v) {
        putInt((int) (v >>> 32));
        putInt((int) v);
    }
}
