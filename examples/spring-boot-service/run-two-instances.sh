#!/usr/bin/env bash
# Runs two instances of the shop service on one PostgreSQL database, side by side, until Ctrl-C
# (which stops both gracefully: each drains its node). See README.md for what to look at.
#
#   SHOP_JDBC_URL  the database (default jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres)
#   SHOP_PORTS     the two HTTP ports (default "8081 8082")
#   MAVEN_ARGS     extra arguments for the build, e.g. -Dmaven.repo.local=/tmp/m2
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export SHOP_JDBC_URL=${SHOP_JDBC_URL:-jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres}
read -r -a PORTS <<<"${SHOP_PORTS:-8081 8082}"
read -r -a EXTRA <<<"${MAVEN_ARGS:-}"

echo "building the shop and the Baton modules it uses ..."
(cd "$ROOT" && mvn -B -q "${EXTRA[@]}" install -DskipTests -Djacoco.skip=true -pl examples/spring-boot-service -am)
(cd "$HERE" && mvn -B -q "${EXTRA[@]}" dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)
CP="$HERE/target/classes:$(cat "$HERE/target/classpath.txt")"

pids=()
stop() {
    trap - EXIT INT TERM
    [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
    wait || true
}
trap stop EXIT INT TERM
for i in 1 2; do
    port=${PORTS[$((i - 1))]}
    # Short intervals, so the sweep and the report run often enough to watch.
    java -cp "$CP" dev.baton.examples.shop.ShopApplication \
        --server.port="$port" --baton.node-id="shop-$i" \
        --shop.sweep-interval=10s --shop.report-interval=PT10S \
        > >(sed -u "s/^/[shop-$i] /") 2>&1 &
    pids+=($!)
    echo "shop-$i: http://localhost:$port/actuator/baton (pid $!)"
done
wait
