"""studies.im_screening: the pick rule (converged, damps more than its matched EX, one per
architecture) and resuming from a results file cut by a kill."""

import json

from studies.im_screening.records import append, damping_vs_ex, ranked, read
from studies.im_screening.settings import key


def record(setting, swap, noise, end=None, diverged=0):
    out = {
        "setting": setting,
        "swap": {"mean": [0.2, swap]},
        "noise": {"mean": [0.4, noise]},
        "cost_x_plain": 5.0,
        "residual": {} if end is None else {"layer 1": {"start": 0.5, "end": end, "diverged": diverged}},
    }
    out["key"] = key(setting)
    return out


def im(**kw):
    return {"arch": "im", "form": "increment", "dt": 1.0, "layers": "1", "solver": "anderson", "K": 10, **kw}


def test_picks_only_solved_settings_that_damp_more_than_their_own_explicit_control():
    ex1 = {"arch": "ex", "form": "increment", "dt": 1.0, "layers": "1"}
    ex_half = {**ex1, "dt": 0.5}
    rows = [
        record({"arch": "plain"}, 0.30, 0.50),
        record(ex1, 0.30, 0.50),
        record(ex_half, 0.20, 0.40),
        record(im(K=10), 0.27, 0.48, end=0.02),  # solved, damps more than EX dt 1: picked
        record(im(K=20), 0.28, 0.49, end=0.003),  # same architecture, damps less than K 10: not a second pick
        record(im(solver="gd", K=5), 0.20, 0.30, end=0.5),  # damps most, but the step is not solved
        record(im(K=10, dt=0.5), 0.21, 0.39, end=0.0),  # solved, but EX dt 0.5 damps the swap more
        record(im(K=5, dt=0.5), 0.19, 0.38, end=0.01, diverged=1),  # a fallen-back solve does not count
    ]
    done = {r["key"]: r for r in rows}
    picked = ranked(done)
    assert [r["key"] for r in picked] == [key(im(K=10))]
    assert damping_vs_ex(picked[0], done) == (0.27 / 0.30 + 0.48 / 0.50) / 2


def test_a_line_cut_by_a_kill_is_measured_again(tmp_path):
    path = tmp_path / "results.jsonl"
    append(path, record({"arch": "plain"}, 0.3, 0.5))
    with path.open("a") as f:
        f.write(json.dumps(record(im(), 0.2, 0.4, end=0.01))[:40])  # no newline: the process died mid-write
    assert [r["key"] for r in read(path)] == ["plain"]
    append(path, record(im(), 0.2, 0.4, end=0.01))  # the restart's record keeps a line of its own
    assert [r["key"] for r in read(path)] == ["plain", key(im())]
