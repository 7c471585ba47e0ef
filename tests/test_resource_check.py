"""`robustft resources check`: the MPNet backbone is listed as optional, with the command that gets it, and its
absence alone does not make the check fail; once fetched it is found."""

import json

from robustft.cli import main
from robustft.models.resource_check import check_all


def mpnet_status():
    (status,) = [s for s in check_all() if s.name.startswith("model mpnet")]
    return status


def test_mpnet_absent_is_optional_and_names_the_fetch_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ROBUSTFT_CACHE", str(tmp_path / "empty-cache"))
    statuses = check_all()
    (status,) = [s for s in statuses if s.name.startswith("model mpnet")]
    assert (status.found, status.optional, status.missing) == (False, True, False)
    assert "robustft fetch mpnet" in status.where
    code = main(["resources", "check"])
    line = next(line for line in capsys.readouterr().out.splitlines() if "model mpnet" in line)
    assert line.startswith("optional") and "robustft fetch mpnet" in line
    assert code == (1 if any(s.missing for s in statuses) else 0)  # mpnet's absence alone never fails the check


def test_mpnet_in_the_cache_is_found(tmp_path, monkeypatch):
    folder = tmp_path / "models" / "all-mpnet-base-v2"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "mpnet"}))
    monkeypatch.setenv("ROBUSTFT_CACHE", str(tmp_path))
    status = mpnet_status()
    assert status.found and status.where == str(folder)
