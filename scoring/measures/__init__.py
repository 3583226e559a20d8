"""Measures named in ir_measures syntax: `names` parses and prints them (no numpy), `compute` scores many
rankings at once (numpy). Neither imports Django."""
