"""The regression gate: a candidate configuration's current run against a baseline's, measure by measure,
with the paired tests of the compare page (`manage.py gate`, `POST /api/pools/<name>/gate/`).

measures (names, pure), service (reading the stored scores, the decision), reports (text, JSON, JUnit
XML, Markdown; pure).
"""
