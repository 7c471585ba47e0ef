"""Generic rendering of a report summary (the dict of report.json): its tables as rows of text (tables.py), as
Markdown (markdown.py) and as HTML pages (html.py: report.html; examples.py: the adversarial examples on pages beside
it; page_shell.py and assets/: what every page inlines), the PNG plots (plots.py), and a check of a page in a real
headless browser (browser.py). Nothing here knows about the papers."""
