"""benchmarks/results/README.md is the index of the benchmark results: it must name every JSON there, once, and
nothing that is not there, and each row must name the script that writes its files."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SCRIPT = re.compile(r"\b((?:benchmarks|scripts)/\w+\.py)\b")


def index_rows() -> list[list[str]]:
    """The cells of every table body row of the index (header and separator rows left out)."""
    rows = []
    for line in (RESULTS / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells and cells[0] != "file" and not set(cells[0]) <= set("-: "):
            rows.append(cells)
    return rows


def files_of(row: list[str]) -> list[str]:
    return re.findall(r"`([^`]+\.json)`", row[0])


def test_every_result_file_has_one_row_and_every_row_a_file():
    named = [name for row in index_rows() for name in files_of(row)]
    on_disk = sorted(path.name for path in RESULTS.glob("*.json"))
    assert sorted(set(named)) == sorted(named), "a file is named in more than one row"
    assert sorted(set(on_disk) - set(named)) == [], "JSON files under benchmarks/results missing from README.md"
    assert sorted(set(named) - set(on_disk)) == [], "README.md rows naming files that do not exist"


def test_every_row_names_an_existing_script_that_wrote_its_files():
    for row in index_rows():
        assert files_of(row), f"a row without a file: {row}"
        scripts = SCRIPT.findall(row[1])
        assert scripts, f"{files_of(row)}: no script named in the row"
        assert all((ROOT / script).is_file() for script in scripts), f"{scripts}: no such script"
        for name in files_of(row):
            recorded = json.loads((RESULTS / name).read_text())
            command = recorded.get("command", "") if isinstance(recorded, dict) else ""
            wrote = SCRIPT.findall(command)
            assert not wrote or wrote[0] in scripts, f"{name} was written by {wrote[0]}, its row names {scripts}"
