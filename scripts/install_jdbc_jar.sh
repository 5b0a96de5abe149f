#!/bin/sh
# PostgreSQL's JDBC driver for the Spark engine (docs/spark.md), from Debian's libpostgresql-jdbc-java:
# it is on no Python index, and Spark must not download jars at run time. Installs it when it is missing
# and apt-get can (as root); otherwise says how, and exits 0: without it, the Spark tests are skipped
# with that message and everything else runs.
jar="${IDIVM_SPARK_JDBC_JAR:-/usr/share/java/postgresql.jar}"
[ -f "$jar" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq >/dev/null && apt-get install -y -qq libpostgresql-jdbc-java >/dev/null && exit 0
fi
echo "note: $jar is missing, so the Spark engine's tests will be skipped; install it with" \
     "'apt-get install libpostgresql-jdbc-java' or set IDIVM_SPARK_JDBC_JAR" >&2
exit 0
