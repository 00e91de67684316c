#!/bin/sh
# Entrypoint of the postgres stand-in (Dockerfile.postgres): on the first start (PGDATA
# empty) initdb with POSTGRES_USER as superuser and POSTGRES_PASSWORD as its password, then
# create POSTGRES_DB; then run the server in the foreground, as user postgres, listening on
# every address of the container, password logins from anywhere on the network.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
POSTGRES_USER="${POSTGRES_USER:-postgres}"
POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"

if [ "$(id -u)" = 0 ]; then
    # A new volume belongs to root: hand it to postgres, then run this script as postgres.
    mkdir -p "$PGDATA"
    chown postgres:postgres "$PGDATA"
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password_file="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
    initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$password_file" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$password_file"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        # A server on the socket only while the database is made.
        pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait --silent start
        psql --username="$POSTGRES_USER" --dbname=postgres --set=ON_ERROR_STOP=1 --quiet \
            --command="CREATE DATABASE \"$POSTGRES_DB\""
        pg_ctl --pgdata="$PGDATA" --mode=fast --wait --silent stop
    fi
    echo "postgres stand-in: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
