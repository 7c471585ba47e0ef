"""Screening of IM-BERT settings on pre-trained MiniLM, without training: the command of
`robustft.publish.im_screening` (its docstring says what is measured), run on this checkout from any folder.

    nice -n 15 python scripts/im_screening.py                 # all stages (resumable)
    python scripts/im_screening.py --report                   # table + plot into docs/im_screening.md's folder
"""

from pathlib import Path

from robustft.publish.im_screening.cli import main

if __name__ == "__main__":
    raise SystemExit(main(root=Path(__file__).resolve().parents[1]))
