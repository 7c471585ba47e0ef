"""Generic rendering of a report summary (the dict of report.json): its tables as rows of text (tables.py), as
Markdown (markdown.py) and as one self-contained HTML page (html.py, assets/), the PNG plots (plots.py), and a
check of the page in a real headless browser (browser.py). Nothing here knows about the papers."""
