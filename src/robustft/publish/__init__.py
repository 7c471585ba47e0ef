"""Publishing results as data, each a library module with a command-line entry (`python -m ...`). It reads benches
(presets, their jobs and folders) and builds reports, so it sits above both `robustft.bench` and `robustft.report`.

- bench_results: save a bench's jobs into docs/results/<preset>/, rebuild its report there, regenerate
  docs/RESULTS.md (`python -m robustft.publish.bench_results quick`; scripts/publish_results.py);
- recheck: a committed results folder against what the code computes from its runs (tests/test_results.py);
- results_page: docs/RESULTS.md from every published preset;
- pick_by_dev: pick one of a bench's methods by its selection data only, and write the bench that compares it
  (`python -m robustft.publish.pick_by_dev`; scripts/pick_by_dev.py);
- im_screening: the IM-BERT settings screening on the pre-trained backbone and its tables
  (`python -m robustft.publish.im_screening`; scripts/im_screening.py).
"""
