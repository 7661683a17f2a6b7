"""Renderers: each command's results as text (table, markdown, csv, json, chart).

Libraries return data; one module here per command turns it into text, and the
CLI only picks one. ``layout`` holds what they share: the terminal width, tables
that fit it, and the verdict fields every JSON output carries.
"""
