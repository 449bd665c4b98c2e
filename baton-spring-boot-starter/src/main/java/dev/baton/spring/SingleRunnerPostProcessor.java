package dev.baton.spring;

import dev.baton.Baton;
import java.time.Duration;
import java.util.function.Supplier;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.core.Ordered;
import org.springframework.util.StringValueResolver;

/**
 * Proxies beans with {@link BatonSingleRunner} methods. Ordered before Spring's
 * {@code ScheduledAnnotationBeanPostProcessor}, so {@code @Scheduled} invokes the method through the proxy.
 */
class SingleRunnerPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor implements DisposableBean {
    private static final long serialVersionUID = 1L;
    private final transient SingleRunnerInterceptor interceptor;

    SingleRunnerPostProcessor(Supplier<Baton> baton, Supplier<Duration> defaultTtl, StringValueResolver resolver) {
        this.interceptor = new SingleRunnerInterceptor(baton, defaultTtl, resolver);
        this.advisor = new DefaultPointcutAdvisor(
                new AnnotationMatchingPointcut(null, BatonSingleRunner.class, true), interceptor);
        setBeforeExistingAdvisors(true);
        setProxyTargetClass(true);
        setOrder(Ordered.LOWEST_PRECEDENCE - 100);
    }

    @Override
    public void destroy() {
        interceptor.shutdown();
    }
}
