"""Pick one of a bench's methods by its selection data only (and write the bench that compares it): the command of
`robustft.publish.pick_by_dev`.

    python scripts/pick_by_dev.py configs/im-powered.yaml im-inc-dt1 im-inc-dt05 [--write configs/im-advglue.yaml]
"""

from robustft.publish.pick_by_dev import main

if __name__ == "__main__":
    raise SystemExit(main())
