"""Check a report page in headless chromium: screenshot it and exit 1 on any console or page error.

usage: python scripts/check_report_html.py REPORT_HTML [--screenshot PNG] [--fragment 'outcome=succeeded']
Needs Debian's chromium: apt-get install -y chromium
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robustft.report.rendering.browser import check_page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("page", type=Path)
    parser.add_argument("--screenshot", type=Path, default=None)
    parser.add_argument("--fragment", default="", help="URL fragment that sets the examples filter")
    args = parser.parse_args(argv)
    result = check_page(args.page, screenshot=args.screenshot, fragment=args.fragment)
    for line in result.console:
        print(f"console: {line}")
    print(f"page attributes: {result.attributes}")
    if result.screenshot:
        print(f"screenshot: {result.screenshot}")
    for error in result.errors:
        print(f"ERROR {error}", file=sys.stderr)
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
