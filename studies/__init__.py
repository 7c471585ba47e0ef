"""This project's lab notebook, kept beside configs/ and docs/results/ and outside the installable package: the
studies it ran, how their results are published, and the scripts that run them. It may import anything from
robustft; robustft never imports it. Run each command from the repository root:

- publish: save a bench's jobs into docs/results/<preset>/, rebuild its report there, regenerate docs/RESULTS.md
  (`python -m studies.publish quick`; `python -m studies.publish --rebuild`);
- definitions: what RESULTS.md says of each study beyond its numbers (question, registration, disclosures);
- results_page: docs/RESULTS.md and each preset's page from the committed reports;
- pick_by_dev: pick one of a bench's methods by its selection data only, and write the bench that compares it
  (`python -m studies.pick_by_dev`);
- frontier_seeds: the registered seed extension of a frontier study (`python -m studies.frontier_seeds`);
- im_screening: the IM-BERT settings screening on the pre-trained backbone and its tables
  (`python -m studies.im_screening`);
- cpu_queue.sh, gpu_mpnet_study.sh, gpu_textdefender_mpnet.sh: the queue of long CPU studies and the GPU studies
  (`bash studies/cpu_queue.sh`).

The re-check of committed runs is the library's (`robustft.results.recheck`, tests/test_results.py).
"""
