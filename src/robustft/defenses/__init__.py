"""The ensemble defenses (SAFER, RanMASK, DNE): one class each (`robustft.defenses.safer`, `.ranmask`, `.dne`)
owns its perturbation, its ensemble's settings and its certificate; `ensemble.EnsembleClassifier` predicts by any
of them. Training objectives keep only their losses and use these classes."""
