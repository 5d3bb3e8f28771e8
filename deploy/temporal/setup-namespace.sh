#!/bin/sh
# The temporal-setup step of docker-compose.yml, run in the temporalio/admin-tools image once the
# server is up: waits until it serves, creates the engine's namespace when it is missing, and
# registers the search attributes runs are listed by (SEARCH_ATTRIBUTES: name=Type, space-separated).
# An existing namespace, and attributes already there with the same type, are left as they are;
# an attribute already there with another type fails the step.
set -eu

: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}" "${NAMESPACE_RETENTION:?}" "${SEARCH_ATTRIBUTES:?}"

# retry ATTEMPTS DESCRIPTION COMMAND...: runs COMMAND until it succeeds, every 2 seconds, at most
# ATTEMPTS times. A namespace just created reaches every part of the server within seconds.
retry() {
  attempts=$1
  what=$2
  shift 2
  n=1
  until "$@"; do
    if [ "$n" -ge "$attempts" ]; then
      echo "Temporal setup: gave up on $what after $attempts attempts" >&2
      return 1
    fi
    n=$((n + 1))
    sleep 2
  done
}

serving() {
  temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1
}

namespace_exists_or_created() {
  temporal operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" >/dev/null 2>&1 ||
    temporal operator namespace create --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" \
      --retention "$NAMESPACE_RETENTION"
}

echo "Temporal setup: waiting for the server at $TEMPORAL_ADDRESS"
retry 90 "the server to serve" serving
retry 15 "namespace $TEMPORAL_NAMESPACE" namespace_exists_or_created
for attribute in $SEARCH_ATTRIBUTES; do
  retry 15 "search attribute $attribute" temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" \
    --namespace "$TEMPORAL_NAMESPACE" --name "${attribute%%=*}" --type "${attribute#*=}"
done
echo "Temporal setup: namespace $TEMPORAL_NAMESPACE and its search attributes are in place"
