#!/bin/sh
# pg_cron for the test that schedules `CALL idivm.maintain_all()` with it (docs/operations.md), from
# Debian's postgresql-<major>-cron for each PostgreSQL server installed here. Installs it when it is
# missing and apt-get can (as root); otherwise says how, and exits 0: without it that one test is
# skipped with this message and everything else runs.
for dir in /usr/lib/postgresql/*/lib; do
  [ -d "$dir" ] || continue
  [ -f "$dir/pg_cron.so" ] && continue
  major=$(basename "$(dirname "$dir")")
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y -qq "postgresql-$major-cron" >/dev/null 2>&1 ||
     { apt-get update -qq >/dev/null && apt-get install -y -qq "postgresql-$major-cron" >/dev/null; }) && continue
  fi
  echo "note: pg_cron is missing for PostgreSQL $major, so the pg_cron test will be skipped; install it with" \
       "'apt-get install postgresql-$major-cron'" >&2
done
exit 0
