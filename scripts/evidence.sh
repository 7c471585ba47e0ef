#!/usr/bin/env bash
# Issue 14's studies on this CPU, one after another, in the order of docs/im_screening.md ("The schedule"). Each
# bench resumes where it stopped and skips its finished jobs in seconds, so after an interruption run this again:
#   setsid nohup nice -n 5 scripts/evidence.sh >> evidence.log 2>&1 &
# On a fresh checkout (run folders are not committed) each bench first restores what was saved and committed in
# docs/results/<name>/runs by `python scripts/publish_results.py configs/<name>.yaml` (models are retrained from
# their seeds where jobs of theirs are left). Save before a session ends: that command, then commit.
# A bench with a failed job is logged and the next one starts (the CPU is the scarce thing); its report names it.
set -u
cd "$(dirname "$0")/.."
step() {
    local config=$1 restore=()
    shift
    [ -d "docs/results/$(basename "$config" .yaml)/runs" ] && restore=(--restore "docs/results/$(basename "$config" .yaml)/runs")
    echo "=== $(date -u '+%F %T') robustft bench $config $*"
    robustft bench "$config" "$@" --workers 2 --progress false "${restore[@]}" ||
        echo "=== $(date -u '+%F %T') exit $?: robustft bench $config $*"
}
step configs/im-powered.yaml
step configs/im-lowresource-16shot.yaml
step configs/im-lowresource-1000.yaml
step configs/rift-study.yaml --only '*/sst2/*' --skip 'im-rift/*'
