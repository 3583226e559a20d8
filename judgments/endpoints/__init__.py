"""What a stored search endpoint means, in pure Python (no Django): the core's own description of the
`SearchEndpoint` model's fields, so the model needs no wing.

`engines` defines an endpoint (kinds, defaults, authentication, redaction of secrets: `EndpointSpec`),
`templates` renders its request templates, `answers` reads an engine's answer (hits or its error).
The capture wing (judgments/capture) sends the queries; scoring's try-a-query page sends one.
"""
