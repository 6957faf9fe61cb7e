#!/bin/sh
# The official redis image's contract: arguments that start with "-" are redis-server's flags.
set -e
case "${1:-}" in
  -* | '') set -- redis-server "$@" ;;
esac
exec "$@"
