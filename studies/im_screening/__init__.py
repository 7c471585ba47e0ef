"""Screening of IM-BERT settings on pre-trained MiniLM, without training (issue 14, Part 1 item 1).

For each setting: the solver's final relative residual per converted layer (is the implicit step solved?), the
per-layer hidden-state distance and amplification under one counter-fitted word swap and under embedding noise,
against plain BERT and against the matched explicit control (EX with the same form, dt and layers), and the cost
of a forward as a ratio to plain. Sentences: the probe's seeded sample of SST-2 dev (no labels are read). fp32,
one torch thread. Settings are screened in stages, each chosen from the numbers of the ones before:

  A  solver x K at form increment, dt 1, layers 4-6 (the default's form, dt and layers; its two costliest
     settings run after C);
  B  form x dt (increment/layer x 0.25/0.5/1) for every solver that converged in A, at the smallest K it did;
  C  layers (1-6, 1-3) for the (at most three) settings of A and B that converge and damp most against EX.

Every finished setting is one line of the JSONL results file, written as it finishes; a restart skips them.

    nice -n 15 python -m studies.im_screening    # all stages (resumable; from the repository root)
    python -m studies.im_screening --report      # table + plot into docs/im_screening.md's folder

Modules: settings (what is screened and the pick thresholds), records (the results file and the pick rule),
measure (the measurements, torch), tables and plot (the report), paired (bootstrap intervals of IM against EX),
cost (the powered studies' price), cli.
"""
