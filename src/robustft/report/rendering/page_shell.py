"""The frame every report page shares: inline CSS and scripts (guard.js first, page.js last), so a page opened from
disk (file://) loads nothing from anywhere; everything from the runs is escaped with `escape`."""

from __future__ import annotations

import html
from importlib import resources


def asset(name: str) -> str:
    return resources.files("robustft.report.rendering").joinpath("assets", name).read_text(encoding="utf-8")


def escape(text) -> str:
    return html.escape(str(text), quote=True)


def page(title: str, header: str, main: str, attributes: dict[str, str] | None = None) -> str:
    """A whole page: `header` and `main` are HTML already escaped; `attributes` become data-* of <body>."""
    data = "".join(f' data-{name}="{escape(value)}"' for name, value in (attributes or {}).items())
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<script>{asset("guard.js")}</script>
<style>{asset("page.css")}</style>
</head>
<body data-ready="0"{data}>
<header>{header}</header>
<main>
<pre id="page-errors"></pre>
{main}
</main>
<script>{asset("page.js")}</script>
</body>
</html>
"""
