#!/bin/sh
# First start on an empty data directory: create the cluster, the user and the database the official image's
# POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB describe; then run the server in the foreground.
set -eu
user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password_file="$(mktemp)"
    printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}" >"$password_file"
    initdb --username="$user" --pwfile="$password_file" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 -D "$PGDATA" >/dev/null
    rm -f "$password_file"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        echo "CREATE DATABASE \"$database\" OWNER \"$user\";" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
    echo "postgres-entrypoint: created user $user and database $database"
fi
exec "$@"
