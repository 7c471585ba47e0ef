"""The ASCC adversary: word candidate tables aligned with sub-word tokens, and the convex-hull search over them."""
