#!/bin/bash
# The project's CPU queue: its unfinished long studies one after another, in the order the project runs them, each
# under nice, each resumable (run the script again: finished jobs are reused, a cut training resumes from its last
# checkpoint). configs/mpnet-study.yaml (issue 54) finished on 2026-12-06 and left the queue.
#   1. configs/rift-frontier-sst2.yaml   RIFT at matched clean accuracy (issue 53), pre-registered
#   2. configs/textdefender-sst2.yaml    the TextDefender table (issue 64), pre-registered, seed 0 of every method first
#
# On a fresh machine it first brings back what an earlier machine published of each study (`robustft bench restore`
# from docs/results/<study>/runs: its finished jobs; models whose jobs are unfinished train again from their seed).
#
#   bash studies/cpu_queue.sh --list     each study's jobs still to do and its expected time (one process, and wall
#                                        time on two workers)
#   bash studies/cpu_queue.sh            run the queue
#
# Two lanes (one process of one thread per core) go down the list together, sharing each study's jobs; a lane that
# finds only jobs the other lane holds (a training and the evaluations and attacks of its model) leaves them to it
# (`--wait false`) and starts the next study, so no core idles through a study's last long chain.
#
# Run it from a worktree of a fixed commit (`git worktree add ../bench-wt HEAD`, then the script there with this
# checkout's venv: ROBUSTFT=/path/to/.venv/bin/robustft PYTHONPATH=../bench-wt/src), so that code edited meanwhile
# never mixes into a study; pause it while the test suite runs (kill -STOP / -CONT on its process group).
set -euo pipefail
cd "$(dirname "$0")/.."
ROBUSTFT=${ROBUSTFT:-.venv/bin/robustft}
STUDIES=(
  "configs/rift-frontier-sst2.yaml"
  "configs/textdefender-sst2.yaml"
)
if [[ "${1:-}" == "--list" ]]; then
  for study in "${STUDIES[@]}"; do
    read -r -a args <<<"$study"  # no globbing: the patterns go to robustft as they are
    echo "== ${args[0]}: $("$ROBUSTFT" bench "${args[@]}" --workers 2 --list | tail -n 1)"
  done
  exit 0
fi
for study in "${STUDIES[@]}"; do  # once, before the lanes: two restores at once could interleave
  read -r -a args <<<"$study"
  published="docs/results/$(basename "${args[0]}" .yaml)/runs"
  if [[ -d "$published" ]]; then
    "$ROBUSTFT" bench restore "${args[0]}" "$published" "${args[@]:1}"
  fi
done
lane() {
  for study in "${STUDIES[@]}"; do
    read -r -a args <<<"$study"
    echo "== $(date -u +%FT%TZ) lane $1: robustft bench ${args[*]}"
    nice -n 10 "$ROBUSTFT" bench "${args[@]}" --threads 1 --wait false || echo "== lane $1: ${args[0]} had failed jobs"
  done
}
lane 0 &
lane 1 &
wait
