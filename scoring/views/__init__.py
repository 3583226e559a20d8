"""Scoring's pages, one module per page family; the logic they call lives in scoring's other modules.

common       the pool whose scores the user may see, ?c= configurations, options, flavour links
leaderboard  the leaderboard;  recompute: its Recompute button (admins)
compare      A vs B, the matrix, one query side by side, queueing a configuration's unjudged top k
history      a configuration across its runs
trust        a model judge against the humans (scoring.trust)
live         try a query against the configuration's engine (scoring.live)
evidence     prediction-powered estimates with the human sample, assessors' leaderboards
measure_pages  a pool's own measure set: its settings, and the leaderboard, comparison and history
             that show it (the leaderboard, compare and history pages hand over to these)
tuning       tune a query's template without saving (scoring.live asks the engine)
downloads    every CSV and score file the pages link to
"""
