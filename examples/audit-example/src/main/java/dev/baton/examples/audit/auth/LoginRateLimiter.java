package dev.baton.examples.audit.auth;

import com.google.common.util.concurrent.RateLimiter;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * The per-IP login limiter, on in-process partitions: with N instances behind a load balancer a
 * client gets N times the intended attempts before it is throttled.
 */
@Component
public class LoginRateLimiter {
    private final double attemptsPerSecond;
    private final Map<String, RateLimiter> limitersByIp = new ConcurrentHashMap<>();

    public LoginRateLimiter(@Value("${example.login.attempts-per-second:0.2}") double attemptsPerSecond) {
        this.attemptsPerSecond = attemptsPerSecond;
    }

    public boolean tryLogin(String clientIp) {
        return limitersByIp
                .computeIfAbsent(clientIp, ip -> RateLimiter.create(attemptsPerSecond))
                .tryAcquire();
    }
}
