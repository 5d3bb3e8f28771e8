#!/bin/sh
# The temporal-schema step of docker-compose.yml, run in the temporalio/admin-tools image before the
# server starts: creates Temporal's two databases in PostgreSQL when they are missing and brings
# their schemas to the version this image ships. Every command leaves what is already there, so it
# runs on each `docker compose up`, and after TEMPORAL_VERSION changes it migrates the schemas.
set -eu

: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${POSTGRES_PWD:?}"
# temporal-sql-tool reads the password from SQL_PASSWORD: it stays off the command line.
export SQL_PASSWORD="$POSTGRES_PWD"
schemas=/etc/temporal/schema/postgresql/v12

sql() {
  temporal-sql-tool --plugin postgres12 --endpoint "$POSTGRES_SEEDS" --port "${DB_PORT:-5432}" \
    --user "$POSTGRES_USER" "$@"
}

# migrate DATABASE FOLDER: creates DATABASE when missing, then brings it to the newest schema of
# FOLDER (temporal or visibility) under $schemas.
migrate() {
  echo "Temporal schema: database $1"
  sql --database "$1" create-database
  sql --database "$1" setup-schema -v 0.0
  sql --database "$1" update-schema -d "$schemas/$2/versioned"
}

migrate "${DBNAME:-temporal}" temporal
migrate "${VISIBILITY_DBNAME:-temporal_visibility}" visibility
echo "Temporal schema: up to date"
