"""`maistro eval`: a scorecard of memory quality, run through the real graph against the user's own model.

Public modules, imported where they are used: `cases` (the suite: one JSON file per case under
`graph/eval/cases/`, and its loader), `runner` (plays cases through a graph, each in a throwaway data
directory, and records replies, costs and the memory left), `scoring` (compares a run with its case),
`report` (terminal tables, JSON, the self-contained HTML page, comparisons) and `player` (scripted players: an
oracle that plays every case right from the case's own data, and flawed ones, which check that the scores
are earned). `session` runs one `maistro eval`, `cli` is its command line, `endpoint` checks the model endpoint
up front, `dates` reads the cases' relative dates and `tutorial_graph` is the tutorial's graph as written.
"""

__all__ = ["cases", "player", "report", "runner", "scoring"]
