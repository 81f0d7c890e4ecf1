#!/bin/sh
# First start: initdb with the configured user and password, create the database. Then serve.
set -eu
BIN=/usr/lib/postgresql/15/bin
: "${POSTGRES_USER:?}" "${POSTGRES_PASSWORD:?}" "${POSTGRES_DB:?}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  "$BIN/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  # Other containers on the deployment's network connect with the password.
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  "$BIN/pg_ctl" -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  "$BIN/createdb" -U "$POSTGRES_USER" "$POSTGRES_DB"
  "$BIN/pg_ctl" -D "$PGDATA" -w -m fast stop >/dev/null
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -c max_connections=200
