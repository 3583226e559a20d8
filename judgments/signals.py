"""Signals the judgments app sends and the scoring app listens to (scoring imports judgments, never the reverse).

grades_changed(sender, pool, pair_ids): after the transaction that changed judgments or final grades commits.
run_submitted(sender, run): after the transaction that stored a run commits.
"""

from django.dispatch import Signal

grades_changed = Signal()
run_submitted = Signal()
