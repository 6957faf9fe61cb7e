#!/bin/sh
# Runs before kind's entrypoint and systemd. systemd, as PID 1, raises fs.file-max and fs.nr_open
# at boot; in a privileged container those are the host's own settings. Inside this node's mount
# namespace each is covered by a file holding the host's current value, so systemd's write lands
# in the file and the host keeps its settings.
set -eu
dir=/run/portcullis-host-sysctls
mkdir -p "$dir"
for key in fs/file-max fs/nr_open; do
  file="$dir/$(echo "$key" | tr / _)"
  cat "/proc/sys/$key" > "$file"
  mountpoint -q "/proc/sys/$key" || mount --bind "$file" "/proc/sys/$key"
done
exec "$@"
