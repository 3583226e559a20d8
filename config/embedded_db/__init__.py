"""A PostgreSQL backend that starts the checkout's embedded server on first connection."""
