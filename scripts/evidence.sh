#!/usr/bin/env bash
# Issue 14's studies on this CPU, one after another, in the order of docs/im_screening.md ("The schedule"). Each
# bench resumes where it stopped and skips its finished jobs in seconds, so after an interruption run this again:
#   setsid nohup nice -n 5 scripts/evidence.sh >> evidence.log 2>&1 &
# A bench with a failed job is logged and the next one starts (the CPU is the scarce thing); its report names it.
set -u
cd "$(dirname "$0")/.."
step() {
    echo "=== $(date -u '+%F %T') robustft bench $*"
    robustft bench "$@" --workers 2 --progress false || echo "=== $(date -u '+%F %T') exit $?: robustft bench $*"
}
step configs/im-powered.yaml
step configs/im-lowresource-16shot.yaml
step configs/im-lowresource-1000.yaml
step configs/rift-study.yaml --only '*/sst2/*' --skip 'im-rift/*'
