package dev.baton.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns a refused {@code baton.*} value into Spring Boot's start-up failure report. */
class InvalidBatonPropertyFailureAnalyzer extends AbstractFailureAnalyzer<InvalidBatonPropertyException> {
    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, InvalidBatonPropertyException cause) {
        String what =
                cause.value() == null ? cause.property() : "the value '" + cause.value() + "' of " + cause.property();
        return new FailureAnalysis(
                "Baton refused " + what + ": " + cause.rule(),
                "Change " + cause.property() + " (see the 'Spring Boot' section of Baton's README for "
                        + "the rules and defaults).",
                cause);
    }
}
