from tests.judgments.judges.chat_server import _http_server, chat_server  # noqa: F401 (fixtures)
