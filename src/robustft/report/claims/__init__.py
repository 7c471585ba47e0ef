"""Paper knowledge as report plug-ins (`plugin.Claims`, listed in `robustft.report.registry`): what every claim
shares and the verdict tables (common.py), IM-BERT's claims (im_bert.py), RIFT's (rift.py, rift_joint.py,
rift_frontier.py; its tables and plot in rift_plugin.py), the published anchors (anchors.py) and the deviations from
the papers' protocols (deviations.py)."""
