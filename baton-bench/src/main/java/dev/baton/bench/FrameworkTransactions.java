package dev.baton.bench;

import dev.baton.TransactionBinding;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import javax.sql.DataSource;

/**
 * A transaction per caller thread, kept as a framework keeps one (Spring's, through its binding): a connection
 * out of auto-commit, the enqueue on it, the commit, then what was registered to run after the commit. With
 * {@code afterCommit} false the binding cannot register anything, so each enqueue notifies inside the
 * transaction (Baton before decision 0039, and any binding that does not implement it).
 */
final class FrameworkTransactions implements TransactionBinding {
    private final boolean afterCommit;
    private final ThreadLocal<Connection> open = new ThreadLocal<>();
    private final ThreadLocal<List<Runnable>> registered = ThreadLocal.withInitial(ArrayList::new);

    FrameworkTransactions(boolean afterCommit) {
        this.afterCommit = afterCommit;
    }

    @Override
    public Optional<Connection> current(DataSource dataSource) {
        return Optional.ofNullable(open.get());
    }

    @Override
    public <T> T bind(DataSource dataSource, Connection transaction, Callable<T> work) throws Exception {
        return work.call();
    }

    @Override
    public boolean afterCommit(Runnable wake) {
        return afterCommit && registered.get().add(wake);
    }

    void run(DataSource dataSource, Runnable work) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            open.set(c);
            try {
                work.run();
                c.commit();
            } finally {
                open.remove();
            }
            registered.get().forEach(Runnable::run);
        } finally {
            registered.remove();
        }
    }
}
