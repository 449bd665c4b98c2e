package dev.baton.examples.audit.config;

import java.math.BigDecimal;
import java.math.RoundingMode;
import org.springframework.stereotype.Service;

/** Decoy: a stateless service. */
@Service
public class PriceCalculator {
    private static final BigDecimal VAT = new BigDecimal("0.19");

    public BigDecimal gross(BigDecimal net) {
        return net.add(net.multiply(VAT)).setScale(2, RoundingMode.HALF_UP);
    }
}
