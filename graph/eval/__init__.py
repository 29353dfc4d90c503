"""`maistro eval`: a scorecard of memory quality, run through the real graph against the user's own model.

A case (`graph.eval.cases`, one JSON file each under `graph/eval/cases/`) is a scripted conversation and the
memories it should leave; the runner (`graph.eval.runner`) plays every case in a throwaway data directory,
scoring (`graph.eval.scoring`) compares what the store holds and what the replies say with the case, and the
report (`graph.eval.report`) prints, saves and compares scorecards. The scripted players of
`graph.eval.player` (an oracle that plays every case right, and flawed ones) check that the scores are earned.
"""
