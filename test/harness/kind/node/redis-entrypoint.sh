#!/bin/sh
# The official redis image's contract: arguments that start with "-" are redis-server's flags, and
# protected mode is off (that image builds redis-server with it off: in a container the network
# policy, not a loopback-only default, decides who connects). Flags given later override.
set -e
case "${1:-}" in
  -* | '') set -- redis-server "$@" ;;
esac
if [ "$1" = redis-server ]; then
  shift
  set -- redis-server --protected-mode no "$@"
fi
exec "$@"
