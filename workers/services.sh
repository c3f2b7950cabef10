#!/usr/bin/env bash
# Makes sure the local PostgreSQL and Redis answer, starting them when they are installed but down.
# Used by .ci/run and the start command; with DATABASE_URL/REDIS_URL pointing elsewhere it only checks.
set -euo pipefail

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "services: starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "services: starting Redis" >&2
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
fi
for _ in $(seq 1 50); do
  if pg_isready -q -h 127.0.0.1 -p 5432 && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then exit 0; fi
  sleep 0.2
done
echo "services: PostgreSQL or Redis did not come up" >&2
exit 1
