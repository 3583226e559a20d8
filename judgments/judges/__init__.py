"""LLM judges: a language model grades (query, document) pairs like a rater.

Pure modules (no Django; tests/test_layout.py checks): prompt (the editable template and the chat
messages it renders), answers (turning whatever the model said into a grade or "can't judge"), client
(one Chat Completions call: retries, Retry-After, budget, the API key), runner (many pairs at once:
bounded concurrency, cancel, per-pair callbacks).

On the database: services (setting a judge up, choosing pairs, storing answers as ordinary judgments,
resumably), tasks (a judging run in the background worker), forms, views and urls (the admins' judges
pages). `manage.py judge` drives services; the trust page lives in scoring.trust (it ranks
configurations, and judgments never imports scoring).
"""
