#!/bin/bash
# The project's CPU queue: its long studies one after another, in the order the project runs them, each under nice,
# each resumable (run the script again: finished jobs are reused, a cut training resumes from its last checkpoint).
#   1. configs/mpnet-study.yaml          IM-BERT at base size (issue 54), pre-registered in 8e5c64f
#   2. configs/rift-frontier-sst2.yaml   RIFT at matched clean accuracy (issue 53), pre-registered
#   3. the textdefender preset           without SAFER and RanMASK under attack (9.3 CPU hours each; issue 55)
#
#   bash scripts/cpu_queue.sh --list     each study's jobs still to do and its expected time (one process, and wall
#                                        time on the two workers it runs with)
#   bash scripts/cpu_queue.sh            run the queue
#
# Run it from a worktree of a fixed commit (`git worktree add ../bench-wt HEAD`, then the script there with this
# checkout's venv: ROBUSTFT=/path/to/.venv/bin/robustft PYTHONPATH=../bench-wt/src), so that code edited meanwhile
# never mixes into a study; pause it while the test suite runs (kill -STOP / -CONT on its process group).
set -euo pipefail
cd "$(dirname "$0")/.."
ROBUSTFT=${ROBUSTFT:-.venv/bin/robustft}
STUDIES=(
  "configs/mpnet-study.yaml"
  "configs/rift-frontier-sst2.yaml"
  "textdefender --skip safer/* --skip ranmask/*"
)
for study in "${STUDIES[@]}"; do
  read -r -a args <<<"$study"  # no globbing: the patterns go to robustft as they are
  if [[ "${1:-}" == "--list" ]]; then
    echo "== ${args[0]}: $("$ROBUSTFT" bench "${args[@]}" --workers 2 --list | tail -n 1)"
  else
    echo "== $(date -u +%FT%TZ) robustft bench ${args[*]} --workers 2"
    nice -n 10 "$ROBUSTFT" bench "${args[@]}" --workers 2
  fi
done
