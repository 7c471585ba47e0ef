"""Paper knowledge: the papers' claims and the rules that answer them from the runs (paper_claims.py), the
published figures set beside ours (anchors.py), and the deviations from the papers' protocols (deviations.py)."""
