"""Publish bench results as data into docs/results/<preset>/ and regenerate docs/RESULTS.md: the command of
`robustft.publish.bench_results`, run on this checkout from any folder.

    python scripts/publish_results.py quick [configs/im-powered.yaml ...] [--bench_root runs/bench]
"""

from pathlib import Path

from robustft.publish.bench_results import main

if __name__ == "__main__":
    raise SystemExit(main(root=Path(__file__).resolve().parents[1]))
