#!/bin/sh
# One line for a set-up step, its output (pip's) in a log:  quietly.sh NAME LOG COMMAND [ARGS...]
# prints "NAME: setting up (log: LOG) ... done in N s"; where COMMAND fails, the log's last lines
# and its exit code instead.
set -u
name=$1 log=$2
shift 2
mkdir -p "$(dirname "$log")"
printf '%s: setting up (log: %s) ... ' "$name" "$log"
start=$(date +%s)
if "$@" >"$log" 2>&1; then
    echo "done in $(($(date +%s) - start)) s"
else
    code=$?
    echo "failed (exit code $code); the end of $log:"
    tail -n 25 "$log"
    exit "$code"
fi
