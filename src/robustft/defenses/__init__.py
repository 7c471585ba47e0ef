"""The defenses, one class each: the ensembles (SAFER, RanMASK, DNE: `robustft.defenses.safer`, `.ranmask`, `.dne`)
own their perturbation, their ensemble's settings and their certificate, and `ensemble.EnsembleClassifier` predicts
by any of them; A2T (`.a2t`) owns its adversarial examples and how they mix into the loss. Training objectives keep
only their losses and use these classes."""
