#!/bin/sh
# The entrypoint of the local node base image, behaving as the official
# image's: arguments that are options, or that name no runnable command, are
# passed to node; anything else runs as given (the controller image's CMD
# starts with "node").
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
