#!/bin/sh
# kubelet sets a few host-wide kernel settings ("kernel tunables") when they differ from what it
# wants. Inside this node's mount namespace each one is covered by a file that already holds
# kubelet's value, so kubelet reads what it wants and writes nothing to the host's kernel.
set -eu
dir=/run/portcullis-kubelet-tunables
mkdir -p "$dir"
for setting in vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 \
  kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
  key=${setting%%=*}
  file="$dir/$(echo "$key" | tr / _)"
  echo "${setting#*=}" > "$file"
  mountpoint -q "/proc/sys/$key" || mount --bind "$file" "/proc/sys/$key"
done
