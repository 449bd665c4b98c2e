package dev.baton.internal.notify;

import dev.baton.internal.service.Service;
import java.util.function.LongSupplier;

/**
 * A {@link Service} whose wait between passes also ends on a notification: the wait is on {@link #wake},
 * a subscription that notifications (and whoever hands the service work) signal, and that a stop signals
 * too. The subscription is closed after the last pass.
 */
public abstract class NotifiedService extends Service {
    /** Ends the wait between passes: signalled by notifications, by work handed to the service, and by stop. */
    protected final Notifier.Subscription wake;

    protected NotifiedService(String name, LongSupplier ticker, Notifier.Subscription wake) {
        super(name, ticker);
        this.wake = wake;
    }

    @Override
    protected void awaitNextPass(long nanos) {
        if (nanos > 0) {
            wake.await(nanos);
        }
    }

    @Override
    protected void onStopRequested() {
        wake.signal();
    }

    /** Closes the subscription; a subclass that overrides this calls it. */
    @Override
    protected void afterLastPass() {
        wake.close();
    }
}
