"""The test database as a DATABASE_URL, for the child processes tests and benchmarks start."""

from urllib.parse import quote


def database_url(settings_dict: dict) -> str:
    """Django's connection settings as a DATABASE_URL a subprocess can use (a socket dir as the host,
    percent-encoded; no host means localhost, no port 5432)."""
    host = quote(str(settings_dict["HOST"] or "localhost"), safe="")
    password = f":{quote(settings_dict['PASSWORD'], safe='')}" if settings_dict.get("PASSWORD") else ""
    port = settings_dict.get("PORT") or 5432
    return (
        f"postgres://{quote(settings_dict['USER'], safe='')}{password}@{host}:{port}/{settings_dict['NAME']}"
    )
