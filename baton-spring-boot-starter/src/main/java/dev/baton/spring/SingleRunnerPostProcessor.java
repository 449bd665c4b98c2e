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

    SingleRunnerPostProcessor(
            Supplier<Baton> baton,
            Supplier<Duration> defaultTtl,
            StringValueResolver resolver,
            Supplier<String> defaultTtlWritten) {
        this.interceptor = new SingleRunnerInterceptor(baton, defaultTtl, resolver, defaultTtlWritten);
        this.advisor = new DefaultPointcutAdvisor(
                new AnnotationMatchingPointcut(null, BatonSingleRunner.class, true), interceptor);
        setBeforeExistingAdvisors(true);
        setProxyTargetClass(true);
        setOrder(Ordered.LOWEST_PRECEDENCE - 100);
    }

    /**
     * Also checks the settings of every {@link BatonSingleRunner} method of the bean now, so a bad value fails
     * the start (naming the attribute or property and the value) rather than every call.
     */
    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        Class<?> target = org.springframework.aop.support.AopUtils.getTargetClass(bean);
        org.springframework.util.ReflectionUtils.doWithMethods(
                target,
                m -> interceptor.validate(m, target),
                m -> org.springframework.core.annotation.AnnotatedElementUtils.hasAnnotation(
                        m, BatonSingleRunner.class));
        return super.postProcessAfterInitialization(bean, beanName);
    }

    @Override
    public void destroy() {
        interceptor.shutdown();
    }
}
