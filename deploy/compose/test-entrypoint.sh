#!/bin/sh
# Entrypoint of compose-test's Redis/PostgreSQL image (test-base.Dockerfile).
set -eu
if [ "${1:-}" != postgres ]; then
	exec "$@"
fi
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pwfile=$(mktemp)
	printf '%s\n' "${POSTGRES_PASSWORD:-taskflow}" > "$pwfile"
	chown postgres "$pwfile"
	as_postgres initdb -D "$PGDATA" -U "${POSTGRES_USER:-postgres}" --pwfile="$pwfile" \
		--auth-host=scram-sha-256 --auth-local=trust >/dev/null
	rm -f "$pwfile"
	as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=" -w start >/dev/null
	if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then
		as_postgres createdb -U "${POSTGRES_USER:-postgres}" "$POSTGRES_DB"
	fi
	as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
shift
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
