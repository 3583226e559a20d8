"""LLM judges: a language model grades (query, document) pairs like a rater. No Django imports here.

Modules: prompt (the editable template and the chat messages it renders), answers (turning whatever the
model said into a grade or "can't judge"), client (one Chat Completions call: retries, Retry-After,
budget, the API key), runner (many pairs at once: bounded concurrency, cancel, per-pair callbacks).
"""
