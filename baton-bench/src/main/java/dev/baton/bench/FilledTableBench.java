package dev.baton.bench;

/**
 * What the {@code admin} and {@code console} benchmarks share: their options ({@code --jdbc-url}, {@code --jobs},
 * {@code --runs}, {@code --keep}), the database they open and the machine facts they print before running.
 */
record FilledTableBench(String jdbcUrl, int jobs, int runs, boolean keep) {
    /** One benchmark on an open database with the options given. */
    interface Body {
        void run(Database db, FilledTableBench options) throws Exception;
    }

    /** Parses {@code args}, opens the database, prints {@code title} and the machine, runs {@code body}; an exit code. */
    static int main(String[] args, String title, String usage, int defaultRuns, Body body) {
        return main(args, title, usage, defaultRuns, Integer.MAX_VALUE, body);
    }

    /** As above, refusing more than {@code maxRuns} runs before anything is opened. */
    static int main(String[] args, String title, String usage, int defaultRuns, int maxRuns, Body body) {
        String jdbcUrl = null;
        int jobs = 1_000_000;
        int runs = defaultRuns;
        boolean keep = false;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--jdbc-url" -> jdbcUrl = value(args, ++i, a);
                    case "--jobs" -> jobs = positive(args, ++i, a);
                    case "--runs" -> runs = positive(args, ++i, a);
                    case "--keep" -> keep = true;
                    case "-h", "--help" -> {
                        System.out.println(usage);
                        return 0;
                    }
                    default -> throw new IllegalArgumentException("unknown option '" + a + "'");
                }
            }
            if (runs > maxRuns) {
                throw new IllegalArgumentException("--runs must be at most " + maxRuns + ", but was " + runs);
            }
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\n\n" + usage);
            return 2;
        }
        try (Database db = Database.open(jdbcUrl, null)) {
            System.out.println(title);
            Machine.facts().forEach((k, v) -> System.out.printf("  %-32s %s%n", k, v));
            System.out.printf("  %-32s %s%n", "PostgreSQL", db.serverVersion());
            body.run(db, new FilledTableBench(jdbcUrl, jobs, runs, keep));
            return 0;
        } catch (Exception e) {
            System.err.println("benchmark failed: " + e);
            e.printStackTrace();
            return 1;
        }
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    private static int positive(String[] args, int i, String option) {
        String v = value(args, i, option);
        try {
            int n = Integer.parseInt(v.replace("_", ""));
            if (n < 1) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " must be a positive integer, but was '" + v + "'");
        }
    }
}
