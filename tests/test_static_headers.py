"""Static files (served by WhiteNoise, which answers before the view middleware) carry the same
Content-Security-Policy and X-Frame-Options as pages: an SVG or HTML file under /static/ is a document."""

from config.csp import DEFAULT_POLICY, HEADER


def test_static_files_carry_the_policy_and_frame_options(client):
    for url in ("/static/css/app.css", "/static/favicon.svg", "/static/js/grade.js"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response[HEADER] == DEFAULT_POLICY, url
        assert response["X-Frame-Options"] == "DENY", url
        assert response["X-Content-Type-Options"] == "nosniff", url
